import redis from '@fastify/redis'
import { Redis } from 'ioredis'
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
  /** A command not answered in this time fails: the request gets a quick 503, never a hang. */
  redisTimeoutMs: number
  ttlMs: number
  /** In-memory store only: conversations kept before the least recently used is dropped. */
  maxConversations: number
  /** In-memory store only: their total size (as the store estimates it) before the least recently used is dropped. */
  maxBytes: number
}

/** The conversation store as an app resource; a Redis connection is opened with the app and closed with it. */
async function conversationStore (fastify: FastifyInstance, options: ConversationStoreOptions): Promise<void> {
  if (options.redisUrl === undefined) {
    fastify.decorate('conversationStore', new MemoryConversationStore(options))
    return
  }
  let connected = false
  const client = new Redis(options.redisUrl, {
    lazyConnect: true,
    // Fail fast while Redis is away (the request gets a 503) instead of queueing commands without limit.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: options.redisTimeoutMs,
    connectTimeout: 5000,
    // At start-up a Redis that cannot be reached stops the service; once connected, reconnect for ever.
    retryStrategy: (attempt) => connected ? Math.min(attempt * 200, 2000) : null
  })
  // Without a listener ioredis prints each connection error itself; the message alone says enough (no URL, no password).
  let lastError: Error | undefined
  client.on('error', (error: Error) => {
    lastError = error
    if (connected) fastify.log.warn({ redisError: error.message }, 'Redis connection error')
  })
  try {
    await client.connect()
  } catch (error) {
    client.disconnect()
    // The host only: the URL may carry a password.
    const { host } = new URL(options.redisUrl)
    // ioredis rejects with "Connection is closed"; the socket's own error says why.
    throw new Error(`Redis at ${host} cannot be reached: ${(lastError ?? error as Error).message}`, { cause: error })
  }
  connected = true
  await fastify.register(redis, { client, closeClient: true })
  fastify.decorate('conversationStore', new RedisConversationStore(fastify.redis, { ttlMs: options.ttlMs, keyPrefix: options.redisKeyPrefix }))
}

export default fp(conversationStore, { name: 'conversation-store', fastify: '5.x' })
