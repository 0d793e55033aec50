import { LRUCache } from 'lru-cache'
import type { Conversation } from './dialogue/conversation.ts'
import { ConversationStoreUnavailable } from './errors.ts'

/**
 * Where conversations live between messages. Both implementations keep a conversation for `ttlMs` after its last
 * message and hand out copies: what a caller changes counts only once it is saved.
 */
export interface ConversationStore {
  load: (id: string) => Promise<Conversation | undefined>
  save: (conversation: Conversation) => Promise<void>
}

export interface MemoryStoreOptions {
  ttlMs: number
  /** Conversations kept; the least recently used goes first. */
  maxConversations: number
  /**
   * Their total size, measured as the length of each conversation's JSON (one byte a character for the Latin text
   * most conversations are): the least recently used go first when a new one would pass it.
   */
  maxBytes: number
  /** The clock TTLs are measured with (tests pass their own). */
  clock?: { now: () => number }
}

/** One process's conversations, in memory: the default, for a single replica. */
export class MemoryConversationStore implements ConversationStore {
  readonly #cache: LRUCache<string, string>

  constructor (options: MemoryStoreOptions) {
    this.#cache = new LRUCache({
      max: options.maxConversations,
      maxSize: options.maxBytes,
      sizeCalculation: (json) => json.length,
      ttl: options.ttlMs,
      ...(options.clock === undefined ? {} : { perf: options.clock, ttlResolution: 0 })
    })
  }

  async load (id: string): Promise<Conversation | undefined> {
    const json = this.#cache.get(id)
    return json === undefined ? undefined : JSON.parse(json) as Conversation
  }

  async save (conversation: Conversation): Promise<void> {
    this.#cache.set(conversation.id, JSON.stringify(conversation))
  }
}

/** The few commands of a Redis client the store uses (ioredis, as @fastify/redis provides it). */
export interface RedisCommands {
  get: (key: string) => Promise<string | null>
  set: (key: string, value: string, mode: 'PX', milliseconds: number) => Promise<unknown>
}

export interface RedisStoreOptions {
  ttlMs: number
  /** Prepended to every key, so that several services (or test runs) can share one Redis. */
  keyPrefix: string
}

/** Conversations in Redis: shared by every replica, kept across restarts, expired by Redis itself. */
export class RedisConversationStore implements ConversationStore {
  readonly #redis: RedisCommands
  readonly #options: RedisStoreOptions

  constructor (redis: RedisCommands, options: RedisStoreOptions) {
    this.#redis = redis
    this.#options = options
  }

  async load (id: string): Promise<Conversation | undefined> {
    const json = await unavailableOnError(this.#redis.get(this.#key(id)))
    return json === null ? undefined : JSON.parse(json) as Conversation
  }

  async save (conversation: Conversation): Promise<void> {
    await unavailableOnError(this.#redis.set(this.#key(conversation.id), JSON.stringify(conversation), 'PX', this.#options.ttlMs))
  }

  #key (id: string): string {
    return `${this.#options.keyPrefix}conversation:${id}`
  }
}

/** A Redis that cannot answer is the store being unavailable; the cause stays for the log. */
async function unavailableOnError<T> (command: Promise<T>): Promise<T> {
  try {
    return await command
  } catch (error) {
    throw new ConversationStoreUnavailable('Redis did not answer', { cause: error })
  }
}
