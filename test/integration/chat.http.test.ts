import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { INTENTS } from '../../src/chat/intents.ts'
import type { AppConfig } from '../../src/config.ts'
import { API_KEY, createTestApp, listen, TEST_CHAT_CONFIG, type TestApp } from '../support/app.ts'
import { deleteKeys, REDIS_URL } from '../support/redis.ts'

// The real server on a real port, called with fetch; conversations in memory or in the real Redis on this machine.
const OTHER_KEY = 'other-key-91d0'
const HISTORY_LIMIT = 6

interface ChatBody {
  reply: string
  conversation_id: string
  timestamp: string
  intent: string
  answer?: string
  confidence: number
  links: Array<{ label: string, url: string }>
  handoff: boolean
}

/** A calendar date `days` from today (UTC), as the service computes today. */
function daysFromToday (days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10)
}

/** The day as a reply writes it to a customer: "December 2, 2026". */
function writtenDaysFromToday (days: number): string {
  return new Date(Date.now() + days * 86_400_000).toLocaleDateString('en-US', { month: 'long', day: 'numeric', year: 'numeric', timeZone: 'UTC' })
}

function chatConfig (redisKeyPrefix: string, redis: boolean): Partial<AppConfig> {
  return {
    apiKeys: [API_KEY, OTHER_KEY],
    chat: {
      ...TEST_CHAT_CONFIG,
      redisKeyPrefix,
      conversationTtlMs: 3_600_000,
      maxConversations: 1000,
      historyLimit: HISTORY_LIMIT,
      ...(redis ? { redisUrl: REDIS_URL } : {})
    }
  }
}

describe.each([
  { store: 'in-memory', redis: false },
  { store: 'Redis', redis: true }
])('chat over HTTP, conversations $store', ({ redis }) => {
  const prefix = `chat-metadata-api-test:${randomUUID()}:`
  let t: TestApp
  let base: string

  beforeAll(async () => {
    t = await createTestApp(chatConfig(prefix, redis))
    base = await listen(t)
  })

  afterAll(async () => {
    await t.close()
    if (redis) await deleteKeys(prefix)
  })

  async function post (body: unknown, { key = API_KEY, path = '/v1/chat/send' } = {}): Promise<Response> {
    return await fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body)
    })
  }

  async function send (body: Record<string, unknown>, key = API_KEY): Promise<ChatBody> {
    const response = await post({ user_id: 'customer-1', ...body }, { key })
    expect(response.status, await response.clone().text()).toBe(200)
    return await response.json() as ChatBody
  }

  it('answers with the documented reply shape', async () => {
    const response = await post({ message: 'hello there', user_id: 'customer-1' })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    const body = await response.json() as ChatBody
    expect(Object.keys(body).sort()).toEqual(['confidence', 'conversation_id', 'handoff', 'intent', 'links', 'reply', 'timestamp'])
    expect(body.intent).toBe('greeting')
    expect(INTENTS).toContain(body.intent)
    expect(body.confidence).toBeGreaterThan(0)
    expect(body.confidence).toBeLessThanOrEqual(1)
    expect(body.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(Math.abs(Date.parse(body.timestamp) - Date.now())).toBeLessThan(60_000)
    expect(body.conversation_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(body).toMatchObject({ links: [], handoff: false })
  })

  it('names the answer it gives to a question inside a request, across the conversation, and none for a plain request', async () => {
    const first = await send({ message: 'you sent me the wrong colour, order 40551' })
    expect(first.intent).toBe('get_refund')
    expect(first).not.toHaveProperty('answer')
    const second = await send({ message: 'is sending it back free?', conversation_id: first.conversation_id })
    expect(second).toMatchObject({ intent: 'check_refund_policy', answer: 'returns.shipping_cost', handoff: false })
    expect(second.reply).toMatch(/^Yes, sending back a wrong item is free\./)
    expect(second.links).toEqual([{ label: 'Return or refund', url: 'https://shop.example.com/orders/40551/return' }])
    expect(Object.keys(second).sort()).toEqual(['answer', 'confidence', 'conversation_id', 'handoff', 'intent', 'links', 'reply', 'timestamp'])
  })

  it('asks for the order number, then completes the request when it comes', async () => {
    const first = await send({ message: 'where the heck is my package??' })
    expect(first).toMatchObject({ intent: 'track_order', links: [], handoff: false })
    expect(first.reply).toMatch(/order number/i)

    const second = await send({ message: "it's A-5531", conversation_id: first.conversation_id })
    expect(second.conversation_id).toBe(first.conversation_id)
    expect(second.intent).toBe('track_order')
    expect(second.links).toEqual([{ label: 'Track your order', url: 'https://shop.example.com/orders/A-5531/tracking' }])
    expect(second.reply).toContain('A-5531')
    expect(second.reply).toContain('https://shop.example.com/orders/A-5531/tracking')
  })

  it('uses the order in the context straight away, and remembers it for later turns', async () => {
    const first = await send({ message: 'i need the invoice pls', context: { order_id: 'ORD-7781' } })
    expect(first.intent).toBe('get_invoice')
    expect(first.links).toContainEqual({ label: 'Invoice', url: 'https://shop.example.com/orders/ORD-7781/invoice' })

    const second = await send({ message: 'and how do i track it', conversation_id: first.conversation_id })
    expect(second.intent).toBe('track_order')
    expect(second.reply).toContain('ORD-7781')
    expect(second.links[0]?.url).toBe('https://shop.example.com/orders/ORD-7781/tracking')
  })

  it('fills templates from further context members', async () => {
    const reply = await send({ message: 'hi!', context: { customer_name: 'Priya', loyalty_points: 120, vip: true } })
    expect(reply.intent).toBe('greeting')
    expect(reply.reply).toMatch(/Priya/)
  })

  describe('return window (30 days from purchase_date, today in UTC)', () => {
    const refund = async (purchaseDate: string): Promise<ChatBody> =>
      await send({ message: 'I want my money back for this', context: { order_id: 'A-100', purchase_date: purchaseDate } })

    it('inside: says until which date', async () => {
      const reply = await refund(daysFromToday(-10))
      expect(reply.intent).toBe('get_refund')
      expect(reply.reply).toContain(writtenDaysFromToday(20))
      expect(reply.reply).toMatch(/20 days left|until/)
      expect(reply.reply).not.toMatch(/ended|closed|future/)
      expect(reply.links[0]?.url).toBe('https://shop.example.com/orders/A-100/return')
    })

    it('on its last day: says today is the last day', async () => {
      const reply = await refund(daysFromToday(-30))
      expect(reply.reply).toMatch(/last day/)
      expect(reply.reply).toContain(writtenDaysFromToday(0))
    })

    it('outside: says when it ended and offers a person', async () => {
      const reply = await refund(daysFromToday(-31))
      expect(reply.reply).toMatch(/ended|closed/)
      expect(reply.reply).toContain(writtenDaysFromToday(-1))
      expect(reply.links.map((link) => link.url)).toContain('https://shop.example.com/contact')
    })

    it('a purchase date in the future: says so, and claims no eligibility', async () => {
      const reply = await refund(daysFromToday(5))
      expect(reply.reply).toMatch(/in the future/)
      expect(reply.reply).not.toMatch(/still be refunded|within the window of 30 days until|ended|closed/)
    })

    it('answers the refund policy with the customer\'s own dates', async () => {
      const reply = await send({ message: 'what is your refund policy', context: { purchase_date: daysFromToday(-3) } })
      expect(reply.intent).toBe('check_refund_policy')
      expect(reply.reply).toContain(writtenDaysFromToday(27))
    })
  })

  describe('handoff', () => {
    it('after two messages in a row it did not understand', async () => {
      const first = await send({ message: 'qwzx plorf vantu' })
      expect(first).toMatchObject({ intent: 'out_of_scope', handoff: false })
      const second = await send({ message: 'zzkq mmrp', conversation_id: first.conversation_id })
      expect(second).toMatchObject({ intent: 'out_of_scope', handoff: true })
      expect(second.links).toEqual([{ label: 'Contact a person', url: 'https://shop.example.com/contact' }])
    })

    it('not when an understood message comes in between', async () => {
      const first = await send({ message: 'qwzx plorf vantu' })
      const second = await send({ message: 'how do I reset my password', conversation_id: first.conversation_id })
      expect(second).toMatchObject({ intent: 'recover_password', handoff: false })
      const third = await send({ message: 'zzkq mmrp', conversation_id: first.conversation_id })
      expect(third.handoff).toBe(false)
    })

    it('when the customer asks for a person', async () => {
      const reply = await send({ message: 'can u get me a real human please' })
      expect(reply).toMatchObject({ intent: 'contact_human_agent', handoff: true })
      expect(reply.reply).toContain('https://shop.example.com/contact')
    })

    it('for an angry complaint, not for a calm one', async () => {
      const angry = await send({ message: 'This is absolutely unacceptable, I want to file a complaint NOW!!!' })
      expect(angry).toMatchObject({ intent: 'complaint', handoff: true })
      const calm = await send({ message: 'I would like to make a complaint about the service' })
      expect(calm).toMatchObject({ intent: 'complaint', handoff: false })
    })
  })

  it('answers out-of-scope requests with what it can do and a person to ask', async () => {
    const reply = await send({ message: "what's the weather going to be like in Paris tomorrow?" })
    expect(reply).toMatchObject({ intent: 'out_of_scope', handoff: false })
    expect(reply.reply).toMatch(/order/)
    expect(reply.links).toEqual([{ label: 'Contact a person', url: 'https://shop.example.com/contact' }])
  })

  describe('conversations belong to their API key and user', () => {
    const notFound = { statusCode: 404, code: 'CONVERSATION_NOT_FOUND', error: 'Not Found', message: 'Conversation not found' }

    it('an unknown conversation_id is 404', async () => {
      const response = await post({ message: 'hi', user_id: 'customer-1', conversation_id: randomUUID() })
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual(notFound)
    })

    it('another user\'s conversation is the same 404', async () => {
      const { conversation_id: conversationId } = await send({ message: 'hi' })
      const response = await post({ message: 'hi', user_id: 'customer-2', conversation_id: conversationId })
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual(notFound)
    })

    it('another API key\'s conversation is the same 404, for sending and for the transcript', async () => {
      const { conversation_id: conversationId } = await send({ message: 'hi' })
      const response = await post({ message: 'hi', user_id: 'customer-1', conversation_id: conversationId }, { key: OTHER_KEY })
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual(notFound)
      const transcript = await fetch(`${base}/v1/chat/conversations/${conversationId}?user_id=customer-1`, { headers: { authorization: `Bearer ${OTHER_KEY}` } })
      expect(transcript.status).toBe(404)
      expect(await transcript.json()).toEqual(notFound)
    })

    it('another user\'s transcript, under the same API key, is the same 404', async () => {
      const { conversation_id: conversationId } = await send({ message: 'my address is 12 Elm Street' })
      const own = await fetch(`${base}/v1/chat/conversations/${conversationId}?user_id=customer-1`, { headers: { authorization: `Bearer ${API_KEY}` } })
      expect(own.status).toBe(200)
      const other = await fetch(`${base}/v1/chat/conversations/${conversationId}?user_id=customer-2`, { headers: { authorization: `Bearer ${API_KEY}` } })
      expect(other.status).toBe(404)
      expect(await other.json()).toEqual(notFound)
    })

    it('a transcript asked for without user_id is a 400 naming it', async () => {
      const { conversation_id: conversationId } = await send({ message: 'hi' })
      const response = await fetch(`${base}/v1/chat/conversations/${conversationId}`, { headers: { authorization: `Bearer ${API_KEY}` } })
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual({ statusCode: 400, code: 'VALIDATION_ERROR', error: 'Bad Request', message: "querystring must have required property 'user_id'" })
    })
  })

  it('keeps the transcript, bounded to the most recent turns', async () => {
    const first = await send({ message: 'hello' })
    const id = first.conversation_id
    await send({ message: 'where is my order', conversation_id: id })
    await send({ message: 'A-4417', conversation_id: id })
    const last = await send({ message: 'get me an agent', conversation_id: id })

    const response = await fetch(`${base}/v1/chat/conversations/${id}?user_id=customer-1`, { headers: { authorization: `Bearer ${API_KEY}` } })
    expect(response.status).toBe(200)
    const transcript = await response.json() as { turns: Array<Record<string, string>>, [key: string]: unknown }
    expect(transcript).toMatchObject({ conversation_id: id, user_id: 'customer-1', handoff: true, created_at: first.timestamp, updated_at: last.timestamp })
    // Four exchanges are eight turns; the limit keeps the last six.
    expect(transcript.turns.map((turn) => [turn['role'], turn['intent']])).toEqual([
      ['customer', 'track_order'], ['assistant', 'track_order'],
      ['customer', 'track_order'], ['assistant', 'track_order'],
      ['customer', 'contact_human_agent'], ['assistant', 'contact_human_agent']
    ])
    expect(transcript.turns[2]).toMatchObject({ role: 'customer', text: 'A-4417' })
    expect(transcript.turns[5]).toMatchObject({ text: last.reply, timestamp: last.timestamp })
  })

  it('the transcript of an unknown conversation is 404', async () => {
    const response = await fetch(`${base}/v1/chat/conversations/${randomUUID()}?user_id=customer-1`, { headers: { authorization: `Bearer ${API_KEY}` } })
    expect(response.status).toBe(404)
    expect(await response.json()).toMatchObject({ code: 'CONVERSATION_NOT_FOUND', message: 'Conversation not found' })
  })

  describe('what a conversation remembers of the context is bounded (CONVERSATION_MAX_FACTS, CONVERSATION_MAX_FACT_BYTES)', () => {
    /** 49 new members of 1,000 characters: about 50 KB, within one request's limits. */
    const newMembers = (message: number): Record<string, string> =>
      Object.fromEntries(Array.from({ length: 49 }, (_, member) => [`m${message}_${member}`, 'v'.repeat(1000)]))

    it('forgets the least recently given first: what comes with every message stays', async () => {
      const forgetting = await send({ message: 'hi!', context: { customer_name: 'Priya' } })
      const remembering = await send({ message: 'hi!', context: { customer_name: 'Priya' } })
      for (let message = 0; message < 3; message++) {
        await send({ message: 'where is my order?', conversation_id: forgetting.conversation_id, context: newMembers(message) })
        await send({ message: 'where is my order?', conversation_id: remembering.conversation_id, context: { customer_name: 'Priya', ...newMembers(message) } })
      }
      expect((await send({ message: 'hi!', conversation_id: remembering.conversation_id })).reply).toMatch(/Priya/)
      expect((await send({ message: 'hi!', conversation_id: forgetting.conversation_id })).reply).not.toMatch(/Priya/)
    })

    it.runIf(redis)('keeps the stored conversation small however many new members come', async () => {
      const { conversation_id: id } = await send({ message: 'hello' })
      for (let message = 0; message < 5; message++) await send({ message: 'where is my order?', conversation_id: id, context: newMembers(message) })
      const client = new Redis(REDIS_URL)
      try {
        const state = JSON.parse((await client.get(`${prefix}conversation:${id}`))!) as { facts: Record<string, unknown> }
        expect(Buffer.byteLength(JSON.stringify(state.facts))).toBeLessThanOrEqual(65_536)
        // Before the bound: five messages' 245 members, 250 KB.
        expect(await client.strlen(`${prefix}conversation:${id}`)).toBeLessThan(66_000)
        expect(Object.keys(state.facts).slice(-49)).toEqual(Object.keys(newMembers(4)))
      } finally {
        client.disconnect()
      }
    })
  })

  it('answers at the /api/v1 alias too', async () => {
    const response = await post({ message: 'how can I pay', user_id: 'customer-1' }, { path: '/api/v1/chat/send' })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ intent: 'check_payment_methods' })
  })
})

describe('conversations in Redis', () => {
  const prefix = `chat-metadata-api-test:${randomUUID()}:`
  afterAll(async () => { await deleteKeys(prefix) })

  it('survive a restart of the service, and expire with the configured TTL', async () => {
    const before = await createTestApp(chatConfig(prefix, true))
    const first = await before.app.inject({
      method: 'POST',
      url: '/v1/chat/send',
      headers: { authorization: `Bearer ${API_KEY}` },
      payload: { message: 'I need to cancel an order', user_id: 'customer-1' }
    })
    expect(first.json()).toMatchObject({ intent: 'cancel_order' })
    const id = (first.json() as ChatBody).conversation_id
    await before.close()

    const client = new Redis(REDIS_URL)
    try {
      // The state and the history (a list, the message and its reply), each with the TTL.
      for (const key of [`${prefix}conversation:${id}`, `${prefix}conversation:${id}:turns`]) {
        const ttl = await client.pttl(key)
        expect(ttl).toBeGreaterThan(3_500_000)
        expect(ttl).toBeLessThanOrEqual(3_600_000)
      }
      expect(await client.llen(`${prefix}conversation:${id}:turns`)).toBe(2)
    } finally {
      client.disconnect()
    }

    const after = await createTestApp(chatConfig(prefix, true))
    try {
      const second = await after.app.inject({
        method: 'POST',
        url: '/v1/chat/send',
        headers: { authorization: `Bearer ${API_KEY}` },
        payload: { message: 'order 99120', user_id: 'customer-1', conversation_id: id }
      })
      expect(second.statusCode).toBe(200)
      expect(second.json()).toMatchObject({ intent: 'cancel_order' })
      expect((second.json() as ChatBody).reply).toContain('99120')
    } finally {
      await after.close()
    }
  })

  it('a Redis that cannot be reached stops start-up', async () => {
    await expect(createTestApp({ ...chatConfig(prefix, false), chat: { ...chatConfig(prefix, true).chat!, redisUrl: 'redis://127.0.0.1:1' } }))
      .rejects.toThrow('Redis at 127.0.0.1:1 cannot be reached')
  })
})

describe('messages sent at once to one conversation', () => {
  const prefix = `chat-metadata-api-test:${randomUUID()}:`
  afterAll(async () => { await deleteKeys(prefix) })

  /**
   * Ten messages at once, alternating between `replicas`, each with a context member of its own and the first with
   * the order: every one is answered, and every one is remembered.
   */
  async function sendAtOnce (replicas: string[]): Promise<void> {
    const post = async (base: string, body: Record<string, unknown>): Promise<ChatBody> => {
      const response = await fetch(`${base}/v1/chat/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: 'customer-1', ...body })
      })
      expect(response.status, await response.clone().text()).toBe(200)
      return await response.json() as ChatBody
    }
    for (let round = 0; round < 3; round++) {
      const { conversation_id: id } = await post(replicas[0]!, { message: 'hello' })
      const order = `R-${round}${randomUUID().slice(0, 4)}`
      const messages = Array.from({ length: 10 }, (_, index) => `question number ${index}`)
      await Promise.all(messages.map(async (message, index) => await post(replicas[index % replicas.length]!, {
        message,
        conversation_id: id,
        context: index === 0 ? { order_id: order } : { [`note_${index}`]: 'x' }
      })))
      const transcript = await (await fetch(`${replicas[1 % replicas.length]}/v1/chat/conversations/${id}?user_id=customer-1`, { headers: { authorization: `Bearer ${API_KEY}` } })).json() as { turns: Array<{ role: string, text: string }> }
      // Each message and its reply, one pair after another, none missing.
      expect(transcript.turns.map((turn) => turn.role)).toEqual(Array.from({ length: 11 }, () => ['customer', 'assistant']).flat())
      expect(transcript.turns.filter((turn) => turn.role === 'customer').map((turn) => turn.text).sort()).toEqual(['hello', ...messages].sort())
      // The order, given by one of them, is remembered whatever the others did.
      expect((await post(replicas[1 % replicas.length]!, { message: 'where is my order?', conversation_id: id })).reply).toContain(order)
    }
  }

  it('in Redis, through two replicas: each is applied in turn, none lost', async () => {
    const config = { ...chatConfig(prefix, true), chat: { ...chatConfig(prefix, true).chat!, historyLimit: 50 } }
    const replicas = [await createTestApp(config), await createTestApp(config)]
    try {
      await sendAtOnce(await Promise.all(replicas.map(listen)))
    } finally {
      for (const replica of replicas) await replica.close()
    }
  })

  it('in Redis, when other writes keep coming first: 409 CONVERSATION_BUSY with Retry-After, the message not applied', async () => {
    const t = await createTestApp(chatConfig(prefix, true))
    const client = new Redis(REDIS_URL)
    try {
      const base = await listen(t)
      const headers = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' }
      const first = await (await fetch(`${base}/v1/chat/send`, { method: 'POST', headers, body: JSON.stringify({ message: 'hello', user_id: 'customer-1' }) })).json() as ChatBody
      // Another replica storing a message between this one's every read and write, made certain: the app's own store
      // runs each change after a real write to the conversation's version in the real Redis.
      const store = t.app.conversationStore
      const update = store.update.bind(store)
      store.update = async (id, change, options) => await update(id, async (conversation) => {
        await client.incr(`${prefix}conversation:${id}:version`)
        return await change(conversation)
      }, options)
      const response = await fetch(`${base}/v1/chat/send`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ message: 'where is order A-1?', user_id: 'customer-1', conversation_id: first.conversation_id })
      })
      expect(response.status).toBe(409)
      expect(response.headers.get('retry-after')).toBe('1')
      expect(await response.json()).toEqual({
        statusCode: 409,
        code: 'CONVERSATION_BUSY',
        error: 'Conflict',
        message: 'Other messages to this conversation were being answered at the same time; send this one again after the Retry-After delay'
      })
      const transcript = await (await fetch(`${base}/v1/chat/conversations/${first.conversation_id}?user_id=customer-1`, { headers })).json() as { turns: unknown[] }
      expect(transcript.turns).toHaveLength(2)
    } finally {
      client.disconnect()
      await t.close()
    }
  })

  it('in memory: each is applied in turn, none lost', async () => {
    const t = await createTestApp({ ...chatConfig(prefix, false), chat: { ...chatConfig(prefix, false).chat!, historyLimit: 50 } })
    try {
      await sendAtOnce([await listen(t)])
    } finally {
      await t.close()
    }
  })
})

describe('conversations in memory, one API key filling the store', () => {
  it('never pushes out another key\'s conversation: the flooder loses its own', async () => {
    // 1 MiB of conversations; the flood is 40 conversations of about 52 KB each (as the store counts them).
    const t = await createTestApp({ ...chatConfig('unused:', false), chat: { ...chatConfig('unused:', false).chat!, maxConversationBytes: 1024 * 1024 } })
    try {
      const base = await listen(t)
      const post = async (key: string, body: Record<string, unknown>): Promise<ChatBody> => {
        const response = await fetch(`${base}/v1/chat/send`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body)
        })
        expect(response.status).toBe(200)
        return await response.json() as ChatBody
      }
      const transcript = async (key: string, id: string, userId: string): Promise<number> =>
        (await fetch(`${base}/v1/chat/conversations/${id}?user_id=${userId}`, { headers: { authorization: `Bearer ${key}` } })).status
      const victim = await post(OTHER_KEY, { message: 'where is order A-1?', user_id: 'victim' })
      const flood: string[] = []
      for (let index = 0; index < 40; index++) {
        const context = Object.fromEntries(Array.from({ length: 49 }, (_, member) => [`m${member}`, 'v'.repeat(1000)]))
        flood.push((await post(API_KEY, { message: 'hi', user_id: `flood-${index}`, context })).conversation_id)
      }
      expect(await transcript(OTHER_KEY, victim.conversation_id, 'victim')).toBe(200)
      expect(await transcript(API_KEY, flood[0]!, 'flood-0')).toBe(404)
      expect(await transcript(API_KEY, flood.at(-1)!, 'flood-39')).toBe(200)
    } finally {
      await t.close()
    }
  })
})
