/**
 * Child process of chat.bench.ts: the least a chat endpoint can be in Fastify. The same TypeBox request schema,
 * validated as the service validates it (no type coercion), the same bearer check (@fastify/bearer-auth), a reply of
 * the same shape serialised through the same response schema; no understanding, dialogue, conversation store, request
 * log or other hooks. With BENCH_REQUEST_LOG=1, the service's request log as well (its request id, one line per
 * request with the same redaction, to a stream that drops it as the bench's service does): what that line costs.
 */
import { randomUUID } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import { Type } from '@sinclair/typebox'
import Fastify from 'fastify'
import requestId, { proxyTrust, redactCredentials, RequestLog, requestIdFrom } from '../plugins/request-log.ts'
import { ChatContext, ChatLink, ChatReply, ChatRequest } from '../schemas/chat.ts'
import { serveCommands } from '../test/support/processes.ts'

const LINK = 'https://shop.example.com/orders/A-10042/tracking'

const requestLog = process.env['BENCH_REQUEST_LOG'] === '1'
const app = Fastify({
  ajv: { customOptions: { coerceTypes: false } },
  ...requestLog
    ? {
        logger: { level: 'info', formatters: { log: redactCredentials }, stream: { write () {} } },
        logController: new RequestLog(),
        genReqId: requestIdFrom(proxyTrust(false))
      }
    : {}
})
if (requestLog) await app.register(requestId)
for (const schema of [ChatContext, ChatLink, ChatRequest, ChatReply]) app.addSchema(schema)
await app.register(bearerAuth, { keys: new Set([process.env['BENCH_API_KEY'] ?? '']) })
app.post('/v1/chat/send', { schema: { body: Type.Ref(ChatRequest), response: { 200: Type.Ref(ChatReply) } } }, async (request) => {
  const body = request.body as ChatRequest
  return {
    reply: `You can follow order A-10042 here: ${LINK}`,
    conversation_id: body.conversation_id ?? randomUUID(),
    timestamp: new Date().toISOString(),
    intent: 'track_order',
    confidence: 0.93,
    links: [{ label: 'Track your order', url: LINK }],
    handoff: false
  }
})
await app.listen({ host: '127.0.0.1', port: 0 })
serveCommands((app.server.address() as { port: number }).port, {}, () => app.close())
