import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import type { Conversation, Turn } from '../../src/chat/dialogue/conversation.ts'
import { conversationBytes, MemoryConversationStore, RedisConversationStore, type ConversationStore } from '../../src/chat/conversation-store.ts'
import { ConversationStoreUnavailable } from '../../src/chat/errors.ts'
import { until } from '../support/processes.ts'
import { REDIS_URL } from '../support/redis.ts'

// The same contract for both stores; the Redis one against the real Redis on this machine.
const prefix = `chat-metadata-api-test:${randomUUID()}:`
const redis = new Redis(REDIS_URL)

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

const HISTORY = { historyLimit: 50 }

function turn (text: string, role: Turn['role'] = 'customer'): Turn {
  return { role, text, intent: 'greeting', timestamp: '2026-11-21T10:00:00.000Z' }
}

function conversation (id = randomUUID()): Conversation {
  return {
    id,
    ownerKey: 'owner',
    userId: 'customer-1',
    createdAt: '2026-11-21T10:00:00.000Z',
    updatedAt: '2026-11-21T10:00:00.000Z',
    facts: { order_id: 'A-1', vip: true, points: 12 },
    topic: { intent: 'track_order', situation: 'late_delivery' },
    pendingIntent: 'track_order',
    misunderstoodInARow: 1,
    turns: [turn('hi')]
  }
}

function withNewTurns (newTurns: number): { newTurns: number, historyLimit: number } {
  return { newTurns, ...HISTORY }
}

/** Saved as new: every turn is new. */
async function saveNew (store: ConversationStore, saved: Conversation): Promise<void> {
  await store.save(saved, withNewTurns(saved.turns.length))
}

describe.each([
  { name: 'in-memory', make: (ttlMs: number): ConversationStore => new MemoryConversationStore({ ttlMs, maxConversations: 100, maxBytes: 1024 * 1024 }) },
  { name: 'Redis', make: (ttlMs: number): ConversationStore => new RedisConversationStore(redis, { ttlMs, keyPrefix: prefix }) }
])('$name conversation store', ({ make }) => {
  it('gives back what was saved', async () => {
    const store = make(60_000)
    const saved = conversation()
    await saveNew(store, saved)
    expect(await store.load(saved.id)).toEqual(saved)
  })

  it('knows nothing of an id never saved', async () => {
    expect(await make(60_000).load(randomUUID())).toBeUndefined()
  })

  it('hands out copies: a change counts only once saved', async () => {
    const store = make(60_000)
    const saved = conversation()
    await saveNew(store, saved)
    const loaded = (await store.load(saved.id))!
    loaded.facts['order_id'] = 'B-2'
    loaded.topic!.intent = 'cancel_order'
    loaded.turns.push(turn('not saved'))
    saved.turns.push({ role: 'assistant', text: 'hello', intent: 'greeting', timestamp: saved.createdAt })
    expect((await store.load(saved.id))?.facts['order_id']).toBe('A-1')
    expect((await store.load(saved.id))?.topic?.intent).toBe('track_order')
    expect((await store.load(saved.id))?.turns).toHaveLength(1)
    await store.save(loaded, withNewTurns(0))
    expect((await store.load(saved.id))?.facts['order_id']).toBe('B-2')
    expect((await store.load(saved.id))?.turns).toEqual([turn('hi')])
  })

  it('adds a message\'s turns to the history, which keeps its last historyLimit turns', async () => {
    const store = make(60_000)
    const saved = conversation()
    await saveNew(store, saved)
    for (const text of ['one', 'two', 'three']) {
      const loaded = (await store.load(saved.id, 2))!
      loaded.turns.push(turn(text), turn(`re: ${text}`, 'assistant'))
      loaded.misunderstoodInARow = 0
      await store.save(loaded, { newTurns: 2, historyLimit: 5 })
    }
    const texts = (await store.load(saved.id))?.turns.map((kept) => kept.text)
    expect(texts).toEqual(['re: one', 'two', 're: two', 'three', 're: three'])
    expect((await store.load(saved.id))?.misunderstoodInARow).toBe(0)
  })

  it('loads the last turns alone when asked, and the others stay stored', async () => {
    const store = make(60_000)
    const saved = { ...conversation(), turns: ['a', 'b', 'c', 'd'].map((text) => turn(text)) }
    await saveNew(store, saved)
    expect((await store.load(saved.id, 2))?.turns.map((kept) => kept.text)).toEqual(['c', 'd'])
    expect((await store.load(saved.id, 0))?.turns).toEqual([])
    expect((await store.load(saved.id, 10))?.turns).toHaveLength(4)
    const recent = (await store.load(saved.id, 1))!
    recent.turns.push(turn('e'))
    await store.save(recent, withNewTurns(1))
    expect((await store.load(saved.id))?.turns.map((kept) => kept.text)).toEqual(['a', 'b', 'c', 'd', 'e'])
  })

  it('forgets a conversation once its TTL has passed since the last save', async () => {
    const store = make(300)
    const saved = conversation()
    await saveNew(store, saved)
    expect(await store.load(saved.id)).toBeDefined()
    await until(async () => await store.load(saved.id) === undefined, 500, 10)
  })
})

describe('in-memory store', () => {
  it('keeps turns frozen: once said, a turn does not change', async () => {
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 10, maxBytes: 1024 * 1024 })
    const saved = conversation()
    await saveNew(store, saved)
    saved.turns[0]!.text = 'changed after saving'
    const loaded = (await store.load(saved.id))!
    expect(loaded.turns[0]!.text).toBe('hi')
    expect(Object.isFrozen(loaded.turns[0])).toBe(true)
  })

  it('drops the least recently used conversation beyond its count', async () => {
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 2, maxBytes: 1024 * 1024 })
    const [a, b, c] = [conversation(), conversation(), conversation()]
    await saveNew(store, a)
    await saveNew(store, b)
    await store.load(a.id)
    await saveNew(store, c)
    expect(await store.load(a.id)).toBeDefined()
    expect(await store.load(b.id)).toBeUndefined()
    expect(await store.load(c.id)).toBeDefined()
  })

  it('drops the least recently used conversations when their total size would pass maxBytes', async () => {
    const big = (): Conversation => ({ ...conversation(), turns: [turn('x'.repeat(40_000))] })
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1000, maxBytes: 100_000 })
    const saved = [big(), big(), big()]
    for (const one of saved) await saveNew(store, one)
    // Two of 40 KB fit in 100 KB; the third pushes out the oldest, whatever the count allows.
    expect(await store.load(saved[0]!.id)).toBeUndefined()
    expect(await store.load(saved[1]!.id)).toBeDefined()
    expect(await store.load(saved[2]!.id)).toBeDefined()
  })

  it('counts a conversation growing message by message, by its text and a cost per turn and fact', async () => {
    const one = conversation()
    const longer = { ...one, turns: [...one.turns, turn('x'.repeat(1000)), turn('y'.repeat(500), 'assistant')] }
    expect(conversationBytes(longer) - conversationBytes(one)).toBeGreaterThanOrEqual(1500)
    expect(conversationBytes(longer) - conversationBytes(one)).toBeLessThan(2000)
    expect(conversationBytes({ ...one, facts: { ...one.facts, note: 'z'.repeat(1000) } }) - conversationBytes(one)).toBeGreaterThanOrEqual(1000)
    // A history the store trims is counted as trimmed.
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1000, maxBytes: 40_000 })
    const growing = { ...conversation(), turns: [] as Turn[] }
    await saveNew(store, growing)
    for (let message = 0; message < 100; message++) {
      const loaded = (await store.load(growing.id, 2))!
      loaded.turns.push(turn('w'.repeat(1000)), turn('v'.repeat(1000), 'assistant'))
      await store.save(loaded, { newTurns: 2, historyLimit: 10 })
    }
    expect((await store.load(growing.id))?.turns).toHaveLength(10)
  })

  it('measures the TTL on its clock', async () => {
    let now = 1_000
    const store = new MemoryConversationStore({ ttlMs: 24 * 3_600_000, maxConversations: 10, maxBytes: 1024 * 1024, clock: { now: () => now } })
    const saved = conversation()
    await saveNew(store, saved)
    now += 24 * 3_600_000 - 1
    expect(await store.load(saved.id)).toBeDefined()
    now += 2
    expect(await store.load(saved.id)).toBeUndefined()
  })
})

describe('Redis store', () => {
  const store = new RedisConversationStore(redis, { ttlMs: 86_400_000, keyPrefix: prefix })

  it('keeps the state under <prefix>conversation:<id> and the turns under its :turns, both with the TTL of every save', async () => {
    const saved = conversation()
    await saveNew(store, saved)
    const key = `${prefix}conversation:${saved.id}`
    expect(JSON.parse((await redis.get(key))!)).toEqual({ ...saved, turns: [] })
    expect((await redis.lrange(`${key}:turns`, 0, -1)).map((json) => JSON.parse(json) as unknown)).toEqual(saved.turns)
    for (const stored of [key, `${key}:turns`]) {
      const ttl = await redis.pttl(stored)
      expect(ttl).toBeGreaterThan(86_300_000)
      expect(ttl).toBeLessThanOrEqual(86_400_000)
    }
  })

  it('a message writes its own turns, not the history again', async () => {
    const saved = { ...conversation(), turns: ['a', 'b', 'c'].map((text) => turn(text)) }
    await saveNew(store, saved)
    const turnsKey = `${prefix}conversation:${saved.id}:turns`
    // Changed in Redis behind the store's back: a save that rewrote the history would put it back.
    await redis.lset(turnsKey, 0, JSON.stringify(turn('as stored')))
    const loaded = (await store.load(saved.id, 2))!
    loaded.turns.push(turn('d'), turn('e', 'assistant'))
    await store.save(loaded, withNewTurns(2))
    expect((await store.load(saved.id))?.turns.map((kept) => kept.text)).toEqual(['as stored', 'b', 'c', 'd', 'e'])
  })

  it('reads a conversation the previous version stored whole, and moves its history to the list', async () => {
    const old = { ...conversation(), turns: ['a', 'b', 'c'].map((text) => turn(text)) }
    const key = `${prefix}conversation:${old.id}`
    await redis.set(key, JSON.stringify(old), 'PX', 60_000)
    expect((await store.load(old.id, 2))?.turns.map((kept) => kept.text)).toEqual(['b', 'c'])
    expect(JSON.parse((await redis.get(key))!)).toEqual({ ...old, turns: [] })
    expect(await redis.llen(`${key}:turns`)).toBe(3)
    expect(await store.load(old.id)).toEqual(old)
  })

  it('a Redis that stops answering makes the store unavailable', async () => {
    const broken = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null })
    broken.on('error', () => {})
    const unavailable = new RedisConversationStore(broken, { ttlMs: 1000, keyPrefix: prefix })
    await expect(unavailable.load('x')).rejects.toBeInstanceOf(ConversationStoreUnavailable)
    await expect(unavailable.save(conversation(), withNewTurns(1))).rejects.toMatchObject({ code: 'CONVERSATION_STORE_UNAVAILABLE', message: 'Redis did not answer' })
    broken.disconnect()
  })
})
