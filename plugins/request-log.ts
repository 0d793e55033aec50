import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/** An X-Request-Id worth keeping: short, and nothing that could break a log line or a header. */
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

/**
 * The request id (Fastify's `genReqId`): the gateway's X-Request-Id when it sends a sane one, else a new UUID. Either
 * way it is echoed in the response (below) and stands in every log line of the request (`requestId`).
 */
export function requestIdOf (request: IncomingMessage): string {
  const header = request.headers['x-request-id']
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID()
}

/**
 * One log line per request, when it has been answered, instead of Fastify's "incoming" and "completed" pair: its
 * id, method, route, path (never the query string, which may carry a key), status, duration, client address, and
 * what the route bound to the request's logger (`request.log = request.log.child(…)`: the chat's conversation id and
 * intent, an error's code). The message text and the Authorization header are never in it.
 */
export class RequestLog extends LogController {
  constructor () {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest (): void {}

  override requestCompleted (error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      path: request.originalUrl.split('?')[0],
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
      ip: request.ip
    }
    if (error === null || error === undefined) request.log.info(line, 'request')
    else request.log.error({ ...line, err: error }, 'request')
  }
}

/** Echoes the request id to the client, errors included. */
async function requestId (fastify: FastifyInstance): Promise<void> {
  fastify.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })
}

export default fp(requestId, { name: 'request-id', fastify: '5.x' })
