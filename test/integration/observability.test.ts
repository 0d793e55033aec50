import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TrustProxy } from '../../src/config.ts'
import { API_KEY, AUTH, createTestApp, listen, type TestApp } from '../support/app.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

// Request ids, the one log line per request, and the client address behind a proxy.
describe('request ids and request log lines', () => {
  let t: TestApp

  // Requests come from 127.0.0.1 (app.inject's address), trusted as the gateway is.
  beforeAll(async () => { t = await createTestApp({ trustProxy: ['127.0.0.1'] }) })
  afterAll(async () => { await t.close() })

  const requestLines = (): Array<Record<string, unknown>> =>
    t.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line['msg'] === 'request')

  it('echoes a sane X-Request-Id, and makes a UUID when there is none or it is not sane', async () => {
    const given = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'gw-0f3a:17' } })
    expect(given.headers['x-request-id']).toBe('gw-0f3a:17')
    const absent = await t.app.inject({ method: 'GET', url: '/health/live' })
    expect(absent.headers['x-request-id']).toMatch(UUID)
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

describe('an X-Request-Id from a client that is no trusted proxy (over real HTTP)', () => {
  /** Each X-Request-Id sent in turn to a new app trusting `trustProxy`: the id echoed, and the request's log line. */
  async function answersTo (trustProxy: TrustProxy, ids: string[]): Promise<Array<{ echoed: string | null, line: Record<string, unknown> | undefined }>> {
    const t = await createTestApp({ trustProxy })
    try {
      const base = await listen(t)
      const answers = []
      for (const id of ids) {
        t.logs.length = 0
        const response = await fetch(`${base}/health/live`, { headers: { 'x-request-id': id } })
        await response.arrayBuffer()
        const line = t.logs.map((text) => JSON.parse(text) as Record<string, unknown>).find((logged) => logged['msg'] === 'request')
        answers.push({ echoed: response.headers.get('x-request-id'), line })
      }
      return answers
    } finally {
      await t.close()
    }
  }

  it.each([
    ['no proxy trusted', false],
    ['another address trusted', ['10.0.0.0/8']]
  ] as Array<[string, TrustProxy]>)('is not the request\'s id (%s): the service makes one, and logs the client\'s apart if sane', async (_case, trustProxy) => {
    const [forged, insane] = await answersTo(trustProxy, ['forged-by-client', 'id"}{"level":60'])
    expect(forged!.echoed).toMatch(UUID)
    expect(forged!.line).toMatchObject({ requestId: forged!.echoed, clientRequestId: 'forged-by-client' })
    expect(insane!.echoed).toMatch(UUID)
    expect(insane!.line).toMatchObject({ requestId: insane!.echoed })
    expect(insane!.line).not.toHaveProperty('clientRequestId')
  })

  it.each([
    ['by hops', 1],
    ['by address', ['127.0.0.1']]
  ] as Array<[string, TrustProxy]>)('from a proxy trusted %s, is the request\'s id', async (_case, trustProxy) => {
    const [given] = await answersTo(trustProxy, ['gw-7f3a'])
    expect(given!.echoed).toBe('gw-7f3a')
    expect(given!.line).toMatchObject({ requestId: 'gw-7f3a' })
    expect(given!.line).not.toHaveProperty('clientRequestId')
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

  // A pool that may run two ExifTool processes: it starts one, for the readiness probe, and no more until needed.
  beforeAll(async () => { t = await createTestApp({ rateLimits: { chatPerMinute: 2, metadataPerMinute: 0 }, exiftool: { procs: 2, taskTimeoutMs: 10_000, maxQueue: 64 } }) })
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
    expect(value(text, 'exiftool_max_processes')).toBe(2)
    expect(value(text, 'exiftool_queue')).toBe(0)
    expect(value(text, 'exiftool_failures_total{kind="timeout"}')).toBe(0)
    // No request carried a manifest: the validator was never asked, and holds no thread.
    expect(value(text, 'c2pa_threads')).toBe(0)
    expect(value(text, 'c2pa_queue')).toBe(0)
    expect(value(text, 'c2pa_validations_total{outcome="report"}')).toBe(0)
    expect(value(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0)
  })
})
