import { Type, type Static } from '@sinclair/typebox'

/** The one error envelope: Fastify's own shape, with a stable machine-readable `code`. */
export const ErrorResponse = Type.Object({
  statusCode: Type.Integer({ minimum: 400, maximum: 599, description: 'The HTTP status code', examples: [400] }),
  code: Type.String({ description: 'Stable, machine-readable error code', examples: ['NO_IMAGE'] }),
  error: Type.String({ description: 'The HTTP status text', examples: ['Bad Request'] }),
  message: Type.String({ description: 'What went wrong, for people', examples: ['No image provided'] })
}, { $id: 'ErrorResponse', title: 'ErrorResponse', description: 'Every error the service returns has this shape' })
export type ErrorResponse = Static<typeof ErrorResponse>

export const ErrorRef = Type.Ref(ErrorResponse)

/** The error responses every authenticated operation can give, for its route schema. */
export function errorResponses<const Status extends number> (...statuses: Status[]): Record<Status, typeof ErrorRef> {
  return Object.fromEntries(statuses.map((status) => [status, ErrorRef])) as Record<Status, typeof ErrorRef>
}
