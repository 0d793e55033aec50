import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import type { Conversation } from '../src/chat/dialogue/conversation.ts'
import { MemoryConversationStore, RedisConversationStore, type ConversationStore } from '../src/chat/conversation-store.ts'
import { ConversationStoreUnavailable } from '../src/chat/errors.ts'
import { until } from './support/processes.ts'
import { REDIS_URL } from './support/redis.ts'

// The same contract for both stores; the Redis one against the real Redis on this machine.
const prefix = `chat-metadata-api-test:${randomUUID()}:`
const redis = new Redis(REDIS_URL)

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

function conversation (id = randomUUID()): Conversation {
  return {
    id,
    ownerKey: 'owner',
    userId: 'customer-1',
    createdAt: '2026-11-21T10:00:00.000Z',
    updatedAt: '2026-11-21T10:00:00.000Z',
    facts: { order_id: 'A-1', vip: true, points: 12 },
    pendingIntent: 'track_order',
    misunderstoodInARow: 1,
    turns: [{ role: 'customer', text: 'hi', intent: 'greeting', timestamp: '2026-11-21T10:00:00.000Z' }]
  }
}

describe.each([
  { name: 'in-memory', make: (ttlMs: number): ConversationStore => new MemoryConversationStore({ ttlMs, maxConversations: 100, maxBytes: 1024 * 1024 }) },
  { name: 'Redis', make: (ttlMs: number): ConversationStore => new RedisConversationStore(redis, { ttlMs, keyPrefix: prefix }) }
])('$name conversation store', ({ make }) => {
  it('gives back what was saved', async () => {
    const store = make(60_000)
    const saved = conversation()
    await store.save(saved)
    expect(await store.load(saved.id)).toEqual(saved)
  })

  it('knows nothing of an id never saved', async () => {
    expect(await make(60_000).load(randomUUID())).toBeUndefined()
  })

  it('hands out copies: a change counts only once saved', async () => {
    const store = make(60_000)
    const saved = conversation()
    await store.save(saved)
    const loaded = (await store.load(saved.id))!
    loaded.facts['order_id'] = 'B-2'
    saved.turns.push({ role: 'assistant', text: 'hello', intent: 'greeting', timestamp: saved.createdAt })
    expect((await store.load(saved.id))?.facts['order_id']).toBe('A-1')
    expect((await store.load(saved.id))?.turns).toHaveLength(1)
    await store.save(loaded)
    expect((await store.load(saved.id))?.facts['order_id']).toBe('B-2')
  })

  it('forgets a conversation once its TTL has passed since the last save', async () => {
    const store = make(300)
    const saved = conversation()
    await store.save(saved)
    expect(await store.load(saved.id)).toBeDefined()
    await until(async () => await store.load(saved.id) === undefined, 500, 10)
  })
})

describe('in-memory store bounds', () => {
  it('drops the least recently used conversation beyond its size', async () => {
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 2, maxBytes: 1024 * 1024 })
    const [a, b, c] = [conversation(), conversation(), conversation()]
    await store.save(a)
    await store.save(b)
    await store.load(a.id)
    await store.save(c)
    expect(await store.load(a.id)).toBeDefined()
    expect(await store.load(b.id)).toBeUndefined()
    expect(await store.load(c.id)).toBeDefined()
  })

  it('drops the least recently used conversations when their total size would pass maxBytes', async () => {
    const big = (): Conversation => ({ ...conversation(), turns: [{ role: 'customer', text: 'x'.repeat(40_000), intent: 'greeting', timestamp: '2026-11-21T10:00:00.000Z' }] })
    const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1000, maxBytes: 100_000 })
    const saved = [big(), big(), big()]
    for (const one of saved) await store.save(one)
    // Two of 40 KB fit in 100 KB; the third pushes out the oldest, whatever the count allows.
    expect(await store.load(saved[0]!.id)).toBeUndefined()
    expect(await store.load(saved[1]!.id)).toBeDefined()
    expect(await store.load(saved[2]!.id)).toBeDefined()
  })

  it('measures the TTL on its clock', async () => {
    let now = 1_000
    const store = new MemoryConversationStore({ ttlMs: 24 * 3_600_000, maxConversations: 10, maxBytes: 1024 * 1024, clock: { now: () => now } })
    const saved = conversation()
    await store.save(saved)
    now += 24 * 3_600_000 - 1
    expect(await store.load(saved.id)).toBeDefined()
    now += 2
    expect(await store.load(saved.id)).toBeUndefined()
  })
})

describe('Redis store', () => {
  it('sets the TTL on every save, with the key under the prefix', async () => {
    const store = new RedisConversationStore(redis, { ttlMs: 86_400_000, keyPrefix: prefix })
    const saved = conversation()
    await store.save(saved)
    const ttl = await redis.pttl(`${prefix}conversation:${saved.id}`)
    expect(ttl).toBeGreaterThan(86_300_000)
    expect(ttl).toBeLessThanOrEqual(86_400_000)
  })

  it('a Redis that stops answering makes the store unavailable', async () => {
    const broken = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null })
    broken.on('error', () => {})
    const store = new RedisConversationStore(broken, { ttlMs: 1000, keyPrefix: prefix })
    await expect(store.load('x')).rejects.toBeInstanceOf(ConversationStoreUnavailable)
    await expect(store.save(conversation())).rejects.toMatchObject({ code: 'CONVERSATION_STORE_UNAVAILABLE', message: 'Redis did not answer' })
    broken.disconnect()
  })
})
