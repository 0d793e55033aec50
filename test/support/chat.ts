import { ChatService } from '../../src/chat/chat-service.ts'
import { MemoryConversationStore } from '../../src/chat/conversation-store.ts'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import type { DomainPack } from '../../src/chat/domain-pack/schema.ts'
import type { IntentModel } from '../../src/chat/nlu/intent-model.ts'
import { trainIntentModel } from '../../src/chat/nlu/training.ts'
import { Understander } from '../../src/chat/nlu/understand.ts'

export const BASE_URL = 'https://shop.example.com'

let trained: { pack: DomainPack, model: IntentModel } | undefined

/** The default pack and its model, trained once per test file. */
export function defaultAssistant (): { pack: DomainPack, model: IntentModel, understander: Understander } {
  if (trained === undefined) {
    const pack = loadDomainPack()
    trained = { pack, model: trainIntentModel(pack) }
  }
  return { ...trained, understander: new Understander(trained.model, trained.pack.understanding) }
}

/** A chat service over the default pack and an in-memory store, with its own clock. */
export function chatService (now: () => Date = () => new Date()): ChatService {
  const { pack, model } = defaultAssistant()
  return new ChatService({
    pack,
    model,
    store: new MemoryConversationStore({ ttlMs: 86_400_000, maxConversations: 1000 }),
    baseUrl: BASE_URL,
    historyLimit: 50,
    now
  })
}
