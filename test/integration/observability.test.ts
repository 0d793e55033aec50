import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TrustProxy } from '../../src/config.ts'
import { API_KEY, AUTH, createTestApp, type TestApp } from '../support/app.ts'

// Request ids, the one log line per request, and the client address behind a proxy.
describe('request ids and request log lines', () => {
  let t: TestApp

  beforeAll(async () => { t = await createTestApp() })
  afterAll(async () => { await t.close() })

  const requestLines = (): Array<Record<string, unknown>> =>
    t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === 'request')

  it('echoes a sane X-Request-Id, and makes a UUID when there is none or it is not sane', async () => {
    const given = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'gw-0f3a:17' } })
    expect(given.headers['x-request-id']).toBe('gw-0f3a:17')
    const absent = await t.app.inject({ method: 'GET', url: '/health/live' })
    expect(absent.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    for (const insane of ['a b', 'x'.repeat(129), 'id"}{"level":60', 'é']) {
      const answer = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': insane } })
      expect(answer.headers['x-request-id']).not.toBe(insane)
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/)
    }
  })

  it('carries the request id on errors too', async () => {
    const answer = await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: { 'x-request-id': 'gw-401' }, payload: {} })
    expect(answer.statusCode).toBe(401)
    expect(answer.headers['x-request-id']).toBe('gw-401')
  })

  it('writes one line per request, with its id, route, status and duration, and the chat\'s conversation and intent', async () => {
    t.logs.length = 0
    const message = 'my secret surprise gift for Dana, where is order A-7781?'
    const answer = await t.app.inject({
      method: 'POST',
      url: '/v1/chat/send?api_key=leaked-in-a-query',
      headers: { ...AUTH, 'x-request-id': 'gw-chat-1' },
      payload: { message, user_id: 'u-1', context: { customer_name: 'Dana' } }
    })
    expect(answer.statusCode).toBe(200)
    const lines = t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['requestId'] === 'gw-chat-1')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'POST',
      route: '/v1/chat/send',
      path: '/v1/chat/send',
      status: 200,
      intent: 'track_order',
      conversationId: answer.json<{ conversation_id: string }>().conversation_id,
      handoff: false
    })
    expect(typeof lines[0]!['ms']).toBe('number')
    const text = t.logs.join('')
    // Never the customer's words, the context, the query string or the key.
    for (const secret of ['secret surprise', 'Dana', 'leaked-in-a-query', API_KEY]) expect(text).not.toContain(secret)
  })

  it('a refused request is one line too, with the error\'s code', async () => {
    t.logs.length = 0
    await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: { authorization: 'Bearer wrong' }, payload: {} })
    await t.app.inject({ method: 'GET', url: '/nowhere' })
    expect(requestLines().map((line) => [line['status'], line['code']])).toEqual([[401, 'UNAUTHORIZED'], [404, 'ROUTE_NOT_FOUND']])
    expect(t.logs).toHaveLength(2)
  })
})

describe('the client address behind a proxy', () => {
  async function loggedIp (trustProxy: TrustProxy): Promise<unknown> {
    const t = await createTestApp({ trustProxy })
    try {
      await t.app.inject({ method: 'GET', url: '/health/live', remoteAddress: '10.0.0.5', headers: { 'x-forwarded-for': '203.0.113.9' } })
      return t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line['msg'] === 'request')?.['ip']
    } finally {
      await t.close()
    }
  }

  it('is the connection\'s when no proxy is trusted (X-Forwarded-For can be forged)', async () => {
    expect(await loggedIp(false)).toBe('10.0.0.5')
  })

  it('comes from X-Forwarded-For when the proxy is trusted, by address or by hops', async () => {
    expect(await loggedIp(['10.0.0.0/8'])).toBe('203.0.113.9')
    expect(await loggedIp(1)).toBe('203.0.113.9')
    expect(await loggedIp(['192.168.0.1'])).toBe('10.0.0.5')
  })
})

describe('GET /metrics', () => {
  let t: TestApp

  beforeAll(async () => { t = await createTestApp({ rateLimits: { chatPerMinute: 2, metadataPerMinute: 0 } }) })
  afterAll(async () => { await t.close() })

  async function scrape (): Promise<string> {
    const answer = await t.app.inject({ method: 'GET', url: '/metrics' })
    expect(answer.statusCode).toBe(200)
    expect(answer.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/)
    return answer.body
  }

  /** The value of one series, or undefined when it is absent. */
  function value (text: string, series: string): number | undefined {
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
    return line === undefined ? undefined : Number(line.slice(series.length + 1))
  }

  it('needs no key, and counts requests by route and status, chat answers by intent, handoffs and refusals', async () => {
    const send = async (message: string): Promise<number> =>
      (await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: AUTH, payload: { message, user_id: 'u' } })).statusCode
    expect([await send('where is order A-1?'), await send('get me a human please'), await send('hi')]).toEqual([200, 200, 429])
    await t.app.inject({ method: 'GET', url: '/v1/chat/conversations/unknown?user_id=customer-1', headers: AUTH })
    // The pool starts its child on first use: the readiness probe uses it.
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)

    const text = await scrape()
    expect(value(text, 'http_requests_total{method="POST",route="/v1/chat/send",status="200"}')).toBe(2)
    expect(value(text, 'http_requests_total{method="POST",route="/v1/chat/send",status="429"}')).toBe(1)
    // The route's template, not the path with its id.
    expect(value(text, 'http_requests_total{method="GET",route="/v1/chat/conversations/:conversation_id",status="404"}')).toBe(1)
    expect(value(text, 'http_request_duration_seconds_count{method="POST",route="/v1/chat/send",status="200"}')).toBe(2)
    expect(value(text, 'chat_replies_total{intent="track_order"}')).toBe(1)
    expect(value(text, 'chat_replies_total{intent="contact_human_agent"}')).toBe(1)
    expect(value(text, 'chat_handoffs_total')).toBe(1)
    expect(value(text, 'rate_limited_total{route="/v1/chat/send"}')).toBe(1)
    expect(value(text, 'chat_store_errors_total')).toBe(0)
    expect(value(text, 'exiftool_processes')).toBe(1)
    expect(value(text, 'exiftool_queue')).toBe(0)
    expect(value(text, 'exiftool_failures_total{kind="timeout"}')).toBe(0)
    // No request carried a manifest: the validator was never asked, and holds no thread.
    expect(value(text, 'c2pa_threads')).toBe(0)
    expect(value(text, 'c2pa_queue')).toBe(0)
    expect(value(text, 'c2pa_validations_total{outcome="report"}')).toBe(0)
    expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0)
  })
})
