import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { Conversation, Turn } from './dialogue/conversation.ts'
import { ConversationStoreUnavailable } from './errors.ts'

/**
 * Where conversations live between messages. Both implementations keep a conversation for `ttlMs` after its last
 * message and hand out copies: what a caller changes counts only once it is saved.
 */
export interface ConversationStore {
  /**
   * The conversation with its last `recentTurns` turns, or with every turn kept when not given: a reply needs only
   * the last ones, the transcript all of them.
   */
  load: (id: string, recentTurns?: number) => Promise<Conversation | undefined>
  /**
   * Stores the conversation: everything in it but its turns replaces what was stored, and its last `newTurns` turns
   * are added to the stored history (the others are as loaded, or fewer), which keeps its last `historyLimit` turns.
   * A message writes its own turns, never the whole history again.
   */
  save: (conversation: Conversation, turns: NewTurns) => Promise<void>
}

export interface NewTurns {
  /** How many of the conversation's last turns are new since it was loaded (all of a new conversation's). */
  newTurns: number
  /** Turns kept per conversation, the most recent (CONVERSATION_HISTORY). */
  historyLimit: number
}

export interface MemoryStoreOptions {
  ttlMs: number
  /** Conversations kept, of all API keys together. */
  maxConversations: number
  /** Their total size, as `conversationBytes` estimates it, of all API keys together. */
  maxBytes: number
  /** The clock TTLs are measured with (tests pass their own). */
  clock?: { now: () => number }
}

/**
 * What a conversation takes in memory besides its text, measured on Node 24 (the heap a stored conversation holds,
 * less its characters): the conversation with its ids, times and the cache's entry; each turn (the object, its time
 * stamp, its slot in the history); each remembered fact.
 */
const CONVERSATION_OVERHEAD = 800
const TURN_OVERHEAD = 130
const FACT_OVERHEAD = 50

/**
 * What a conversation takes in memory, estimated from its text (a byte a character: most conversations are Latin
 * text, which V8 holds so) and a fixed cost per turn and fact: counted as it is saved, never by serialising it.
 */
export function conversationBytes (conversation: Conversation): number {
  let bytes = CONVERSATION_OVERHEAD + conversation.userId.length
  for (const name in conversation.facts) {
    const value = conversation.facts[name]
    bytes += FACT_OVERHEAD + name.length + (typeof value === 'string' ? value.length : 0)
  }
  for (const turn of conversation.turns) bytes += TURN_OVERHEAD + turn.text.length
  return bytes
}

/**
 * One process's conversations, in memory: the default, for a single replica. Conversations are kept as objects,
 * never serialised; the store keeps its own copy, whose turns are frozen (a turn never changes once said, so copies
 * share them), and hands out copies of it.
 *
 * Each API key (a conversation's `ownerKey`) has its own least-recently-used list. When the store is full (by count
 * or by size), the key holding the most loses its least recently used conversation, until the store fits: a key
 * holding no more than its share (the store divided by the keys that hold conversations) never loses one to
 * another key's traffic, so one key holder filling the store pushes out only their own.
 */
export class MemoryConversationStore implements ConversationStore {
  readonly #options: MemoryStoreOptions
  readonly #owners = new Map<string, LRUCache<string, Conversation>>()

  constructor (options: MemoryStoreOptions) {
    this.#options = options
  }

  async load (id: string, recentTurns?: number): Promise<Conversation | undefined> {
    let stored: Conversation | undefined
    for (const conversations of this.#owners.values()) {
      stored = conversations.get(id)
      if (stored !== undefined) break
    }
    if (stored === undefined) return undefined
    return copyOf(stored, recentTurns === undefined ? stored.turns.slice() : lastOf(stored.turns, recentTurns).slice())
  }

  async save (conversation: Conversation, turns: NewTurns): Promise<void> {
    this.#store(conversation, turns)
  }

  #store (conversation: Conversation, { newTurns, historyLimit }: NewTurns): void {
    let previous: Conversation | undefined
    for (const [owner, conversations] of this.#owners) {
      previous = conversations.peek(conversation.id)
      if (previous === undefined) continue
      if (owner !== conversation.ownerKey) conversations.delete(conversation.id)
      break
    }
    const turns = [...previous?.turns ?? []]
    for (const turn of lastOf(conversation.turns, newTurns)) turns.push(Object.isFrozen(turn) ? turn : Object.freeze({ ...turn }))
    turns.splice(0, turns.length - historyLimit)
    const stored = copyOf(conversation, turns)
    this.#conversationsOf(stored.ownerKey).set(stored.id, stored, { size: conversationBytes(stored) })
    this.#fit(stored.ownerKey)
  }

  #conversationsOf (owner: string): LRUCache<string, Conversation> {
    let conversations = this.#owners.get(owner)
    if (conversations === undefined) {
      // Bounded by the store's size (a conversation larger than it is not kept); the count is bounded in #fit.
      conversations = new LRUCache({
        maxSize: this.#options.maxBytes,
        ttl: this.#options.ttlMs,
        ...(this.#options.clock === undefined ? {} : { perf: this.#options.clock, ttlResolution: 0 })
      })
      this.#owners.set(owner, conversations)
    }
    return conversations
  }

  /** Drops conversations until the store fits: each time the least recently used of the key holding the most. */
  #fit (writer: string): void {
    let count = 0
    let bytes = 0
    for (const conversations of this.#owners.values()) {
      count += conversations.size
      bytes += conversations.calculatedSize
    }
    while (count > this.#options.maxConversations || bytes > this.#options.maxBytes) {
      const bySize = bytes > this.#options.maxBytes
      let heaviest: LRUCache<string, Conversation> | undefined
      let most = -1
      for (const [owner, conversations] of this.#owners) {
        const held = bySize ? conversations.calculatedSize : conversations.size
        // On a tie, the key that wrote loses its own.
        if (held > most || (held === most && owner === writer)) {
          heaviest = conversations
          most = held
        }
      }
      const before = heaviest!.calculatedSize
      heaviest!.pop()
      count--
      bytes -= before - heaviest!.calculatedSize
    }
    for (const [owner, conversations] of this.#owners) if (conversations.size === 0) this.#owners.delete(owner)
  }
}

/** A copy with these turns (an array of its own), sharing nothing a caller could change but the (frozen) turns. */
function copyOf (conversation: Conversation, turns: Turn[]): Conversation {
  const copy = { ...conversation, facts: { ...conversation.facts }, turns }
  if (conversation.topic !== undefined) copy.topic = { ...conversation.topic }
  return copy
}

function lastOf<T> (items: readonly T[], count: number): readonly T[] {
  return count <= 0 ? [] : count >= items.length ? items : items.slice(items.length - count)
}

export interface RedisStoreOptions {
  ttlMs: number
  /** Prepended to every key, so that several services (or test runs) can share one Redis. */
  keyPrefix: string
}

/** The conversation's state and its last ARGV[1] turns (-1: all), read together. */
const LOAD = `
local count = tonumber(ARGV[1])
local turns = {}
if count < 0 then turns = redis.call('LRANGE', KEYS[2], 0, -1)
elseif count > 0 then turns = redis.call('LRANGE', KEYS[2], -count, -1) end
return {redis.call('GET', KEYS[1]), turns}`

/**
 * The conversation's state set, its new turns added (after dropping the stored ones when ARGV[4] is 1), the list
 * trimmed to the last ARGV[3] turns, and both keys given the TTL (ARGV[2] ms).
 */
const SAVE = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[4] == '1' then redis.call('DEL', KEYS[2]) end
if #ARGV > 4 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 5)) end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1`

/** The store's two scripts, as ioredis defines them on the client (EVALSHA, the script sent again if Redis lost it). */
interface ConversationScripts {
  loadConversation: (stateKey: string, turnsKey: string, count: number) => Promise<[string | null, string[]]>
  saveConversation: (stateKey: string, turnsKey: string, state: string, ttlMs: number, historyLimit: number, replace: 0 | 1, ...turns: string[]) => Promise<number>
}

/**
 * Conversations in Redis: shared by every replica, kept across restarts, expired by Redis itself. Two keys each:
 *
 * - `<prefix>conversation:<id>`: the conversation without its history (owner, user, facts, topic, times), as JSON,
 *   with `turns` left empty (a replica of the previous version, which kept the history there, then reads a
 *   conversation without history rather than failing, during a rolling deploy);
 * - `<prefix>conversation:<id>:turns`: the history, a list of turns as JSON, oldest first, capped at the history
 *   limit.
 *
 * A message reads the state and its last turns, and writes the state and its own two turns (RPUSH, LTRIM), never the
 * whole history; each in one Lua script, so one round trip, atomic, with both keys' TTL set together.
 */
export class RedisConversationStore implements ConversationStore {
  readonly #redis: ConversationScripts
  readonly #options: RedisStoreOptions

  /** Defines the store's two scripts on `redis` (`loadConversation`, `saveConversation`). */
  constructor (redis: Redis, options: RedisStoreOptions) {
    redis.defineCommand('loadConversation', { numberOfKeys: 2, lua: LOAD })
    redis.defineCommand('saveConversation', { numberOfKeys: 2, lua: SAVE })
    this.#redis = redis as unknown as ConversationScripts
    this.#options = options
  }

  async load (id: string, recentTurns?: number): Promise<Conversation | undefined> {
    const key = this.#key(id)
    const [json, turns] = await unavailableOnError(this.#redis.loadConversation(key, `${key}:turns`, recentTurns ?? -1))
    if (json === null) return undefined
    const conversation = JSON.parse(json) as Conversation
    if (turns.length === 0 && conversation.turns.length > 0) {
      // Stored whole by the previous version, its history in the state: moved to the list.
      const history = conversation.turns.map((turn) => JSON.stringify(turn))
      await unavailableOnError(this.#redis.saveConversation(key, `${key}:turns`, JSON.stringify({ ...conversation, turns: [] }), this.#options.ttlMs, history.length, 1, ...history))
      conversation.turns = recentTurns === undefined ? conversation.turns : lastOf(conversation.turns, recentTurns).slice()
    } else {
      conversation.turns = turns.map((turn) => JSON.parse(turn) as Turn)
    }
    return conversation
  }

  async save (conversation: Conversation, { newTurns, historyLimit }: NewTurns): Promise<void> {
    const key = this.#key(conversation.id)
    const added = lastOf(conversation.turns, newTurns).map((turn) => JSON.stringify(turn))
    const state = JSON.stringify({ ...conversation, turns: [] })
    await unavailableOnError(this.#redis.saveConversation(key, `${key}:turns`, state, this.#options.ttlMs, historyLimit, 0, ...added))
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
