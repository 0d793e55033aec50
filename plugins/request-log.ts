import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { TrustProxy } from '../src/config.ts'

const CENSOR = '[redacted]'

/**
 * The Authorization header, wherever a log line carries headers: its own `headers`, or any of its members' (one level
 * down: @fastify/multipart logs the request's headers as `busboyOptions.headers` at trace level) — replaced in a
 * copy, never in the object logged. pino's `formatters.log` (the app's logger options): pino's own `redact`, with
 * the wildcard this needs, costs several times more per line.
 */
export function redactCredentials (line: Record<string, unknown>): Record<string, unknown> {
  let redacted = withoutAuthorization(line)
  for (const key in line) {
    const value = line[key]
    if (typeof value !== 'object' || value === null) continue
    const member = withoutAuthorization(value as Record<string, unknown>)
    if (member === value) continue
    if (redacted === line) redacted = { ...line }
    redacted[key] = member
  }
  return redacted
}

function withoutAuthorization (object: Record<string, unknown>): Record<string, unknown> {
  const headers = object['headers'] as Record<string, unknown> | null | undefined
  if (typeof headers !== 'object' || headers === null || headers['authorization'] === undefined) return object
  const copy = { ...object, headers: { ...headers, authorization: CENSOR } }
  // An error keeps what pino's error serializer reads and a spread leaves out: its type, message and stack.
  if (!(object instanceof Error)) return copy
  return Object.assign(Object.create(Object.getPrototypeOf(object) as object) as Record<string, unknown>, copy, { message: object.message, stack: object.stack })
}

/** An X-Request-Id worth keeping: short, and nothing that could break a log line or a header. */
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/** Whether the proxy at `address`, `hop` hops from the service (0: the peer), is believed (TRUST_PROXY). */
export type ProxyTrust = (address: string, hop: number) => boolean

/**
 * TRUST_PROXY as one function: the same for the client address Fastify logs (its `trustProxy`) and for the request
 * id below. Hops count from the service: with `1`, the peer (the gateway) is believed, and no one before it.
 */
export function proxyTrust (trustProxy: TrustProxy): ProxyTrust {
  if (typeof trustProxy === 'boolean') return () => trustProxy
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy
  return proxyAddr.compile(trustProxy)
}

/**
 * The request id (Fastify's `genReqId`): the X-Request-Id of a trusted proxy (the gateway) when it sends a sane one,
 * else a new UUID; anyone else's would let a client write what they like into the service's logs as the id of their
 * request (the request line gives it apart, as `clientRequestId`). Either way it is echoed in the response (below)
 * and stands in every log line of the request (`requestId`).
 */
export function requestIdFrom (trusts: ProxyTrust): (request: IncomingMessage) => string {
  return (request) => {
    const header = request.headers['x-request-id']
    const peer = request.socket.remoteAddress
    return typeof header === 'string' && peer !== undefined && trusts(peer, 0) && REQUEST_ID.test(header) ? header : randomUUID()
  }
}

/**
 * One log line per request, when it has been answered, instead of Fastify's "incoming" and "completed" pair: its
 * id, method, route, path (never the query string, which may carry a key), status, duration, client address, the
 * client's own X-Request-Id when it was not taken as the id, and what the route added with `request.logFields` (the chat's conversation id and intent, an error's code). The
 * message text and the Authorization header are never in it. Fields go on the one line rather than on a child
 * logger: a pino child per request costs more than the line itself.
 */
export class RequestLog extends LogController {
  constructor () {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // A request whose client left was logged when it left (below), once.
    if (request.clientGone) return
    const line = requestLine(request, reply.statusCode, reply.elapsedTime)
    if (error === null || error === undefined) request.log.info(line, 'request')
    else request.log.error({ ...line, err: error }, 'request')
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The connection closed before the answer was written: nobody will read it. */
    clientGone: boolean
    /** What the route adds to the request's log line; never the customer's words. */
    logFields: Record<string, unknown> | null
  }
}

/** Nginx's status for a client that closed the request before it was answered; never sent, only logged. */
const CLIENT_CLOSED_REQUEST = 499

function requestLine (request: FastifyRequest, status: number, elapsedMs: number): Record<string, unknown> {
  const given = request.headers['x-request-id']
  return {
    method: request.method,
    route: request.routeOptions.url ?? null,
    path: request.originalUrl.split('?')[0],
    status,
    ms: Math.round(elapsedMs * 10) / 10,
    ip: request.ip,
    // An id the client sent and the service did not take (no trusted proxy), for finding their request; if sane.
    ...(typeof given === 'string' && given !== request.id && REQUEST_ID.test(given) ? { clientRequestId: given } : {}),
    ...request.logFields
  }
}

/**
 * Echoes the request id to the client, errors included; and logs the one line of a request whose client leaves
 * before its answer (status 499), which Fastify never reports: its answer, if one comes, goes into a closed socket.
 */
async function requestId (fastify: FastifyInstance): Promise<void> {
  fastify.decorateRequest('clientGone', false)
  fastify.decorateRequest('logFields', null)
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    reply.raw.once('close', () => {
      // An answer already handed over (whether or not it reached the client) is logged by requestCompleted.
      if (reply.raw.writableEnded) return
      request.clientGone = true
      request.log.info(requestLine(request, CLIENT_CLOSED_REQUEST, reply.elapsedTime), 'request')
    })
    done()
  })
}

export default fp(requestId, { name: 'request-id', fastify: '5.x' })
