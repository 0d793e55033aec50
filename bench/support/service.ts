/**
 * Child process: the service as `npm start` builds it (`buildApp(loadConfig(env))`), from BENCH_SERVICE_ENV alone,
 * on 127.0.0.1. Request logging stays on, as in production; its lines go nowhere.
 */
import { setImmediate as turnOfTheLoop } from 'node:timers/promises'
import { buildApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { serveCommands } from './processes.ts'

const app = await buildApp(loadConfig(JSON.parse(process.env['BENCH_SERVICE_ENV'] ?? '{}') as Record<string, string>), {
  logStream: { write () {} }
})
await app.listen({ host: '127.0.0.1', port: 0 })
serveCommands((app.server.address() as { port: number }).port, {
  // Tells memory the service still holds from memory it has freed but not yet collected (with --expose-gc).
  gc: async () => { (globalThis as { gc?: () => void }).gc?.(); return process.memoryUsage() },
  // The chat's own work with no HTTP at all: ChatService.send on these messages in turn, one at a time, for `seconds`.
  // Each message starts a conversation, or with `continuing`, continues one of that many conversations in turn, each
  // first given 10–25 messages (unmeasured) as the HTTP side's are. Messages per second.
  chatAlone: async ({ messages, seconds, continuing = 0 }: { messages: string[], seconds: number, continuing?: number }) => {
    const send = async (message: string, userId: string, conversationId?: string): Promise<string> =>
      (await app.chatService.send({ owner: 'bench', userId, message, ...conversationId === undefined ? {} : { conversationId } })).conversationId
    const started: Array<{ id: string, userId: string }> = []
    for (let index = 0; index < continuing; index++) {
      const userId = `regular-${index}`
      let id: string | undefined
      for (let turn = 0; turn < 10 + (index % 16); turn++) id = await send(messages[(index + turn) % messages.length]!, userId, id)
      started.push({ id: id!, userId })
      await turnOfTheLoop()
    }
    const end = performance.now() + seconds * 1000
    let sent = 0
    const since = performance.now()
    while (performance.now() < end) {
      for (let index = 0; index < 100; index++, sent++) {
        const message = messages[sent % messages.length]!
        const conversation = started[sent % Math.max(1, continuing)]
        await (conversation === undefined ? send(message, `customer-${sent % 8}`) : send(message, conversation.userId, conversation.id))
      }
      // In memory, every send resolves without the event loop: without a turn of it now and then, the service's
      // under-pressure would see one stall of `seconds` and refuse the next side's first requests with 503s.
      await turnOfTheLoop()
    }
    return sent / ((performance.now() - since) / 1000)
  }
}, () => app.close())
