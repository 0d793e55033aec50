import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ChatService } from '../src/chat/chat-service.ts'
import type { FactLimits } from '../src/chat/conversation-facts.ts'
import { loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { trainedForPack } from '../src/chat/nlu/model-cache.ts'

declare module 'fastify' {
  interface FastifyInstance {
    chatService: ChatService
  }
}

export interface ChatAssistantOptions {
  /** The domain pack (a directory or one file); the one in domain/ when unset. */
  domainPack?: string
  /** Where trained models are cached; unset: trained at every start. */
  modelCacheDir?: string
  /** SUPPORT_BASE_URL: the `{base}` of the reply links. */
  supportBaseUrl: string
  historyLimit: number
  /** What a conversation remembers of request contexts and messages, at most. */
  factLimits: FactLimits
}

/**
 * The support assistant as an app resource: the domain pack loaded and checked, the intent model trained once (or
 * read from the model cache), and the chat service over the app's conversation store. An invalid pack fails start-up
 * (a DomainPackError).
 */
async function chatAssistant (fastify: FastifyInstance, options: ChatAssistantOptions): Promise<void> {
  const pack = loadDomainPack(options.domainPack)
  const started = performance.now()
  const { trained, source, cacheError } = trainedForPack(pack, options.modelCacheDir, ({ lastTrainingMs }) => {
    fastify.log.info({ lastTrainingMs }, trainingNotice(options.modelCacheDir, lastTrainingMs))
  })
  fastify.log.info({ source, ms: Math.round(performance.now() - started) }, source === 'cache' ? 'chat model read from the cache' : 'chat model trained')
  if (cacheError !== undefined) fastify.log.warn({ err: cacheError }, 'the trained chat model could not be cached; it is trained again at every start')
  fastify.decorate('chatService', new ChatService({
    pack,
    trained,
    store: fastify.conversationStore,
    baseUrl: options.supportBaseUrl,
    historyLimit: options.historyLimit,
    factLimits: options.factLimits
  }))
}

/** What a start that must train says first: it is slow for a reason, and for about how long. */
function trainingNotice (modelCacheDir: string | undefined, lastTrainingMs: number | undefined): string {
  const why = modelCacheDir === undefined ? 'MODEL_CACHE_DIR is empty, so no model is cached' : 'no trained model for this domain pack in the cache'
  const expect = lastTrainingMs === undefined ? 'usually 10–30 s' : `about ${Math.max(1, Math.round(lastTrainingMs / 1000))} s, as the last training here took`
  const ahead = modelCacheDir === undefined ? '' : '; `npm run train` trains ahead of a start'
  return `training the chat model (${why}): expect ${expect}${ahead}`
}

export default fp(chatAssistant, { name: 'chat-assistant', fastify: '5.x', dependencies: ['conversation-store'] })
