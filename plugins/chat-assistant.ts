import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ChatService } from '../src/chat/chat-service.ts'
import { loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { trainIntentModel } from '../src/chat/nlu/training.ts'

declare module 'fastify' {
  interface FastifyInstance {
    chatService: ChatService
  }
}

export interface ChatAssistantOptions {
  /** The domain pack (a directory or one file); the one in domain/ when unset. */
  domainPack?: string
  /** SUPPORT_BASE_URL: the `{base}` of the reply links. */
  supportBaseUrl: string
  historyLimit: number
}

/**
 * The support assistant as an app resource: the domain pack loaded and checked, the intent model trained once, and
 * the chat service over the app's conversation store. An invalid pack fails start-up (a DomainPackError).
 */
async function chatAssistant (fastify: FastifyInstance, options: ChatAssistantOptions): Promise<void> {
  const pack = loadDomainPack(options.domainPack)
  const model = trainIntentModel(pack)
  fastify.decorate('chatService', new ChatService({
    pack,
    model,
    store: fastify.conversationStore,
    baseUrl: options.supportBaseUrl,
    historyLimit: options.historyLimit
  }))
}

export default fp(chatAssistant, { name: 'chat-assistant', fastify: '5.x', dependencies: ['conversation-store'] })
