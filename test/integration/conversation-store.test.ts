import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import type { Conversation, Turn } from '../../src/chat/dialogue/conversation.ts'
import { conversationBytes, MemoryConversationStore, RedisConversationStore, type ConversationStore } from '../../src/chat/conversation-store.ts'
import { ConversationBusy, ConversationNotFound, ConversationStoreUnavailable } from '../../src/chat/errors.ts'
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

  it('applies a change: what it returns comes back, its new turns join the history', async () => {
    const store = make(60_000)
    const saved = { ...conversation(), turns: ['a', 'b', 'c'].map((text) => turn(text)) }
    await saveNew(store, saved)
    const value = await store.update(saved.id, (loaded) => {
      expect(loaded.turns.map((kept) => kept.text)).toEqual(['b', 'c'])
      loaded.facts['email'] = 'ada@example.com'
      loaded.turns.push(turn('d'), turn('e', 'assistant'))
      return 'answered'
    }, { recentTurns: 2, historyLimit: 4 })
    expect(value).toBe('answered')
    const stored = (await store.load(saved.id))!
    expect(stored.facts).toEqual({ ...saved.facts, email: 'ada@example.com' })
    expect(stored.turns.map((kept) => kept.text)).toEqual(['b', 'c', 'd', 'e'])
  })

  it('stores nothing when the change throws, and knows no conversation it does not have', async () => {
    const store = make(60_000)
    const saved = conversation()
    await saveNew(store, saved)
    await expect(store.update(saved.id, (loaded) => {
      loaded.facts['order_id'] = 'changed'
      throw new ConversationNotFound()
    }, { recentTurns: 2, historyLimit: 50 })).rejects.toBeInstanceOf(ConversationNotFound)
    expect((await store.load(saved.id))?.facts['order_id']).toBe('A-1')
    const unknown = randomUUID()
    let called = false
    await expect(store.update(unknown, () => { called = true }, { recentTurns: 2, historyLimit: 50 })).rejects.toBeInstanceOf(ConversationNotFound)
    expect(called).toBe(false)
    expect(await store.load(unknown)).toBeUndefined()
  })

  it('applies changes sent at once one after another: none is lost', async () => {
    const store = make(60_000)
    const saved = { ...conversation(), facts: {}, turns: [] }
    await saveNew(store, saved)
    await Promise.all(Array.from({ length: 10 }, async (_, index) => await store.update(saved.id, async (loaded) => {
      // A pause between the read and the write, where another change could come in.
      await new Promise((resolve) => setTimeout(resolve, 5))
      loaded.facts[`member_${index}`] = index
      loaded.turns.push(turn(`message ${index}`), turn(`reply ${index}`, 'assistant'))
    }, { recentTurns: 2, historyLimit: 50 })))
    const stored = (await store.load(saved.id))!
    expect(stored.facts).toEqual(Object.fromEntries(Array.from({ length: 10 }, (_, index) => [`member_${index}`, index])))
    expect(stored.turns).toHaveLength(20)
    // Each change's two turns stay together.
    expect(stored.turns.map((kept) => kept.role)).toEqual(Array.from({ length: 10 }, () => ['customer', 'assistant']).flat())
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

  describe('one API key filling the store', () => {
    const of = (owner: string, text = 'x'.repeat(10_000)): Conversation => ({ ...conversation(), ownerKey: owner, turns: [turn(text)] })

    it('pushes out its own conversations, never another key\'s within its share', async () => {
      // Nine such conversations fit.
      const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1000, maxBytes: 105_000 })
      const victim = of('victim')
      await saveNew(store, victim)
      const flood = Array.from({ length: 50 }, () => of('flooder'))
      for (const one of flood) await saveNew(store, one)
      expect(await store.load(victim.id)).toBeDefined()
      // What fits of the flooder's is its most recent; the oldest went.
      expect(await store.load(flood[0]!.id)).toBeUndefined()
      expect(await store.load(flood.at(-1)!.id)).toBeDefined()
      // The victim's conversation goes on being saved, and stays.
      const loaded = (await store.load(victim.id, 1))!
      loaded.turns.push(turn('still here'))
      await store.save(loaded, withNewTurns(1))
      for (const one of Array.from({ length: 20 }, () => of('flooder'))) await saveNew(store, one)
      expect((await store.load(victim.id))?.turns.map((kept) => kept.text)).toEqual([victim.turns[0]!.text, 'still here'])
    })

    it('by count as by size', async () => {
      const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 10, maxBytes: 1024 * 1024 })
      const victims = [of('victim', 'a'), of('victim', 'b')]
      for (const one of victims) await saveNew(store, one)
      const flood = Array.from({ length: 30 }, () => of('flooder', 'f'))
      for (const one of flood) await saveNew(store, one)
      for (const one of victims) expect(await store.load(one.id)).toBeDefined()
      const kept = await Promise.all(flood.map(async (one) => await store.load(one.id) !== undefined))
      expect(kept).toEqual([...Array.from({ length: 22 }, () => false), ...Array.from({ length: 8 }, () => true)])
    })

    it('a key beyond its share loses its least recently used first, whoever writes', async () => {
      // Nine such conversations fit; two keys are each sure of four. The big one holds more; the small one's new
      // conversations push out the big one's oldest.
      const store = new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1000, maxBytes: 105_000 })
      const big = Array.from({ length: 8 }, () => of('big'))
      for (const one of big) await saveNew(store, one)
      const small = Array.from({ length: 4 }, () => of('small'))
      for (const one of small) await saveNew(store, one)
      for (const one of small) expect(await store.load(one.id)).toBeDefined()
      const bigKept = await Promise.all(big.map(async (one) => await store.load(one.id) !== undefined))
      expect(bigKept).toEqual([false, false, false, true, true, true, true, true])
    })
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

  describe('two replicas (two clients, as two processes have)', () => {
    const otherClient = new Redis(REDIS_URL)
    const other = new RedisConversationStore(otherClient, { ttlMs: 86_400_000, keyPrefix: prefix })
    afterAll(() => { otherClient.disconnect() })
    const options = { recentTurns: 2, historyLimit: 50 }

    it('a change stored by the other between the read and the write: the change runs again, on it', async () => {
      const saved = { ...conversation(), facts: {}, turns: [] }
      await saveNew(store, saved)
      const seen: Array<Record<string, unknown>> = []
      await store.update(saved.id, async (loaded) => {
        seen.push({ ...loaded.facts })
        if (seen.length === 1) {
          await other.update(saved.id, (theirs) => {
            theirs.facts['order_id'] = 'A-77'
            theirs.turns.push(turn('order A-77'), turn('noted', 'assistant'))
          }, options)
        }
        loaded.facts['customer_name'] = 'Ada'
        loaded.turns.push(turn('I am Ada'), turn('hello Ada', 'assistant'))
      }, options)
      expect(seen).toEqual([{}, { order_id: 'A-77' }])
      const stored = (await store.load(saved.id))!
      expect(stored.facts).toEqual({ order_id: 'A-77', customer_name: 'Ada' })
      expect(stored.turns.map((kept) => kept.text)).toEqual(['order A-77', 'noted', 'I am Ada', 'hello Ada'])
    })

    it('changes through both at once: none is lost', async () => {
      const saved = { ...conversation(), facts: {}, turns: [] }
      await saveNew(store, saved)
      await Promise.all(Array.from({ length: 12 }, async (_, index) => await (index % 2 === 0 ? store : other).update(saved.id, async (loaded) => {
        await new Promise((resolve) => setTimeout(resolve, 2))
        loaded.facts[`member_${index}`] = index
        loaded.turns.push(turn(`message ${index}`), turn(`reply ${index}`, 'assistant'))
      }, options)))
      const stored = (await store.load(saved.id))!
      expect(stored.facts).toEqual(Object.fromEntries(Array.from({ length: 12 }, (_, index) => [`member_${index}`, index])))
      expect(stored.turns.map((kept) => kept.role)).toEqual(Array.from({ length: 12 }, () => ['customer', 'assistant']).flat())
    })

    it('gives up with ConversationBusy when other changes keep coming first, and stores nothing of its own', async () => {
      const saved = { ...conversation(), facts: {}, turns: [] }
      await saveNew(store, saved)
      let attempts = 0
      await expect(store.update(saved.id, async (loaded) => {
        attempts++
        await other.update(saved.id, (theirs) => { theirs.facts[`theirs_${attempts}`] = true }, options)
        loaded.facts['mine'] = true
      }, options)).rejects.toBeInstanceOf(ConversationBusy)
      expect(attempts).toBe(8)
      expect((await store.load(saved.id))?.facts).not.toHaveProperty('mine')
    })

    it('keeps the version with the conversation: its own key, with the same TTL', async () => {
      const saved = conversation()
      await saveNew(store, saved)
      await store.update(saved.id, () => {}, options)
      const key = `${prefix}conversation:${saved.id}:version`
      expect(await redis.get(key)).toBe('2')
      expect(await redis.pttl(key)).toBeGreaterThan(86_300_000)
    })
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
