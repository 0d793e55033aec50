import { once } from 'node:events'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { isAnswer, RawConnection, requestHead, type RawOutcome } from '../support/raw-http.ts'

// Every answer the service gives before it has read a request's body whole, on a raw socket (node:net) to the real
// server, followed by a second request on the same connection: the connection is either usable at once (the rest
// of the body was read and thrown away) or closed with the answer (`Connection: close`). Never a connection left
// waiting for a body nobody reads, which made the next request wait for the 30 s request timeout and get 408.

const MIB = 1024 * 1024
const AUTH = { authorization: `Bearer ${API_KEY}` }
const BOUNDARY = 'early-answer-boundary-5d2e'
const MULTIPART = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
/** What the small app takes: an image of 1 MiB, as a file or a data URI. */
const SMALL_LIMIT = MIB

interface Part { name: string, filename?: string, data: Buffer | string }

function multipartBody (parts: Part[], eol = '\r\n'): Buffer {
  const pieces: Buffer[] = []
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"${eol}Content-Type: application/octet-stream`
    pieces.push(Buffer.from(`--${BOUNDARY}${eol}Content-Disposition: form-data; name="${part.name}"${filename}${eol}${eol}`))
    pieces.push(Buffer.isBuffer(part.data) ? part.data : Buffer.from(part.data))
    pieces.push(Buffer.from(eol))
  }
  pieces.push(Buffer.from(`--${BOUNDARY}--${eol}`))
  return Buffer.concat(pieces)
}

/** The body in chunked transfer coding, 64 KiB a chunk. */
function chunked (body: Buffer): Buffer[] {
  const pieces: Buffer[] = []
  for (let at = 0; at < body.length; at += 64 * 1024) {
    const chunk = body.subarray(at, at + 64 * 1024)
    pieces.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n'))
  }
  pieces.push(Buffer.from('0\r\n\r\n'))
  return pieces
}

interface Fixtures { jpeg: Buffer, padded: (bytes: number) => Buffer }

interface Case {
  name: string
  app: 'main' | 'small' | 'limited'
  /** The request: its head and its body, in the pieces it is written in. */
  request: (f: Fixtures) => { head: string, body: Buffer[] }
  status: number
  code: string
  /** The request sent next on the same connection, and the status it must get; /health/live unless given. */
  next?: (f: Fixtures) => { head: string, body: Buffer[], status: number }
}

function post (path: string, headers: Record<string, string>, body: Buffer, method = 'POST'): { head: string, body: Buffer[] } {
  return { head: requestHead(method, path, { ...headers, 'content-length': body.length }), body: [body] }
}

const upload = (parts: (f: Fixtures) => Part[], path = '/v1/metadata', headers: Record<string, string> = AUTH) =>
  (f: Fixtures) => post(path, { ...headers, ...MULTIPART }, multipartBody(parts(f)))

const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')

const CASES: Case[] = [
  { name: 'two image files', app: 'main', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }, { name: 'image', filename: 'b.jpg', data: f.jpeg }]), status: 400, code: 'TOO_MANY_FILES' },
  { name: 'another file first, then the image', app: 'main', request: upload((f) => [{ name: 'other', filename: 'a.jpg', data: f.jpeg }, { name: 'image', filename: 'b.jpg', data: f.jpeg }]), status: 400, code: 'TOO_MANY_FILES' },
  { name: 'an unsupported file, then an image', app: 'main', request: upload((f) => [{ name: 'image', filename: 'a.svg', data: SVG }, { name: 'other', filename: 'b.jpg', data: f.padded(2 * MIB) }]), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  {
    name: 'two 10 MB files, then an upload',
    app: 'main',
    request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(10 * 1000 * 1000) }, { name: 'image', filename: 'b.jpg', data: f.padded(10 * 1000 * 1000) }]),
    status: 400,
    code: 'TOO_MANY_FILES',
    next: (f) => ({ ...upload(() => [{ name: 'image', filename: 'c.jpg', data: f.jpeg }])(f), status: 200 })
  },
  { name: 'multipart lines ending in LF alone, 2 MB', app: 'main', request: (f) => post('/v1/metadata', { ...AUTH, ...MULTIPART }, multipartBody([{ name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }], '\n')), status: 400, code: 'MALFORMED_MULTIPART' },
  { name: 'a field named __proto__, then a 2 MB image', app: 'main', request: upload((f) => [{ name: '__proto__', data: 'x' }, { name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }]), status: 400, code: 'FORBIDDEN_KEY' },
  { name: '?full=maybe with a 2 MB upload', app: 'main', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }], '/v1/metadata?full=maybe'), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'invalid JSON in a 2 MB body', app: 'main', request: () => post('/v1/metadata', { ...AUTH, 'content-type': 'application/json' }, Buffer.from(`{"image":"data:image/jpeg;base64,${'A'.repeat(2 * MIB)}",}`)), status: 400, code: 'INVALID_JSON' },
  { name: 'no API key, a 2 MB upload', app: 'main', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }], '/v1/metadata', {}), status: 401, code: 'UNAUTHORIZED' },
  { name: 'over the rate limit, a 2 MB upload', app: 'limited', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }]), status: 429, code: 'RATE_LIMITED' },
  { name: 'an upload over MAX_UPLOAD_BYTES (3 MB, 1 MiB allowed)', app: 'small', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(3 * MIB) }]), status: 413, code: 'IMAGE_TOO_LARGE' },
  { name: 'a JSON body whose Content-Length is over the limit', app: 'small', request: (f) => post('/v1/metadata', { ...AUTH, 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ image: `data:image/jpeg;base64,${f.padded(3 * MIB).toString('base64')}` }))), status: 413, code: 'IMAGE_TOO_LARGE' },
  {
    name: 'a chunked JSON body over the limit',
    app: 'small',
    request: (f) => ({
      head: requestHead('POST', '/v1/metadata', { ...AUTH, 'content-type': 'application/json', 'transfer-encoding': 'chunked' }),
      body: chunked(Buffer.from(JSON.stringify({ image: `data:image/jpeg;base64,${f.padded(3 * MIB).toString('base64')}` })))
    }),
    status: 413,
    code: 'IMAGE_TOO_LARGE'
  },
  { name: 'a chat body over 64 KiB', app: 'main', request: () => post('/v1/chat/send', { ...AUTH, 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ message: 'a'.repeat(200_000), user_id: 'u' }))), status: 413, code: 'BODY_TOO_LARGE' },
  { name: 'text/plain to /v1/metadata, 2 MB', app: 'main', request: () => post('/v1/metadata', { ...AUTH, 'content-type': 'text/plain' }, Buffer.alloc(2 * MIB, 'x')), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'JSON to /v1/metadata/file, 2 MB', app: 'main', request: (f) => post('/v1/metadata/file', { ...AUTH, 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ image: `data:image/jpeg;base64,${f.padded(2 * MIB).toString('base64')}` }))), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'an unknown route, a body that is not JSON', app: 'main', request: () => post('/v1/nowhere', { ...AUTH, 'content-type': 'application/json' }, Buffer.from('this is not JSON')), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'a wrong method, a body that is not JSON, no key', app: 'main', request: () => post('/v1/chat/send', { 'content-type': 'application/json' }, Buffer.from('{"message":'), 'PUT'), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'an unknown route, no key, a 2 MB upload', app: 'main', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.padded(2 * MIB) }], '/v1/uploads', {}), status: 404, code: 'ROUTE_NOT_FOUND' }
]

const apps = {} as Record<Case['app'], { t: TestApp, port: number }>
const fixtures = {} as Fixtures
const rows: string[] = []

beforeAll(async () => {
  const images = new ImageFactory()
  try {
    fixtures.jpeg = await images.make('jpeg', { width: 64, height: 48, tags: CAMERA_TAGS })
  } finally {
    await images.close()
  }
  // A JPEG followed by zero bytes (its readers stop at its end marker): a file of any size.
  fixtures.padded = (bytes) => Buffer.concat([fixtures.jpeg, Buffer.alloc(bytes - fixtures.jpeg.length)])
  const start = async (overrides: Parameters<typeof createTestApp>[0]): Promise<{ t: TestApp, port: number }> => {
    const t = await createTestApp(overrides)
    return { t, port: Number(new URL(await listen(t)).port) }
  }
  apps.main = await start({})
  apps.small = await start({ maxImageBytes: SMALL_LIMIT, maxUploadBytes: SMALL_LIMIT })
  apps.limited = await start({ rateLimits: { chatPerMinute: 0, metadataPerMinute: 1 } })
})

afterAll(async () => {
  console.log(`early answers, then a second request on the same connection:\n${rows.join('\n')}`)
  for (const { t } of Object.values(apps)) await t.close()
})

const describeOutcome = (outcome: RawOutcome): string => (isAnswer(outcome)
  ? `${outcome.status} ${(JSON.parse(outcome.body || '{}') as { code?: string }).code ?? ''} in ${outcome.ms.toFixed(0)} ms (connection: ${outcome.headers['connection'] ?? '-'})`
  : 'closed' in outcome ? `closed after ${outcome.ms.toFixed(0)} ms` : `nothing after ${outcome.ms.toFixed(0)} ms`) +
  (outcome.stalled === true ? ', the body never sent whole' : '')

describe('an answer before the body has been read whole', () => {
  it.each(CASES)('$name: $status $code, then the connection serves the next request or closes', async ({ app, request, status, code, next }) => {
    const { port, t } = apps[app]
    if (app === 'limited') {
      // The one request a minute the limited app allows, spent.
      const spent = await fetch(`http://127.0.0.1:${port}/v1/metadata`, { method: 'POST', headers: AUTH })
      expect(spent.status).toBe(400)
    }
    const connection = await RawConnection.open(port)
    try {
      const first = request(fixtures)
      const answer = await connection.exchange(first.head, first.body, 20_000)
      let second: RawOutcome | 'closed as announced' | undefined
      try {
        if (!isAnswer(answer)) throw new Error(`no answer: ${describeOutcome(answer)}`)
        expect({ status: answer.status, code: (JSON.parse(answer.body) as { code: string }).code }).toEqual({ status, code })
        if (answer.headers['connection'] === 'close') {
          // Said it closes: it must, at once, whatever the client goes on sending.
          expect(await connection.closed(5000)).toBe(true)
          second = 'closed as announced'
          return
        }
        // Kept open: the body must have been taken whole, the rest of it read and thrown away.
        expect(answer.stalled, 'the server stopped reading the body, and kept the connection').toBeUndefined()
        const follow = next?.(fixtures) ?? { head: requestHead('GET', '/health/live'), body: [], status: 200 }
        second = await connection.exchange(follow.head, follow.body, 5000)
        expect(isAnswer(second) ? second.status : describeOutcome(second)).toBe(follow.status)
      } finally {
        rows.push(`  ${first.head.split(' ', 2).join(' ')} (${app}) → ${describeOutcome(answer)}; next: ${typeof second === 'string' ? second : second === undefined ? '-' : describeOutcome(second)}`)
      }
    } finally {
      connection.destroy()
    }
    expect(await t.scratchFiles()).toEqual([])
  }, 60_000)
})

describe('an answer to a client that is still sending', () => {
  it('reaches a client that reads it only later: the connection is closed in stages, not reset', async () => {
    // A client busy sending reads its answer late. A server that closes the connection whole as soon as it has
    // answered makes the kernel answer the bytes still arriving with a reset, which throws the unread answer away.
    const socket = connect(apps.main.port, '127.0.0.1')
    await once(socket, 'connect')
    socket.pause()
    const state = { sending: true }
    const errors: string[] = []
    socket.on('error', (error: NodeJS.ErrnoException) => { errors.push(error.code ?? error.message) })
    socket.on('close', () => { state.sending = false })
    socket.on('end', () => { state.sending = false })
    // The server's end of the connection, or a reset.
    const gone = new Promise((resolve) => { socket.once('end', resolve).once('close', resolve) })
    socket.write(requestHead('POST', '/v1/metadata', { ...MULTIPART, 'transfer-encoding': 'chunked' }))
    const piece = Buffer.concat(chunked(Buffer.alloc(64 * 1024, 'x')).slice(0, 3))
    const pump = (): void => {
      let room = true
      while (state.sending && room) room = socket.write(piece)
    }
    socket.on('drain', pump)
    pump()
    await new Promise((resolve) => setTimeout(resolve, 300))
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1') })
    socket.resume()
    await gone
    state.sending = false
    socket.destroy()
    const [head = '', body = ''] = text.split('\r\n\r\n')
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized')
    expect(head.toLowerCase()).toContain('\r\nconnection: close')
    expect((JSON.parse(body) as { code: string }).code).toBe('UNAUTHORIZED')
    expect(errors).toEqual([])
  }, 20_000)
})
