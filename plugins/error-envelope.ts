import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { HEADERS_WITHOUT_HOOKS } from './security-headers.ts'
import { settleUnreadBody } from './unread-body.ts'
import {
  BadRequestError,
  BodyTooLargeError,
  HeadersTooLargeError,
  InternalError,
  InvalidJsonError,
  RequestTimeoutError,
  RouteNotFoundError,
  ServiceError,
  UnsupportedContentTypeError,
  ValidationError,
  type ErrorCode
} from '../src/errors.ts'

/**
 * The headers an error answer can carry, as the OpenAPI document describes them (plugins/openapi.ts documents, under
 * each error status of each operation, those of the codes with that status).
 */
const ERROR_HEADERS = {
  'WWW-Authenticate': { description: 'The scheme to authenticate with', schema: { type: 'string', enum: ['Bearer'] } },
  'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Limit': { description: 'Requests allowed per minute for this API key', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Requests left in the current minute', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until the current minute ends', schema: { type: 'integer', minimum: 0 } }
} as const
type ErrorHeader = keyof typeof ERROR_HEADERS

/** A header that the plugin refusing the request sets itself (the rate limit's, computed per key): only documented here. */
const SET_BY_ITS_PLUGIN = null

interface Wire {
  status: number
  /** Each header's value, unless the answer has it already; SET_BY_ITS_PLUGIN for one only documented. */
  headers?: Partial<Record<ErrorHeader, string | null>>
}

/**
 * The one table from the service's codes to HTTP: each code's status, and the headers that go with it. Every 503 says
 * when to come back (the OpenAPI document promises it): the ExifTool pool frees up within a second, Redis reconnects
 * within two, a process that is not ready needs longer. A 429 and the overload refusal carry the Retry-After their
 * plugins computed.
 */
const WIRE: Record<ErrorCode, Wire> = {
  NO_IMAGE: { status: 400 },
  INVALID_DATA_URI: { status: 400 },
  INVALID_BASE64: { status: 400 },
  NOT_AN_IMAGE_MEDIA_TYPE: { status: 400 },
  TOO_MANY_FILES: { status: 400 },
  TOO_MANY_FIELDS: { status: 400 },
  MALFORMED_MULTIPART: { status: 400 },
  INVALID_JSON: { status: 400 },
  FORBIDDEN_KEY: { status: 400 },
  VALIDATION_ERROR: { status: 400 },
  BAD_REQUEST: { status: 400 },
  UNAUTHORIZED: { status: 401, headers: { 'WWW-Authenticate': 'Bearer' } },
  ROUTE_NOT_FOUND: { status: 404 },
  CONVERSATION_NOT_FOUND: { status: 404 },
  CONVERSATION_BUSY: { status: 409, headers: { 'Retry-After': '1' } },
  REQUEST_TIMEOUT: { status: 408 },
  IMAGE_TOO_LARGE: { status: 413 },
  BODY_TOO_LARGE: { status: 413 },
  FIELD_TOO_LARGE: { status: 413 },
  UNSUPPORTED_CONTENT_TYPE: { status: 415 },
  UNSUPPORTED_IMAGE_FORMAT: { status: 415 },
  IMAGE_TOO_COMPLEX: { status: 415 },
  IMAGE_LACKS_METADATA: { status: 422 },
  RATE_LIMITED: {
    status: 429,
    headers: { 'Retry-After': SET_BY_ITS_PLUGIN, 'RateLimit-Limit': SET_BY_ITS_PLUGIN, 'RateLimit-Remaining': SET_BY_ITS_PLUGIN, 'RateLimit-Reset': SET_BY_ITS_PLUGIN }
  },
  HEADERS_TOO_LARGE: { status: 431 },
  INTERNAL_ERROR: { status: 500 },
  EXTRACTOR_BUSY: { status: 503, headers: { 'Retry-After': '1' } },
  EXTRACTOR_UNAVAILABLE: { status: 503, headers: { 'Retry-After': '1' } },
  EXTRACTION_TIMEOUT: { status: 503, headers: { 'Retry-After': '1' } },
  CONVERSATION_STORE_UNAVAILABLE: { status: 503, headers: { 'Retry-After': '2' } },
  OVERLOADED: { status: 503, headers: { 'Retry-After': '2' } },
  NOT_READY: { status: 503, headers: { 'Retry-After': '5' } }
}

/** The headers to send with each code: the table's, with the values the envelope sets. */
const SENT_HEADERS = Object.fromEntries(Object.entries(WIRE).map(([code, { headers = {} }]) =>
  [code, Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== SET_BY_ITS_PLUGIN)])) as Record<ErrorCode, Array<[string, string]>>

/** For the OpenAPI document: under each error status, the headers any code with that status carries. */
export function errorHeadersByStatus (): Record<string, Record<string, unknown>> {
  const byStatus: Record<string, Record<string, unknown>> = {}
  for (const { status, headers = {} } of Object.values(WIRE)) {
    for (const name of Object.keys(headers) as ErrorHeader[]) (byStatus[status] ??= {})[name] = ERROR_HEADERS[name]
  }
  return byStatus
}

/** Fastify's own failures, by its codes, as the service's: the client never sees a framework code or its echo. */
function fromFastify (error: FastifyError, request: FastifyRequest): ServiceError | undefined {
  if (error.validation !== undefined) return new ValidationError(error.message)
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidJsonError()
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new BodyTooLargeError(request.routeOptions.bodyLimit ?? 0)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new UnsupportedContentTypeError(acceptedContentTypes(request).join(', '))
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new BadRequestError('The body does not match its Content-Length')
  }
  return undefined
}

/**
 * The one error envelope, `{statusCode, code, error, message}`, for every error the service returns: our own errors
 * with their table's status and headers, Fastify's translated to the service's codes, anything unexpected as a
 * bare 500 whose details stay in the log.
 */
async function errorEnvelope (fastify: FastifyInstance): Promise<void> {
  fastify.setErrorHandler(function (error: FastifyError, request, reply) {
    const known = error instanceof ServiceError ? error : fromFastify(error, request)
    if (known === undefined && isClientFault(error)) {
      // A 4xx from a plugin whose code the table does not know yet: still the client's fault, said plainly, and
      // logged so that it can be given a code of its own.
      request.log.warn({ fastifyCode: error.code }, 'unmapped client error')
      sendError(reply, new BadRequestError('The request could not be processed'))
      return
    }
    if (known === undefined) {
      // A failure of ours: its stack is logged; the request's own line (plugins/request-log.ts) carries the code.
      request.log.error({ err: error }, 'request failed')
      sendError(reply, new InternalError())
      return
    }
    sendError(reply, known)
  })

  fastify.setNotFoundHandler(function (request, reply) {
    // originalUrl: the path as the client sent it, before the /api alias is rewritten; never its query string.
    sendError(reply, new RouteNotFoundError(request.method, request.originalUrl.split('?')[0]!.slice(0, 256)))
  })
}

function sendError (reply: FastifyReply, error: ServiceError): void {
  const { status } = WIRE[error.code]
  reply.request.logFields = { ...reply.request.logFields, code: error.code }
  for (const [name, value] of SENT_HEADERS[error.code]) {
    if (!reply.hasHeader(name)) reply.header(name, value)
  }
  settleUnreadBody(reply)
  reply.code(status).send(envelope(error))
}

function envelope (error: ServiceError): Record<string, unknown> {
  const { status } = WIRE[error.code]
  return { ...error.details, statusCode: status, code: error.code, error: STATUS_CODES[status] ?? 'Error', message: error.clientMessage }
}

/**
 * The router's own refusals (Fastify's `frameworkErrors`), before any route runs: a path that does not decode, or a
 * parameter over `maxParamLength`. Neither echoes the path back.
 */
export function answerFrameworkError (error: FastifyError, reply: FastifyReply, maxParamLength: number): void {
  sendError(reply, error.code === 'FST_ERR_MAX_PARAM_LENGTH'
    ? new ValidationError(`A path parameter is longer than ${maxParamLength} characters`)
    : new BadRequestError('The request path is not a valid URL path'))
}

/**
 * What a connection gets when Node's HTTP parser refuses its request before Fastify sees one (bad chunking, a
 * garbage request line, a NUL in a header, headers over the limit) or the request does not arrive in time: the same
 * envelope, written straight to the socket, which is then closed. Fastify's `clientErrorHandler`.
 */
export function answerClientError (error: NodeJS.ErrnoException, socket: Socket, timeouts: { headersTimeoutMs: number, requestTimeoutMs: number }): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const known = error.code === 'HPE_HEADER_OVERFLOW'
    ? new HeadersTooLargeError()
    : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      // Node names both timeouts alike: the message gives both limits.
      ? new RequestTimeoutError(seconds(timeouts.headersTimeoutMs), seconds(timeouts.requestTimeoutMs))
      : new BadRequestError('The request is not valid HTTP/1.1')
  const body = JSON.stringify(envelope(known))
  const { status } = WIRE[known.code]
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    Object.entries(HEADERS_WITHOUT_HOOKS).map(([name, value]) => `${name}: ${value}\r\n`).join('') +
    'Connection: close\r\n\r\n' + body)
}

/** Milliseconds as seconds for people: whole when whole, else to one decimal. */
function seconds (ms: number): string {
  return String(Math.round(ms / 100) / 10)
}

function isClientFault (error: FastifyError): boolean {
  return typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500
}

/** The media types a route's body schema declares (its OpenAPI request bodies), JSON when it declares none. */
function acceptedContentTypes (request: FastifyRequest): string[] {
  const body = request.routeOptions.schema?.body as { content?: Record<string, unknown> } | undefined
  return body?.content === undefined ? ['application/json'] : Object.keys(body.content)
}

export default fp(errorEnvelope, { name: 'error-envelope', fastify: '5.x' })
