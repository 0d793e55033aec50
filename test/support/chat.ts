import { ChatService } from '../../src/chat/chat-service.ts'
import { MemoryConversationStore } from '../../src/chat/conversation-store.ts'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import type { DomainPack } from '../../src/chat/domain-pack/schema.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../../src/chat/nlu/model-cache.ts'
import type { TrainedUnderstanding } from '../../src/chat/nlu/training.ts'
import { Understander } from '../../src/chat/nlu/understand.ts'

export const BASE_URL = 'https://shop.example.com'

let assistant: { pack: DomainPack, trained: TrainedUnderstanding } | undefined

/** The default pack and its model, from the model cache the app uses too (trained by whoever needs it first). */
export function defaultAssistant (): { pack: DomainPack, trained: TrainedUnderstanding, understander: Understander } {
  if (assistant === undefined) {
    const pack = loadDomainPack()
    assistant = { pack, trained: trainedForPack(pack, DEFAULT_MODEL_CACHE).trained }
  }
  return { ...assistant, understander: new Understander(assistant.trained, assistant.pack.understanding) }
}

/** A chat service over the default pack and an in-memory store, with its own clock. */
export function chatService (now: () => Date = () => new Date()): ChatService {
  const { pack, trained } = defaultAssistant()
  return new ChatService({
    pack,
    trained,
    store: new MemoryConversationStore({ ttlMs: 86_400_000, maxConversations: 1000, maxBytes: 16 * 1024 * 1024 }),
    baseUrl: BASE_URL,
    historyLimit: 50,
    now
  })
}
