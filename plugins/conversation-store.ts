import redis from '@fastify/redis'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MemoryConversationStore, RedisConversationStore, type ConversationStore } from '../src/chat/conversation-store.ts'

declare module 'fastify' {
  interface FastifyInstance {
    conversationStore: ConversationStore
  }
}

export interface ConversationStoreOptions {
  /** Set: conversations live in this Redis, shared by every replica. Unset: in this process's memory. */
  redisUrl?: string
  redisKeyPrefix: string
  ttlMs: number
  /** In-memory store only: conversations kept before the least recently used is dropped. */
  maxConversations: number
}

/** The conversation store as an app resource; a Redis connection is opened with the app and closed with it. */
async function conversationStore (fastify: FastifyInstance, options: ConversationStoreOptions): Promise<void> {
  if (options.redisUrl === undefined) {
    fastify.decorate('conversationStore', new MemoryConversationStore(options))
    return
  }
  await fastify.register(redis, {
    url: options.redisUrl,
    closeClient: true,
    // Fail fast while Redis is away (the request gets a 503) instead of queueing commands without limit.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 5000
  })
  fastify.decorate('conversationStore', new RedisConversationStore(fastify.redis, { ttlMs: options.ttlMs, keyPrefix: options.redisKeyPrefix }))
}

export default fp(conversationStore, { name: 'conversation-store', fastify: '5.x' })
