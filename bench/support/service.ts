/**
 * Child process: the service as `npm start` builds it (`buildApp(loadConfig(env))`), from BENCH_SERVICE_ENV alone,
 * on 127.0.0.1. Request logging stays on, as in production; its lines go nowhere.
 */
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
  // The chat's own work with no HTTP at all: ChatService.send on these messages in turn, one at a time, each starting
  // a conversation, for `seconds`. Messages per second.
  chatAlone: async ({ messages, seconds }: { messages: string[], seconds: number }) => {
    const end = performance.now() + seconds * 1000
    let sent = 0
    const started = performance.now()
    while (performance.now() < end) {
      for (let index = 0; index < 100; index++, sent++) {
        await app.chatService.send({ owner: 'bench', userId: `customer-${sent % 8}`, message: messages[sent % messages.length]! })
      }
    }
    return sent / ((performance.now() - started) / 1000)
  }
}, () => app.close())
