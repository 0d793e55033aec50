import { setTimeout as sleep } from 'node:timers/promises'
import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { Conversation, Turn } from './dialogue/conversation.ts'
import { ConversationBusy, ConversationNotFound, ConversationStoreUnavailable } from './errors.ts'
import { SerialByKey } from './serial-by-key.ts'

/**
 * Where conversations live between messages. Both implementations keep a conversation for `ttlMs` after its last
 * message and hand out copies: what a caller changes counts only once it is saved. They use of a conversation only
 * its `id`, `ownerKey` and `turns` (and the in-memory store's size estimate its text); the rest is stored as it is.
 */
export interface ConversationStore {
  /**
   * The conversation with its last `recentTurns` turns, or with every turn kept when not given: a reply needs only
   * the last ones, the transcript all of them.
   */
  load: (id: string, recentTurns?: number) => Promise<Conversation | undefined>
  /**
   * Applies one change (a message) to a stored conversation, one change at a time per conversation across every
   * process sharing the store, so that none is lost: `change` gets the conversation with its last `recentTurns`
   * turns, changes it (new turns go at the end, and are added to the history, which keeps its last `historyLimit`)
   * and returns what the caller needs. When another change was stored between the read and the write, `change` runs
   * again on the conversation as it now is. Throws ConversationNotFound when there is no such conversation,
   * ConversationBusy when other changes kept coming first, and whatever `change` throws (nothing is stored then).
   */
  update: <T>(id: string, change: (conversation: Conversation) => T | Promise<T>, options: UpdateOptions) => Promise<T>
  /**
   * Stores the conversation as it is, whatever was stored: for a new one. Everything in it but its turns replaces
   * what was stored, and its last `newTurns` turns are added to the stored history (the others are as loaded, or
   * fewer), which keeps its last `historyLimit` turns.
   */
  save: (conversation: Conversation, turns: NewTurns) => Promise<void>
}

export interface UpdateOptions {
  /** How many of the last turns `change` needs to see. */
  recentTurns: number
  /** Turns kept per conversation, the most recent (CONVERSATION_HISTORY). */
  historyLimit: number
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
/** The dialogue's slots: a few short ids, bounded by their own limits (src/chat/dialogue/slots.ts). */
const SLOTS_OVERHEAD = 400

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
  if (conversation.slots !== undefined) bytes += SLOTS_OVERHEAD
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
  readonly #serial = new SerialByKey()

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

  async update<T> (id: string, change: (conversation: Conversation) => T | Promise<T>, { recentTurns, historyLimit }: UpdateOptions): Promise<T> {
    // One process holds the conversation: applying its changes in turn here is enough.
    return await this.#serial.run(id, async () => {
      const conversation = await this.load(id, recentTurns)
      if (conversation === undefined) throw new ConversationNotFound()
      const loadedTurns = conversation.turns.length
      const value = await change(conversation)
      this.#store(conversation, { newTurns: conversation.turns.length - loadedTurns, historyLimit })
      return value
    })
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
    // The stored history and the new turns, of which the last historyLimit are kept: copied once, nothing shifted.
    const kept = previous?.turns ?? []
    const added = lastOf(conversation.turns, newTurns)
    const first = Math.max(0, kept.length + added.length - historyLimit)
    const turns = first < kept.length ? kept.slice(first) : []
    for (let i = Math.max(0, first - kept.length); i < added.length; i++) {
      const turn = added[i]!
      turns.push(Object.isFrozen(turn) ? turn : Object.freeze({ ...turn }))
    }
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

/** The conversation's state, its last ARGV[1] turns (-1: all) and its version, read together. */
const LOAD = `
local count = tonumber(ARGV[1])
local turns = {}
if count < 0 then turns = redis.call('LRANGE', KEYS[2], 0, -1)
elseif count > 0 then turns = redis.call('LRANGE', KEYS[2], -count, -1) end
return {redis.call('GET', KEYS[1]), turns, redis.call('GET', KEYS[3]) or '0'}`

/**
 * Unless ARGV[5] is given and is no longer the conversation's version (another change was stored since it was
 * read: 0 is returned, nothing written): the conversation's state set, its new turns added (after dropping the
 * stored ones when ARGV[4] is 1), the list trimmed to the last ARGV[3] turns, the version counted up, and the three
 * keys given the TTL (ARGV[2] ms).
 */
const SAVE = `
if ARGV[5] ~= '' and (redis.call('GET', KEYS[3]) or '0') ~= ARGV[5] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if ARGV[4] == '1' then redis.call('DEL', KEYS[2]) end
if #ARGV > 5 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 6)) end
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('INCR', KEYS[3])
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1`

/** The store's two scripts, as ioredis defines them on the client (EVALSHA, the script sent again if Redis lost it). */
interface ConversationScripts {
  loadConversation: (stateKey: string, turnsKey: string, versionKey: string, count: number) => Promise<[string | null, string[], string]>
  saveConversation: (stateKey: string, turnsKey: string, versionKey: string, state: string, ttlMs: number, historyLimit: number, replace: 0 | 1, expectedVersion: string, ...turns: string[]) => Promise<number>
}

/**
 * Attempts at one change before ConversationBusy. Within a process the changes of a conversation already wait their
 * turn, so the attempts only race other processes: each round stores one change, and this many rounds see the
 * changes of as many replicas through.
 */
const UPDATE_ATTEMPTS = 8

/**
 * Conversations in Redis: shared by every replica, kept across restarts, expired by Redis itself. Three keys each:
 *
 * - `<prefix>conversation:<id>`: the conversation without its history (owner, user, facts, topic, times), as JSON,
 *   with `turns` left empty (a replica of an earlier version, which kept the history there, then reads a
 *   conversation without history rather than failing, during a rolling deploy);
 * - `<prefix>conversation:<id>:turns`: the history, a list of turns as JSON, oldest first, capped at the history
 *   limit;
 * - `<prefix>conversation:<id>:version`: how many times it was stored (absent: 0, as for a conversation an earlier
 *   version stored).
 *
 * A message reads the state, its last turns and the version, and writes the state and its own two turns (RPUSH,
 * LTRIM), never the whole history; each in one Lua script, so one round trip, atomic, with the keys' TTL set
 * together. The write is conditional on the version read (optimistic concurrency): when another replica stored a
 * message in between, the message is applied again to what it stored. Rather than a lock, because a message's work
 * is a few milliseconds of computation that can simply be redone, conflicts are rare, and nothing is left to clean up
 * or wait out when a replica dies mid-message.
 */
export class RedisConversationStore implements ConversationStore {
  readonly #redis: ConversationScripts
  readonly #options: RedisStoreOptions
  readonly #serial = new SerialByKey()

  /** Defines the store's two scripts on `redis` (`loadConversation`, `saveConversation`). */
  constructor (redis: Redis, options: RedisStoreOptions) {
    redis.defineCommand('loadConversation', { numberOfKeys: 3, lua: LOAD })
    redis.defineCommand('saveConversation', { numberOfKeys: 3, lua: SAVE })
    this.#redis = redis as unknown as ConversationScripts
    this.#options = options
  }

  async load (id: string, recentTurns?: number): Promise<Conversation | undefined> {
    return (await this.#read(id, recentTurns))?.conversation
  }

  async update<T> (id: string, change: (conversation: Conversation) => T | Promise<T>, { recentTurns, historyLimit }: UpdateOptions): Promise<T> {
    // The changes this process makes wait their turn here; only other processes' can come in between.
    return await this.#serial.run(id, async () => {
      for (let attempt = 1; ; attempt++) {
        const read = await this.#read(id, recentTurns)
        if (read === undefined) throw new ConversationNotFound()
        const { conversation, version } = read
        const loadedTurns = conversation.turns.length
        const value = await change(conversation)
        if (await this.#write(conversation, { newTurns: conversation.turns.length - loadedTurns, historyLimit }, version)) return value
        if (attempt === UPDATE_ATTEMPTS) throw new ConversationBusy(`Other changes to the conversation came first ${attempt} times`)
        // A random pause, doubling, so that replicas in step fall out of it.
        await sleep(Math.random() * 2 ** attempt)
      }
    })
  }

  async save (conversation: Conversation, turns: NewTurns): Promise<void> {
    await this.#write(conversation, turns)
  }

  /** The conversation and the version it was read at. */
  async #read (id: string, recentTurns?: number): Promise<{ conversation: Conversation, version: string } | undefined> {
    const keys = this.#keys(id)
    const [json, turns, version] = await unavailableOnError(this.#redis.loadConversation(...keys, recentTurns ?? -1))
    if (json === null) return undefined
    const conversation = JSON.parse(json) as Conversation
    if (turns.length === 0 && conversation.turns.length > 0) {
      // Stored whole by an earlier version, its history in the state: moved to the list.
      const history = conversation.turns.map((turn) => JSON.stringify(turn))
      await unavailableOnError(this.#redis.saveConversation(...keys, JSON.stringify({ ...conversation, turns: [] }), this.#options.ttlMs, history.length, 1, '', ...history))
      conversation.turns = recentTurns === undefined ? conversation.turns : lastOf(conversation.turns, recentTurns).slice()
      return { conversation, version: String(Number(version) + 1) }
    }
    conversation.turns = turns.map((turn) => JSON.parse(turn) as Turn)
    return { conversation, version }
  }

  /** Stores the conversation, unless `expectedVersion` is given and is no longer its version: then false. */
  async #write (conversation: Conversation, { newTurns, historyLimit }: NewTurns, expectedVersion = ''): Promise<boolean> {
    const added = lastOf(conversation.turns, newTurns).map((turn) => JSON.stringify(turn))
    const state = JSON.stringify({ ...conversation, turns: [] })
    return await unavailableOnError(this.#redis.saveConversation(...this.#keys(conversation.id), state, this.#options.ttlMs, historyLimit, 0, expectedVersion, ...added)) === 1
  }

  #keys (id: string): [state: string, turns: string, version: string] {
    const state = `${this.#options.keyPrefix}conversation:${id}`
    return [state, `${state}:turns`, `${state}:version`]
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
