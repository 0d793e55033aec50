import { Type, type Static, type TRefUnsafe } from '@sinclair/typebox'

/** The one error envelope: Fastify's own shape, with a stable machine-readable `code`. */
export const ErrorResponse = Type.Object({
  statusCode: Type.Integer({ minimum: 400, maximum: 599, description: 'The HTTP status code', examples: [400] }),
  code: Type.String({ description: 'Stable, machine-readable error code', examples: ['NO_IMAGE'] }),
  error: Type.String({ description: 'The HTTP status text', examples: ['Bad Request'] }),
  message: Type.String({ description: 'What went wrong, for people', examples: ['No image provided'] })
}, { $id: 'ErrorResponse', title: 'ErrorResponse', description: 'Every error the service returns has this shape' })
export type ErrorResponse = Static<typeof ErrorResponse>

/** An error response of a route, described as it is meant there (the OpenAPI response's description). */
export function errorResponse (description: string): TRefUnsafe<typeof ErrorResponse> {
  return Type.Ref(ErrorResponse, { description })
}

/** The errors every authenticated operation can answer, meaning the same everywhere. */
export const commonErrors = {
  401: errorResponse('Unauthorized (UNAUTHORIZED): the API key is missing, malformed or unknown'),
  429: errorResponse('Too Many Requests (RATE_LIMITED): this API key sent more requests this minute than its limit; retry after the Retry-After delay'),
  500: errorResponse('Internal Server Error (INTERNAL_ERROR): a fault of the service; the details are in its log'),
  503: errorResponse('Service Unavailable: overloaded, at capacity, timed out, restarting or not ready (the code says which); retry after the Retry-After delay')
}

/** The readiness probe's only error. */
export const notReady = errorResponse('Service Unavailable (NOT_READY): the ExifTool pool, or Redis, does not answer; retry after the Retry-After delay')
