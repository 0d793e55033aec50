/**
 * Child process of chat.bench.ts: the service's chat with no HTTP at all. The app as `buildApp(loadConfig(env))`
 * builds it (the same domain pack, model and in-memory store as the service the bench measures), not listening;
 * `ChatService.send` called on the bench's messages in turn, one at a time, for `seconds`: the most any HTTP service
 * around this chat could serve on one core.
 */
import { setImmediate as turnOfTheLoop } from 'node:timers/promises'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { serveCommands } from '../test/support/processes.ts'

const app = await buildApp(loadConfig({ API_KEYS: 'bench-chat-alone', EXIFTOOL_PROCS: '1' }), { logStream: { write () {} } })
await app.ready()
serveCommands(0, {
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
      // In memory, every send resolves without the event loop: a turn of it now and then lets the command channel in.
      await turnOfTheLoop()
    }
    return sent / ((performance.now() - since) / 1000)
  }
}, () => app.close())
