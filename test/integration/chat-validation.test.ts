import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'

// Every invalid request gets a 4xx in the one envelope, over real HTTP.
let t: TestApp
let base: string

beforeAll(async () => {
  t = await createTestApp()
  base = await listen(t)
})

afterAll(async () => { await t.close() })

async function post (body: string, headers: Record<string, string> = {}): Promise<Response> {
  return await fetch(`${base}/v1/chat/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...headers },
    body
  })
}

const valid = { message: 'where is my order?', user_id: 'customer-1' }

describe('POST /v1/chat/send rejects', () => {
  it.each([
    ['no message', { user_id: 'u' }, "body must have required property 'message'"],
    ['an empty message', { ...valid, message: '' }, 'body/message must NOT have fewer than 1 characters'],
    ['a message of only whitespace', { ...valid, message: ' \n\t ' }, 'body/message must not be blank'],
    ['a message of only zero-width characters', { ...valid, message: '\u200b\u200c\u200d\u2060\ufeff' }, 'body/message must not be blank'],
    ['a message of only combining marks and direction controls', { ...valid, message: '\u0301\u0308\u202e\u200f' }, 'body/message must not be blank'],
    ['a message of blank-looking letters', { ...valid, message: '\u3164\u2800\u3000' }, 'body/message must not be blank'],
    ['a message of control characters', { ...valid, message: '\u0000\u0007\u001b' }, 'body/message must not be blank'],
    ['a message over 4000 characters', { ...valid, message: 'a'.repeat(4001) }, 'body/message must NOT have more than 4000 characters'],
    ['a message that is not a string', { ...valid, message: 42 }, 'body/message must be string'],
    ['no user_id', { message: 'hi' }, "body must have required property 'user_id'"],
    ['an empty user_id', { ...valid, user_id: '' }, 'body/user_id must NOT have fewer than 1 characters'],
    ['a user_id over 128 characters', { ...valid, user_id: 'u'.repeat(129) }, 'body/user_id must NOT have more than 128 characters'],
    ['a user_id that is not a string', { ...valid, user_id: 7 }, 'body/user_id must be string'],
    ['a context that is not an object', { ...valid, context: 'A-1' }, 'body/context must be object'],
    ['an empty order_id', { ...valid, context: { order_id: '' } }, 'body/context/order_id must NOT have fewer than 1 characters'],
    ['an order_id over 64 characters', { ...valid, context: { order_id: '1'.repeat(65) } }, 'body/context/order_id must NOT have more than 64 characters'],
    ['a numeric order_id', { ...valid, context: { order_id: 12345 } }, 'body/context/order_id must be string'],
    ['a purchase_date that is no calendar day', { ...valid, context: { purchase_date: '2026-02-30' } }, 'body/context/purchase_date must be a real calendar date in the form YYYY-MM-DD'],
    ['a purchase_date in another form', { ...valid, context: { purchase_date: '21/11/2026' } }, 'body/context/purchase_date must be a real calendar date in the form YYYY-MM-DD'],
    ['a purchase_date with a time', { ...valid, context: { purchase_date: '2026-11-21T10:00:00Z' } }, 'body/context/purchase_date must be a real calendar date in the form YYYY-MM-DD'],
    ['a context member that is an object', { ...valid, context: { customer: { name: 'Ana' } } }, 'body/context/customer must be a string, a number or a boolean'],
    ['a context member that is null', { ...valid, context: { customer_name: null } }, 'body/context/customer_name must be a string, a number or a boolean'],
    ['an empty conversation_id', { ...valid, conversation_id: '' }, 'body/conversation_id must NOT have fewer than 1 characters'],
    ['a body that is not an object', ['hi'], 'body must be object']
  ])('%s: 400 naming the field and the rule', async (_case, body, message) => {
    const response = await post(JSON.stringify(body))
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({ statusCode: 400, code: 'VALIDATION_ERROR', error: 'Bad Request', message })
  })

  it.each(['👍', '¿?', 'ok\u200b', 'é'])('a short visible message (%j) is not blank', async (message) => {
    const response = await post(JSON.stringify({ ...valid, message }))
    expect(response.status).toBe(200)
  })

  it('a leap day is a calendar day', async () => {
    const response = await post(JSON.stringify({ ...valid, context: { purchase_date: '2024-02-29' } }))
    expect(response.status).toBe(200)
  })

  it('malformed JSON: 400 INVALID_JSON', async () => {
    const response = await post('{"message": "hi",')
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({ code: 'INVALID_JSON', message: 'The request body is not valid JSON' })
  })

  it('a body over 64 KiB: 413', async () => {
    const response = await post(JSON.stringify({ ...valid, context: { notes: 'x'.repeat(900) }, padding: 'y'.repeat(66_000) }))
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual({
      statusCode: 413,
      code: 'BODY_TOO_LARGE',
      error: 'Payload Too Large',
      message: 'The request body is larger than the limit of 65536 bytes'
    })
  })

  it('another media type: 415 naming JSON', async () => {
    const response = await post('message=hi', { 'content-type': 'application/x-www-form-urlencoded' })
    expect(response.status).toBe(415)
    expect(await response.json()).toMatchObject({ code: 'UNSUPPORTED_CONTENT_TYPE', message: 'Content-Type must be one of: application/json' })
  })

  it('no API key: 401 with WWW-Authenticate, and nothing of the key in the logs', async () => {
    const response = await fetch(`${base}/v1/chat/send`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(valid) })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer')
    expect(await response.json()).toEqual({ statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'Unauthorized' })
    const wrong = await post(JSON.stringify(valid), { authorization: 'Bearer not-a-key' })
    expect(wrong.status).toBe(401)
    expect(t.logs.join('')).not.toContain('not-a-key')
    expect(t.logs.join('')).not.toContain(API_KEY)
  })

  it('the transcript without an API key: 401', async () => {
    const response = await fetch(`${base}/v1/chat/conversations/anything`)
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toBe('Bearer')
  })
})
