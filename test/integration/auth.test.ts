import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { LightMyRequestResponse } from 'fastify'
import { API_KEY, AUTH, createTestApp, imageForm, multipart, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, dataUri, ImageFactory } from '../support/images.ts'

const UNAUTHORIZED = { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' }
const METADATA_PATHS = ['/v1/metadata', '/api/v1/metadata']
const UNKNOWN_KEY = 'unknown-key-7d2e90'

/** Authorization headers that must not get through: missing, another scheme, no key, unknown key. */
const REJECTED: Array<[string, Record<string, string>]> = [
  ['no Authorization header', {}],
  ['the Basic scheme', { authorization: `Basic ${Buffer.from(`user:${API_KEY}`).toString('base64')}` }],
  ['Bearer without a key', { authorization: 'Bearer' }],
  ['Bearer and a space without a key', { authorization: 'Bearer ' }],
  ['the key without a scheme', { authorization: API_KEY }],
  ['an unknown key', { authorization: `Bearer ${UNKNOWN_KEY}` }],
  ['a valid key with extra characters', { authorization: `Bearer ${API_KEY}x` }],
  ['a prefix of a valid key', { authorization: `Bearer ${API_KEY.slice(0, -1)}` }]
]

let t: TestApp
let images: ImageFactory
let jpeg: Buffer

beforeAll(async () => {
  // Trace level: the most the app can ever log, so the redaction check covers every log statement.
  t = await createTestApp({ logLevel: 'trace' })
  images = new ImageFactory()
  jpeg = await images.make('jpeg', { tags: CAMERA_TAGS })
})
afterAll(async () => {
  await images.close()
  await t.close()
})

async function postJson (url: string, headers: Record<string, string>, body: unknown = { image: dataUri(jpeg, 'image/jpeg') }): Promise<LightMyRequestResponse> {
  return await t.app.inject({
    method: 'POST',
    url,
    headers: { ...headers, 'content-type': 'application/json' },
    payload: JSON.stringify(body)
  })
}

function expectUnauthorized (response: LightMyRequestResponse): void {
  expect(response.statusCode).toBe(401)
  expect(response.headers['www-authenticate']).toBe('Bearer')
  expect(response.headers['content-type']).toMatch(/^application\/json/)
  expect(response.json()).toStrictEqual(UNAUTHORIZED)
}

describe.each(METADATA_PATHS)('POST %s', (url) => {
  it.each(REJECTED)('answers 401 to %s', async (_case, headers) => {
    expectUnauthorized(await postJson(url, headers))
  })

  it('checks the key before it looks at the body', async () => {
    // An unauthenticated client learns nothing about the body's media type or size.
    const response = await t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'text/plain' },
      payload: 'not an image'
    })
    expectUnauthorized(response)
  })

  it('extracts metadata with a valid key, from a JSON data URI', async () => {
    const response = await postJson(url, AUTH)
    expect(response.statusCode).toBe(200)
    expect(response.headers['www-authenticate']).toBeUndefined()
    expect(response.json()).toMatchObject({ camera: { make: 'NIKON', model: 'COOLPIX P6000' }, format: 'jpeg' })
  })

  it('takes the scheme name in any case (RFC 7235), the key exactly', async () => {
    expect((await postJson(url, { authorization: `bearer ${API_KEY}` })).statusCode).toBe(200)
    expectUnauthorized(await postJson(url, { authorization: `bearer ${API_KEY.toUpperCase()}` }))
  })

  it('extracts metadata with a valid key, from a multipart upload', async () => {
    const { payload, headers } = await multipart(imageForm(jpeg))
    const response = await t.app.inject({ method: 'POST', url, headers: { ...AUTH, ...headers }, payload })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ camera: { make: 'NIKON', model: 'COOLPIX P6000' }, format: 'jpeg' })
  })
})

describe('several configured keys', () => {
  let multiKey: TestApp
  beforeAll(async () => { multiKey = await createTestApp({ apiKeys: ['first-key-a1', 'second-key-b2'] }) })
  afterAll(async () => { await multiKey.close() })

  it('accepts each of them and nothing else', async () => {
    for (const key of ['first-key-a1', 'second-key-b2']) {
      const response = await multiKey.app.inject({ method: 'POST', url: '/v1/metadata', headers: { authorization: `Bearer ${key}` }, payload: {} })
      // Past authentication: the empty body is what gets rejected.
      expect(response.statusCode, key).toBe(400)
      expect(response.json(), key).toMatchObject({ code: 'NO_IMAGE' })
    }
    const response = await multiKey.app.inject({ method: 'POST', url: '/v1/metadata', headers: AUTH, payload: {} })
    expect(response.statusCode).toBe(401)
  })
})

describe('open routes', () => {
  it.each([
    ['/health/live', { status: 'ok' }],
    ['/health/ready', { status: 'ready' }]
  ])('GET %s answers without a key', async (url, body) => {
    const response = await t.app.inject({ method: 'GET', url })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toStrictEqual(body)
  })

  it('GET /openapi.json answers without a key', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ openapi: expect.stringMatching(/^3\./) })
  })

  it.each(['/health/live', '/health/ready', '/openapi.json'])('GET %s ignores an unknown key rather than rejecting it', async (url) => {
    const response = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${UNKNOWN_KEY}` } })
    expect(response.statusCode).toBe(200)
  })
})

describe('unknown routes', () => {
  it.each([
    ['GET', '/nope'],
    ['GET', '/v1/metadata'],
    ['POST', '/v2/metadata'],
    ['GET', '/api/health/live']
  ])('%s %s answers the 404 envelope', async (method, url) => {
    const response = await t.app.inject({ method: method as 'GET' | 'POST', url, headers: AUTH })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toStrictEqual({
      statusCode: 404,
      code: 'ROUTE_NOT_FOUND',
      error: 'Not Found',
      message: `Route ${method}:${url} not found`
    })
  })
})

describe('logs', () => {
  it('never contain the Authorization header, for valid, unknown or malformed keys', async () => {
    const before = t.logs.length
    expect((await postJson('/v1/metadata', AUTH)).statusCode).toBe(200)
    expect((await postJson('/api/v1/metadata', AUTH)).statusCode).toBe(200)
    expect((await postJson('/v1/metadata', { authorization: `Bearer ${UNKNOWN_KEY}` })).statusCode).toBe(401)
    expect((await postJson('/v1/metadata', { authorization: `BEARER ${API_KEY}` })).statusCode).toBe(200)
    expect((await postJson('/v1/metadata', { authorization: `Basic ${API_KEY}` })).statusCode).toBe(401)
    const lines = t.logs.slice(before)
    // The requests were logged, so their absence below is not just silence.
    expect(lines.filter((line) => line.includes('/v1/metadata')).length).toBeGreaterThanOrEqual(5)
    expect(lines.filter((line) => line.includes(API_KEY) || line.includes(UNKNOWN_KEY))).toEqual([])
  })

  it.each([
    ['headers', (authorization: string) => ({ headers: { authorization } })],
    ['request.headers', (authorization: string) => ({ request: { headers: { authorization } } })]
  ])('redact the key when a log line carries %s', (_path, entry) => {
    const before = t.logs.length
    t.app.log.info(entry(`Bearer ${API_KEY}`), 'logged with headers')
    const lines = t.logs.slice(before)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('[redacted]')
    expect(lines[0]).not.toContain(API_KEY)
  })
})
