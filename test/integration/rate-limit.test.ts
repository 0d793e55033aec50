import { randomUUID } from 'node:crypto'
import type { LightMyRequestResponse } from 'fastify'
import { afterAll, describe, expect, it } from 'vitest'
import type { AppConfig } from '../../src/config.ts'
import { API_KEY, createTestApp, TEST_CHAT_CONFIG, type TestApp } from '../support/app.ts'
import { deleteKeys, REDIS_URL } from '../support/redis.ts'

// Requests per minute per API key, over real HTTP handling (inject), in memory and in the real Redis.
const OTHER_KEY = 'other-key-4c1a'
const prefixes: string[] = []

function limited (chatPerMinute: number, metadataPerMinute: number, redis: boolean): Partial<AppConfig> {
  const redisKeyPrefix = `chat-metadata-api-test:${randomUUID()}:`
  prefixes.push(redisKeyPrefix)
  return {
    apiKeys: [API_KEY, OTHER_KEY],
    rateLimits: { chatPerMinute, metadataPerMinute },
    chat: { ...TEST_CHAT_CONFIG, redisKeyPrefix, ...(redis ? { redisUrl: REDIS_URL } : {}) }
  }
}

async function chat (t: TestApp, key = API_KEY, url = '/v1/chat/send'): Promise<LightMyRequestResponse> {
  return await t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${key}` }, payload: { message: 'hi', user_id: 'u' } })
}

afterAll(async () => { await deleteKeys(...prefixes) })

describe.each([{ store: 'in memory', redis: false }, { store: 'in Redis', redis: true }])('rate limits, counted $store', ({ redis }) => {
  it('answer 429 in the envelope with Retry-After and RateLimit headers once a key is over its limit', async () => {
    const t = await createTestApp(limited(3, 0, redis))
    try {
      const answers = []
      for (let i = 0; i < 3; i++) answers.push(await chat(t))
      expect(answers.map((answer) => answer.statusCode)).toEqual([200, 200, 200])
      expect(answers.map((answer) => answer.headers['ratelimit-remaining'])).toEqual(['2', '1', '0'])
      expect(answers[0]!.headers['ratelimit-limit']).toBe('3')

      const refused = await chat(t)
      expect(refused.statusCode).toBe(429)
      expect(refused.json()).toEqual({
        statusCode: 429,
        code: 'RATE_LIMITED',
        error: 'Too Many Requests',
        message: 'Too many requests with this API key; retry after the Retry-After delay'
      })
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60)
      expect(refused.headers).toMatchObject({ 'ratelimit-limit': '3', 'ratelimit-remaining': '0' })
      // The /api/v1 alias is the same route, and counts the same.
      expect((await chat(t, API_KEY, '/api/v1/chat/send')).statusCode).toBe(429)
      // Another key has its own count.
      expect((await chat(t, OTHER_KEY)).statusCode).toBe(200)
      // A request with no valid key is refused before it is counted.
      expect((await chat(t, 'wrong-key')).statusCode).toBe(401)
    } finally {
      await t.close()
    }
  })

  it('count chat and metadata apart, each with its own limit', async () => {
    const t = await createTestApp(limited(1, 2, redis))
    try {
      expect((await chat(t)).statusCode).toBe(200)
      expect((await chat(t)).statusCode).toBe(429)
      const metadata = async (): Promise<number> => (await t.app.inject({
        method: 'POST', url: '/v1/metadata', headers: { authorization: `Bearer ${API_KEY}` }, payload: {}
      })).statusCode
      // An empty body is a 400, but a request all the same: it counts.
      expect([await metadata(), await metadata(), await metadata()]).toEqual([400, 400, 429])
    } finally {
      await t.close()
    }
  })
})

describe('rate limits in Redis', () => {
  it('are shared by replicas', async () => {
    const config = limited(3, 0, true)
    const first = await createTestApp(config)
    const second = await createTestApp(config)
    try {
      expect([(await chat(first)).statusCode, (await chat(second)).statusCode, (await chat(first)).statusCode]).toEqual([200, 200, 200])
      expect((await chat(second)).statusCode).toBe(429)
    } finally {
      await first.close()
      await second.close()
    }
  })
})
