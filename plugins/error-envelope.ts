import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  BodyTooLargeError,
  InternalError,
  InvalidJsonError,
  RouteNotFoundError,
  UnsupportedContentTypeError,
  ValidationError,
  type ErrorWithDetails,
  type ErrorWithHeaders
} from '../src/errors.ts'

type ServiceError = FastifyError & ErrorWithHeaders & ErrorWithDetails

/**
 * The one error envelope, `{statusCode, code, error, message}`, for every error the service returns: our own errors
 * as they are, Fastify's translated to the service's codes, anything unexpected as a bare 500 whose details stay in
 * the log.
 */
async function errorEnvelope (fastify: FastifyInstance): Promise<void> {
  fastify.setErrorHandler(function (error: ServiceError, request, reply) {
    const known = toServiceError(error, request)
    const statusCode = known.statusCode ?? 500
    // A failure of ours gets its stack logged; the request's own line (plugins/request-log.ts) carries the code.
    if (statusCode >= 500) request.log.error({ err: error }, 'request failed')
    sendError(reply, known)
  })

  fastify.setNotFoundHandler(function (request, reply) {
    // originalUrl: the path as the client sent it, before the /api alias is rewritten.
    sendError(reply, new RouteNotFoundError(request.method, request.originalUrl.split('?')[0]))
  })
}

/** Every 503 tells the client when to come back, as the OpenAPI document promises; this when its cause does not. */
const DEFAULT_RETRY_AFTER_SECONDS = '5'

function sendError (reply: FastifyReply, error: ServiceError): void {
  const statusCode = error.statusCode ?? 500
  reply.request.log = reply.request.log.child({ code: error.code })
  if (error.headers !== undefined) reply.headers(error.headers)
  if (statusCode === 503 && !reply.hasHeader('retry-after')) reply.header('retry-after', DEFAULT_RETRY_AFTER_SECONDS)
  reply.code(statusCode).send({
    ...error.details,
    statusCode,
    code: error.code,
    error: STATUS_CODES[statusCode] ?? 'Error',
    message: error.message
  })
}

function toServiceError (error: ServiceError, request: FastifyRequest): ServiceError {
  if (error.validation !== undefined) return new ValidationError(error.message)
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidJsonError()
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BodyTooLargeError(request.routeOptions.bodyLimit ?? 0)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedContentTypeError(acceptedContentTypes(request).join(', '))
  }
  return isClientFacing(error) ? error : new InternalError()
}

/**
 * A coded 4xx says what the client did wrong, a coded 503 that it should retry: both are meant to be read. Any
 * other failure is ours, and its text (paths, ExifTool output, stack) stays in the log.
 */
function isClientFacing (error: ServiceError): boolean {
  const status = error.statusCode
  if (typeof status !== 'number' || typeof error.code !== 'string') return false
  return (status >= 400 && status < 500) || status === 503
}

/** The media types a route's body schema declares (its OpenAPI request bodies), JSON when it declares none. */
function acceptedContentTypes (request: FastifyRequest): string[] {
  const body = request.routeOptions.schema?.body as { content?: Record<string, unknown> } | undefined
  return body?.content === undefined ? ['application/json'] : Object.keys(body.content)
}

export default fp(errorEnvelope, { name: 'error-envelope', fastify: '5.x' })
