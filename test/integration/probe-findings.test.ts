import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { receiveImage } from '../../src/metadata/intake.ts'
import { SNIFF_HEAD_BYTES, sniffHead } from '../../src/metadata/sniff.ts'
import { API_KEY, AUTH, createTestApp, imageForm, listen, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, dataUri, ImageFactory } from '../support/images.ts'

// The findings of an outside probe of the service, one describe each: what a client sees on the wire when it sends
// what the probe sent. Servers listen on real loopback ports; malformed HTTP and slow clients go over raw sockets.

/** Small enough to keep the timing tests short, large enough for a loaded CI machine to send a request in time. */
const REQUEST_TIMEOUT_MS = 1500
const HEADERS_TIMEOUT_MS = 1000
/** Node checks the timeouts once a second (src/app.ts: connectionsCheckingInterval), so a cut-off comes that late. */
const CHECK_INTERVAL_MS = 1000
const SLACK_MS = 1500

let images: ImageFactory
let jpeg: Buffer

beforeAll(async () => {
  images = new ImageFactory()
  jpeg = await images.make('jpeg', { width: 320, height: 240, tags: CAMERA_TAGS })
})
afterAll(async () => {
  await images.close()
})

/** A test app (createTestApp with these overrides) listening on a loopback port. */
async function startApp (overrides: Parameters<typeof createTestApp>[0] = {}): Promise<{ t: TestApp, base: string, port: number }> {
  const t = await createTestApp(overrides)
  const base = await listen(t)
  return { t, base, port: Number(new URL(base).port) }
}

/** Log lines at error level (50) or above: none may come from a client's mistake. */
function errorLines (t: TestApp, from = 0): string[] {
  return t.logs.slice(from).filter((line) => (JSON.parse(line) as { level: number }).level >= 50)
}

interface RawAnswer {
  /** Everything the server wrote before it closed the connection. */
  text: string
  /** How long after the connection was made the server closed it. */
  closedAfterMs: number
}

/** A raw connection: what is written, as written; the answer is whatever comes back until the server closes. */
class RawClient {
  readonly socket: Socket
  readonly closed: Promise<RawAnswer>
  #received = ''
  #startedAt = 0

  constructor (port: number) {
    this.socket = connect({ port, host: '127.0.0.1' })
    this.socket.setEncoding('latin1')
    this.socket.on('data', (chunk: string) => { this.#received += chunk })
    // A reset is a close too; the tests look at when it happened and what came before it.
    this.socket.on('error', () => {})
    this.closed = new Promise((resolve) => {
      this.socket.on('close', () => { resolve({ text: this.#received, closedAfterMs: Date.now() - this.#startedAt }) })
    })
  }

  async connected (): Promise<this> {
    if (this.socket.connecting) await new Promise((resolve) => this.socket.once('connect', resolve))
    this.#startedAt = Date.now()
    return this
  }

  write (bytes: string | Buffer): void {
    this.socket.write(bytes)
  }
}

async function rawExchange (port: number, bytes: string | Buffer): Promise<RawAnswer> {
  const client = await new RawClient(port).connected()
  client.write(bytes)
  return await client.closed
}

interface ParsedAnswer {
  status: number
  headers: Record<string, string>
  body: unknown
}

function parseAnswer (text: string): ParsedAnswer {
  const split = text.indexOf('\r\n\r\n')
  expect(split, `an HTTP answer, got ${JSON.stringify(text.slice(0, 200))}`).toBeGreaterThan(0)
  const [statusLine, ...headerLines] = text.slice(0, split).split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of headerLines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(text.slice(split + 4)) }
}

function envelope (statusCode: number, code: string, error: string, message: string): Record<string, unknown> {
  return { statusCode, code, error, message }
}

// ---------------------------------------------------------------------------------------------------------------------

describe('malformed multipart bodies', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  const part = (boundary: string, eol = '\r\n'): string =>
    `--${boundary}${eol}Content-Disposition: form-data; name="image"; filename="a.jpg"${eol}Content-Type: image/jpeg${eol}${eol}` +
    `not really a jpeg${eol}`

  const cases: Array<[string, string, string, string]> = [
    ['no boundary', 'multipart/form-data', `${part('b')}--b--\r\n`, 'the Content-Type names no boundary'],
    ['an empty boundary', 'multipart/form-data; boundary=', `${part('b')}--b--\r\n`, 'the boundary must be 1 to 70 characters long'],
    ['an empty quoted boundary', 'multipart/form-data; boundary=""', `${part('b')}--b--\r\n`, 'the boundary must be 1 to 70 characters long'],
    ['two boundaries', 'multipart/form-data; boundary=b; boundary=c', `${part('b')}--b--\r\n`, 'the Content-Type names more than one boundary'],
    ['a boundary the body does not use', 'multipart/form-data; boundary=expected', `${part('other')}--other--\r\n`,
      'the body ended before its closing boundary, or its parts do not match the boundary (lines must end with CRLF)'],
    ['no closing boundary', 'multipart/form-data; boundary=b', part('b'),
      'the body ended before its closing boundary, or its parts do not match the boundary (lines must end with CRLF)'],
    ['LF-only line endings', 'multipart/form-data; boundary=b', `${part('b', '\n')}--b--\n`,
      'the body ended before its closing boundary, or its parts do not match the boundary (lines must end with CRLF)'],
    ['a body that is not multipart', 'multipart/form-data; boundary=b', '{"image": "data:image/jpeg;base64,AAAA"}',
      'the body ended before its closing boundary, or its parts do not match the boundary (lines must end with CRLF)']
  ]

  it.each(cases)('%s: 400 MALFORMED_MULTIPART, logged below error level', async (_case, contentType, body, problem) => {
    const before = app.t.logs.length
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: { ...AUTH, 'content-type': contentType }, body })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual(envelope(400, 'MALFORMED_MULTIPART', 'Bad Request', `The multipart body is malformed: ${problem}`))
    const lines = app.t.logs.slice(before)
    expect(lines.some((line) => line.includes('"code":"MALFORMED_MULTIPART"'))).toBe(true)
    expect(errorLines(app.t, before)).toEqual([])
    expect(lines.join('')).not.toMatch(/"stack"/)
    expect(await app.t.scratchFiles()).toEqual([])
  })

  it('a well-formed upload on the same server still answers 200', async () => {
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: imageForm(jpeg) })
    expect(response.status).toBe(200)
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('slow and incomplete requests', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => {
    app = await startApp({
      connections: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS, keepAliveTimeoutMs: 5000, maxConnections: 1024 }
    })
  })
  afterAll(async () => { await app.t.close() })

  const requestHead = (contentLength: number): string =>
    'POST /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `Authorization: Bearer ${API_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`

  const timedOut = envelope(408, 'REQUEST_TIMEOUT', 'Request Timeout',
    `The request was not received in time: its headers must arrive within ${HEADERS_TIMEOUT_MS / 1000} seconds, all of it within ${REQUEST_TIMEOUT_MS / 1000} seconds`)

  it('a Content-Length larger than the body sent: 408 in the envelope within the request timeout', async () => {
    const before = app.t.logs.length
    const answer = await rawExchange(app.port, `${requestHead(1000)}{"image":"data:image/jpeg;base64,`)
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50)
    expect(answer.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + SLACK_MS)
    const parsed = parseAnswer(answer.text)
    expect(parsed.status).toBe(408)
    expect(parsed.headers['connection']).toBe('close')
    expect(parsed.body).toEqual(timedOut)
    expect(errorLines(app.t, before)).toEqual([])
  })

  it('a body trickling at one byte a second: cut off within the request timeout', async () => {
    const client = await new RawClient(app.port).connected()
    client.write(requestHead(1000))
    const trickle = setInterval(() => { if (!client.socket.destroyed) client.write('A') }, 1000)
    let answer: RawAnswer
    try {
      answer = await client.closed
    } finally {
      clearInterval(trickle)
    }
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50)
    expect(answer.closedAfterMs).toBeLessThan(REQUEST_TIMEOUT_MS + CHECK_INTERVAL_MS + SLACK_MS)
    const parsed = parseAnswer(answer.text)
    expect(parsed.status).toBe(408)
    expect(parsed.body).toEqual(timedOut)
  })

  it('neither was logged as an error of the service', () => {
    expect(errorLines(app.t)).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('idle connections and the connection cap', () => {
  const MAX_CONNECTIONS = 20
  const KEEP_ALIVE_MS = 1000
  const KEEP_ALIVE_BUFFER_MS = 1000
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => {
    app = await startApp({
      // A request timeout far longer than the headers timeout: what closes these connections is the latter.
      connections: { requestTimeoutMs: 10_000, headersTimeoutMs: HEADERS_TIMEOUT_MS, keepAliveTimeoutMs: KEEP_ALIVE_MS, maxConnections: MAX_CONNECTIONS }
    })
  })
  afterAll(async () => { await app.t.close() })

  it('headers trickling in: cut off within the headers timeout', async () => {
    const client = await new RawClient(app.port).connected()
    client.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n')
    const trickle = setInterval(() => { if (!client.socket.destroyed) client.write('X-Slow: a\r\n') }, 200)
    let answer: RawAnswer
    try {
      answer = await client.closed
    } finally {
      clearInterval(trickle)
    }
    expect(answer.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + CHECK_INTERVAL_MS + SLACK_MS)
    expect(parseAnswer(answer.text).status).toBe(408)
  })

  it('of 200 idle connections, those past MAX_CONNECTIONS are closed at once, the rest after the headers timeout', async () => {
    const idle = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, async () => await new RawClient(app.port).connected()))
    // Let the server accept them before the next ones arrive.
    await new Promise((resolve) => setTimeout(resolve, 100))
    const excess = await Promise.all(Array.from({ length: 200 - MAX_CONNECTIONS }, async () => await new RawClient(app.port).connected()))
    const refused = await Promise.all(excess.map(async (client) => await client.closed))
    for (const answer of refused) {
      expect(answer.text).toBe('')
      expect(answer.closedAfterMs).toBeLessThan(500)
    }
    expect(idle.every((client) => !client.socket.destroyed)).toBe(true)

    const closed = await Promise.all(idle.map(async (client) => await client.closed))
    for (const answer of closed) {
      expect(answer.closedAfterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50)
      expect(answer.closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + CHECK_INTERVAL_MS + SLACK_MS)
      const parsed = parseAnswer(answer.text)
      expect(parsed.status).toBe(408)
      expect(parsed.body).toMatchObject({ statusCode: 408, code: 'REQUEST_TIMEOUT' })
    }
    // Room again: a new connection is served.
    expect((await fetch(`${app.base}/health/live`)).status).toBe(200)
  })

  it('a keep-alive connection idle after its answer is closed after the keep-alive timeout', async () => {
    const client = await new RawClient(app.port).connected()
    client.write('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n')
    const answer = await client.closed
    expect(answer.text).toMatch(/^HTTP\/1\.1 200 /)
    // Node 24 waits keepAliveTimeoutBuffer (1 s) past the timeout it announces, for clients that reuse a
    // connection at the last moment.
    expect(answer.closedAfterMs).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50)
    expect(answer.closedAfterMs).toBeLessThan(KEEP_ALIVE_MS + KEEP_ALIVE_BUFFER_MS + SLACK_MS)
  })
})

// ---------------------------------------------------------------------------------------------------------------------

/** A little-endian TIFF: `directories` IFDs of `entriesPerDirectory` entries each, chained, then 16×16 grey pixels. */
function tiffWithDirectories (directories: number, entriesPerDirectory: number): Buffer {
  const directoryBytes = 2 + entriesPerDirectory * 12 + 4
  const pixelsAt = 8 + directories * directoryBytes
  const width = 16
  const height = 16
  const file = Buffer.alloc(pixelsAt + width * height)
  file.write('II*\0', 0, 'latin1')
  file.writeUInt32LE(8, 4)
  const baseline: Array<[number, number]> = [
    [0x0100, width], [0x0101, height], [0x0102, 8], [0x0103, 1], [0x0106, 1],
    [0x0111, pixelsAt], [0x0115, 1], [0x0116, height], [0x0117, width * height]
  ]
  for (let d = 0; d < directories; d++) {
    const at = 8 + d * directoryBytes
    file.writeUInt16LE(entriesPerDirectory, at)
    for (let e = 0; e < entriesPerDirectory; e++) {
      const entry = at + 2 + e * 12
      // The baseline tags a reader needs, then private tags (SHORT, one value each) to fill the directory.
      const [tag, value] = baseline[e] ?? [0x0200 + e, e & 0xffff]
      file.writeUInt16LE(tag, entry)
      file.writeUInt16LE(tag === 0x0111 || tag === 0x0117 ? 4 : 3, entry + 2)
      file.writeUInt32LE(1, entry + 4)
      file.writeUInt32LE(value, entry + 8)
    }
    file.writeUInt32LE(d + 1 < directories ? at + directoryBytes : 0, at + 2 + entriesPerDirectory * 12)
  }
  return file
}

describe('TIFF structures that tie up ExifTool', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  // One ExifTool process: a hostile file that reached it would hold up the normal image behind it.
  beforeAll(async () => { app = await startApp({ exiftool: { procs: 1, taskTimeoutMs: 10_000, maxQueue: 64 } }) })
  afterAll(async () => { await app.t.close() })

  let wide: Buffer
  let chained: Buffer
  beforeAll(() => {
    wide = tiffWithDirectories(1, 60_000)
    chained = tiffWithDirectories(1_900, 900)
  })

  it('builds the probe\'s files: a 720 KB TIFF with a 60,000-entry IFD, and 21 MB of chained IFDs', () => {
    expect(wide.length).toBeGreaterThan(720_000)
    expect(chained.length).toBeGreaterThan(20_500_000)
  })

  it('refuses both with 415 IMAGE_TOO_COMPLEX at once, while a normal JPEG sent alongside answers 200', async () => {
    const started = Date.now()
    const timed = async (body: FormData, query = ''): Promise<{ status: number, body: unknown, ms: number }> => {
      const response = await fetch(`${app.base}/v1/metadata${query}`, { method: 'POST', headers: AUTH, body })
      return { status: response.status, body: await response.json(), ms: Date.now() - started }
    }
    const [wideAnswer, chainedAnswer, normal] = await Promise.all([
      timed(imageForm(wide, 'wide.tif'), '?full=true'),
      timed(imageForm(chained, 'chained.tif'), '?full=true'),
      timed(imageForm(jpeg))
    ])
    expect(wideAnswer.status).toBe(415)
    expect(wideAnswer.body).toEqual(envelope(415, 'IMAGE_TOO_COMPLEX', 'Unsupported Media Type',
      'The image\'s structure is beyond what the service reads: a TIFF directory of 60000 entries (at most 1000)'))
    expect(chainedAnswer.status).toBe(415)
    expect(chainedAnswer.body).toEqual(envelope(415, 'IMAGE_TOO_COMPLEX', 'Unsupported Media Type',
      'The image\'s structure is beyond what the service reads: more than 64 TIFF directories'))
    expect(Math.max(wideAnswer.ms, chainedAnswer.ms)).toBeLessThan(5000)
    expect(normal.status).toBe(200)
    expect(normal.ms).toBeLessThan(5000)
    expect(await app.t.scratchFiles()).toEqual([])
    expect(errorLines(app.t)).toEqual([])
  })

  it('the same directories inside a JPEG\'s Exif block are refused too', async () => {
    // APP1 "Exif\0\0" holding a TIFF whose IFD0 claims 5,000 entries (its segment is at most 64 KiB).
    const tiff = tiffWithDirectories(1, 5000).subarray(0, 65_000)
    tiff.writeUInt16LE(5000, 8)
    const app1 = Buffer.concat([Buffer.from([0xff, 0xe1, 0, 0]), Buffer.from('Exif\0\0', 'latin1'), tiff])
    app1.writeUInt16BE(app1.length - 2, 2)
    const hostile = Buffer.concat([jpeg.subarray(0, 2), app1, jpeg.subarray(2)])
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: imageForm(hostile) })
    expect(response.status).toBe(415)
    expect(await response.json()).toMatchObject({ code: 'IMAGE_TOO_COMPLEX', message: expect.stringContaining('5000 entries') })
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('a JPEG whose size header comes after 20 MB of comment segments', () => {
  const comment = Buffer.concat([Buffer.from([0xff, 0xfe, 0xff, 0xff]), Buffer.alloc(0xfffd, 0x20)])
  let padded: Buffer
  beforeAll(() => {
    padded = Buffer.concat([jpeg.subarray(0, 2), ...Array.from({ length: 320 }, () => comment), jpeg.subarray(2)])
  })

  it('is recognised from its head alone, without a size (ExifTool sizes it)', () => {
    expect(padded.length).toBeGreaterThan(20_000_000)
    expect(sniffHead(padded.subarray(0, SNIFF_HEAD_BYTES), false)).toEqual({ format: 'jpeg' })
  })

  it('streams to disk while it arrives: the intake never holds more than its head and one write batch', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'probe-intake-'))
    const chunk = 64 * 1024
    let path: string | undefined
    let writtenWhileArriving = 0
    async function * arriving (): AsyncGenerator<Buffer> {
      for (let at = 0; at < padded.length; at += chunk) {
        yield padded.subarray(at, at + chunk)
        // 4 MiB in: well past the head and a write batch, so most of what has arrived must be on disk already.
        if (at === 64 * chunk) {
          const [name] = await readdir(dir)
          if (name !== undefined) writtenWhileArriving = (await stat(join(dir, name))).size
        }
      }
    }
    try {
      const stored = await receiveImage(arriving(), { scratchFile: (extension) => (path = join(dir, `upload.${extension}`)), maxBytes: 64 * 1024 * 1024 })
      expect(stored).toMatchObject({ path, sizeBytes: padded.length, sniffed: { format: 'jpeg' } })
      expect(stored.sniffed.width).toBeUndefined()
      expect(writtenWhileArriving).toBeGreaterThanOrEqual(2 * 1024 * 1024)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('answers 200 with the resolution ExifTool reads', async () => {
    const app = await startApp()
    try {
      const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: imageForm(padded, 'commented.jpg') })
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ format: 'jpeg', resolution: { width: 320, height: 240 }, filesize_bytes: padded.length })
    } finally {
      await app.t.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('requests that break the protocol or the routes', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp({ logLevel: 'trace' }) })
  afterAll(async () => { await app.t.close() })

  const notHttp = envelope(400, 'BAD_REQUEST', 'Bad Request', 'The request is not valid HTTP/1.1')
  const cases: Array<[string, string, number, Record<string, unknown>]> = [
    ['bad chunked encoding',
      'POST /v1/chat/send HTTP/1.1\r\nHost: 127.0.0.1\r\n' + `Authorization: Bearer ${API_KEY}\r\n` +
      'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{"message":"hi"}\r\n0\r\n\r\n', 400, notHttp],
    ['a garbage request line', 'HELLO THERE\r\n\r\n', 400, notHttp],
    ['a NUL in a header', 'GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Probe: a\0b\r\n\r\n', 400, notHttp],
    ['a 20 KB header', `GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Probe: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 431,
      envelope(431, 'HEADERS_TOO_LARGE', 'Request Header Fields Too Large', 'The request headers are too large')],
    ['a method HTTP does not know', 'FROB /v1/metadata HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 400, notHttp]
  ]

  it.each(cases)('%s: the envelope, then the connection is closed', async (_case, request, status, body) => {
    const before = app.t.logs.length
    const answer = await rawExchange(app.port, request)
    const parsed = parseAnswer(answer.text)
    expect(parsed.status).toBe(status)
    expect(parsed.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(parsed.headers['cache-control']).toBe('no-store')
    expect(parsed.headers['x-content-type-options']).toBe('nosniff')
    expect(parsed.headers['connection']).toBe('close')
    expect(parsed.body).toEqual(body)
    expect(errorLines(app.t, before)).toEqual([])
  })

  it.each([
    ['a method HTTP knows that no route takes', 'PROPFIND', '/v1/metadata'],
    ['a method the route does not take', 'DELETE', '/v1/metadata']
  ])('%s: 404 ROUTE_NOT_FOUND in the envelope', async (_case, method, path) => {
    const answer = await rawExchange(app.port, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
    const parsed = parseAnswer(answer.text)
    expect(parsed.status).toBe(404)
    expect(parsed.body).toEqual(envelope(404, 'ROUTE_NOT_FOUND', 'Not Found', `Route ${method}:${path} not found`))
  })

  it('a conversation id over 128 characters: 400 VALIDATION_ERROR, the path not echoed', async () => {
    const id = 'x'.repeat(300)
    const response = await fetch(`${app.base}/v1/chat/conversations/${id}`, { headers: AUTH })
    expect(response.status).toBe(400)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual(envelope(400, 'VALIDATION_ERROR', 'Bad Request', 'A path parameter is longer than 128 characters'))
    expect(text).not.toContain('xxxxxxxx')
    expect(text).not.toContain('FST_')
  })

  it('a path that does not decode: 400 BAD_REQUEST, the path not echoed', async () => {
    const answer = await rawExchange(app.port, `GET /v1/chat/conversations/%E0%A4%A HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${AUTH.authorization}\r\nConnection: close\r\n\r\n`)
    const parsed = parseAnswer(answer.text)
    expect(parsed.status).toBe(400)
    expect(parsed.body).toEqual(envelope(400, 'BAD_REQUEST', 'Bad Request', 'The request path is not a valid URL path'))
    expect(answer.text).not.toContain('%E0')
    expect(answer.text).not.toContain('FST_')
  })

  it('more multipart fields than allowed: 400 TOO_MANY_FIELDS', async () => {
    const form = imageForm(jpeg)
    for (let index = 0; index < 17; index++) form.append(`field${index}`, 'value')
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: form })
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual(envelope(400, 'TOO_MANY_FIELDS', 'Bad Request',
      'The multipart body has too many parts; send the file "image" and at most 16 other fields'))
  })

  it('sixteen multipart fields are still taken', async () => {
    const form = imageForm(jpeg)
    for (let index = 0; index < 16; index++) form.append(`field${index}`, 'value')
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: form })
    expect(response.status).toBe(200)
  })

  it.each(['__proto__', 'constructor'])('a multipart field named %s: 400 FORBIDDEN_KEY', async (name) => {
    const form = imageForm(jpeg)
    form.append(name, '{"polluted":true}')
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: form })
    expect(response.status).toBe(400)
    const text = await response.text()
    expect(JSON.parse(text)).toEqual(envelope(400, 'FORBIDDEN_KEY', 'Bad Request',
      'The request uses the name of a property every object has (such as "__proto__" or "constructor") for a multipart field, ' +
      'which is refused: it could change the prototype of every object'))
    expect(text).not.toContain('FST_')
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined()
  })

  it('no framework code or error-level line came out of any of it', () => {
    expect(errorLines(app.t)).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('JSON bodies', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  const postJson = async (path: string, body: string): Promise<Response> =>
    await fetch(`${app.base}${path}`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body })

  it.each([
    ['an array of data URIs', () => ({ image: [dataUri(jpeg, 'image/jpeg')] })],
    ['a number', () => ({ image: 123 })],
    ['an object', () => ({ image: { data: dataUri(jpeg, 'image/jpeg') } })],
    ['true', () => ({ image: true })]
  ])('"image" as %s: 400 VALIDATION_ERROR, not coerced', async (_case, body) => {
    const response = await postJson('/v1/metadata', JSON.stringify(body()))
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual(envelope(400, 'VALIDATION_ERROR', 'Bad Request', 'body/image must be string'))
  })

  const forbidden = envelope(400, 'FORBIDDEN_KEY', 'Bad Request',
    'The request uses the name "__proto__" or "constructor.prototype", which is refused: it could change the prototype of every object')

  it.each([
    ['__proto__', (image: string) => `{"image":"${image}","__proto__":{"polluted":true}}`],
    ['nested __proto__', (image: string) => `{"image":"${image}","extra":{"__proto__":{"polluted":true}}}`],
    ['constructor.prototype', (image: string) => `{"image":"${image}","constructor":{"prototype":{"polluted":true}}}`]
  ])('a %s key: 400 FORBIDDEN_KEY saying what is refused', async (_case, body) => {
    for (const path of ['/v1/metadata', '/v1/chat/send']) {
      const response = await postJson(path, body(dataUri(jpeg, 'image/jpeg')))
      expect(response.status).toBe(400)
      expect(await response.json()).toEqual(forbidden)
    }
  })

  it('a "constructor" key without "prototype" is only a name', async () => {
    const response = await postJson('/v1/metadata', `{"image":"${dataUri(jpeg, 'image/jpeg')}","constructor":"x"}`)
    expect(response.status).toBe(200)
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('a multipart text field over 64 KiB', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  const withField = (bytes: number): FormData => {
    const form = imageForm(jpeg)
    form.append('description', 'd'.repeat(bytes))
    return form
  }

  it('is refused with 413 FIELD_TOO_LARGE, not cut to fit', async () => {
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: withField(64 * 1024 + 1) })
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual(envelope(413, 'FIELD_TOO_LARGE', 'Payload Too Large',
      'A multipart text field is longer than the limit of 65536 bytes'))
    expect(await app.t.scratchFiles()).toEqual([])
  })

  it('64 KiB exactly is taken', async () => {
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: withField(64 * 1024) })
    expect(response.status).toBe(200)
  })

  it('a field far over the limit is refused the same way', async () => {
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: AUTH, body: withField(1024 * 1024) })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ code: 'FIELD_TOO_LARGE' })
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('headers of answers that carry positions and transcripts', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  /** What every answer says: no cache may keep it, no browser may sniff it into something else. */
  const NEVER_KEPT = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }
  /** What @fastify/helmet adds that fits an API (plugins/security-headers.ts). */
  const HELMET = {
    'content-security-policy': 'default-src \'none\';frame-ancestors \'none\'',
    'x-frame-options': 'SAMEORIGIN',
    'referrer-policy': 'no-referrer',
    'strict-transport-security': 'max-age=31536000; includeSubDomains',
    'cross-origin-resource-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
    'x-permitted-cross-domain-policies': 'none'
  }

  /** Of those, what answers written before any hook runs carry too. */
  const WITHOUT_HOOKS = { 'content-security-policy': HELMET['content-security-policy'], 'referrer-policy': HELMET['referrer-policy'] }

  const headersOf = (response: Response, names: string[]): Record<string, string | null> =>
    Object.fromEntries(names.map((name) => [name, response.headers.get(name)]))

  // The body is made when the test runs: the image does not exist yet when the cases are collected.
  const post = (path: string, init: RequestInit | (() => RequestInit)): (() => Promise<Response>) =>
    async () => await fetch(`${app.base}${path}`, { method: 'POST', ...(typeof init === 'function' ? init() : init) })
  const get = (path: string, init: RequestInit = {}): (() => Promise<Response>) =>
    async () => await fetch(`${app.base}${path}`, init)

  it.each([
    ['200 metadata with a position', post('/v1/metadata', () => ({ headers: AUTH, body: imageForm(jpeg) })), 200],
    ['200 metadata, ?full=true', post('/v1/metadata?full=true', () => ({ headers: AUTH, body: imageForm(jpeg) })), 200],
    ['200 chat reply', post('/v1/chat/send', {
      headers: { ...AUTH, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'where is my order A-10042?', user_id: 'u1' })
    }), 200],
    ['401', post('/v1/metadata', {}), 401],
    ['400 malformed multipart', post('/v1/metadata', { headers: { ...AUTH, 'content-type': 'multipart/form-data' }, body: 'x' }), 400],
    ['400 invalid JSON', post('/v1/chat/send', { headers: { ...AUTH, 'content-type': 'application/json' }, body: '{' }), 400],
    ['404 conversation', get('/v1/chat/conversations/6f1c0a52-4a1e-4df4-9d43-1d2f0f1f6a80?user_id=u1', { headers: AUTH }), 404],
    ['404 route', get('/nowhere'), 404],
    ['415', post('/v1/metadata', { headers: { ...AUTH, 'content-type': 'text/csv' }, body: 'a,b' }), 415]
  ])('on a %s: no-store, nosniff and helmet\'s headers', async (_case, send, status) => {
    const response = await send()
    expect(response.status).toBe(status)
    expect(headersOf(response, [...Object.keys(NEVER_KEPT), ...Object.keys(HELMET)])).toEqual({ ...NEVER_KEPT, ...HELMET })
    expect(response.headers.get('x-powered-by')).toBeNull()
    await response.arrayBuffer()
  })

  it.each([
    ['a parameter over 128 characters', `/v1/chat/conversations/${'y'.repeat(200)}`],
    ['a path that does not decode', '/v1/chat/conversations/%E0%A4%A']
  ])('on the router\'s refusal of %s (before any hook runs): no-store, nosniff, the CSP, no referrer and the request id', async (_case, path) => {
    const answer = parseAnswer((await rawExchange(app.port, `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: probe-7\r\nConnection: close\r\n\r\n`)).text)
    expect(answer.status).toBe(400)
    expect(answer.headers).toMatchObject({ ...NEVER_KEPT, ...WITHOUT_HOOKS, 'x-request-id': 'probe-7' })
  })

  it('on an answer written straight to the socket (a request Node cannot parse): no-store, nosniff, the CSP, no referrer', async () => {
    const answer = parseAnswer((await rawExchange(app.port, 'HELLO THERE\r\n\r\n')).text)
    expect(answer.status).toBe(400)
    expect(answer.headers).toMatchObject({ ...NEVER_KEPT, ...WITHOUT_HOOKS })
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('an API key in the query string', () => {
  const KEY_IN_URL = 'probe-query-key-3c9b71'
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp({ apiKeys: [API_KEY, KEY_IN_URL], logLevel: 'trace' }) })
  afterAll(async () => { await app.t.close() })

  const keyInUrl = envelope(401, 'UNAUTHORIZED', 'Unauthorized',
    'Unauthorized: send the API key in the Authorization header (Authorization: Bearer <key>), never in the URL')

  it.each(['api_key', 'apikey', 'api-key', 'access_token', 'API_KEY', 'token'])('?%s= is never a credential: 401 saying where the key goes', async (name) => {
    // A key that is valid, and one that is not: neither gets in through the URL.
    for (const key of [KEY_IN_URL, 'not-a-key']) {
      for (const headers of [{}, { authorization: 'Bearer not-a-key-either' }]) {
        const response = await fetch(`${app.base}/v1/metadata?full=true&${name}=${key}`, { method: 'POST', headers, body: imageForm(jpeg) })
        expect(response.status).toBe(401)
        expect(response.headers.get('www-authenticate')).toBe('Bearer')
        expect(await response.json()).toEqual(keyInUrl)
      }
    }
  })

  it('with a valid key in the Authorization header, the one in the URL is ignored', async () => {
    const response = await fetch(`${app.base}/v1/metadata?api_key=${KEY_IN_URL}`, { method: 'POST', headers: AUTH, body: imageForm(jpeg) })
    expect(response.status).toBe(200)
  })

  it('any other query parameter without a key is the plain 401', async () => {
    const response = await fetch(`${app.base}/v1/metadata?full=true&keys=1`, { method: 'POST', body: imageForm(jpeg) })
    expect(response.status).toBe(401)
    expect(await response.json()).toEqual(envelope(401, 'UNAUTHORIZED', 'Unauthorized', 'Unauthorized'))
  })

  it('nor does the Authorization header, even at trace level, where the multipart parser logs the headers', async () => {
    const before = app.t.logs.length
    const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: { authorization: `Bearer ${KEY_IN_URL}` }, body: imageForm(jpeg) })
    expect(response.status).toBe(200)
    const lines = app.t.logs.slice(before)
    expect(lines.some((line) => line.includes('busboyOptions') && line.includes('[redacted]'))).toBe(true)
    expect(lines.filter((line) => line.includes(KEY_IN_URL))).toEqual([])
  })

  it('never reaches a log line, whatever the route and answer', async () => {
    const before = app.t.logs.length
    const urls = [
      `/v1/metadata?api_key=${KEY_IN_URL}`,
      `/api/v1/metadata?api_key=${KEY_IN_URL}`,
      `/v1/chat/conversations/abc?api_key=${KEY_IN_URL}`,
      `/v1/chat/conversations/${'z'.repeat(200)}?api_key=${KEY_IN_URL}`,
      `/v1/chat/conversations/%E0%A4%A?api_key=${KEY_IN_URL}`,
      `/health/live?api_key=${KEY_IN_URL}`,
      `/nowhere?api_key=${KEY_IN_URL}`,
      `/v1/metadata?full=true&token=${KEY_IN_URL}`
    ]
    for (const url of urls) {
      await rawExchange(app.port, `GET ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
      await (await fetch(`${app.base}${url}`, { method: 'POST', headers: { 'content-type': 'multipart/form-data; boundary=b' }, body: 'x' })).arrayBuffer()
    }
    const lines = app.t.logs.slice(before)
    expect(lines.length).toBeGreaterThanOrEqual(urls.length)
    expect(lines.filter((line) => line.includes(KEY_IN_URL))).toEqual([])
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('failed authentication in bulk', () => {
  const N = 400
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  it(`${N} failed-auth requests write at most ${N} log lines, none with the key sent`, async () => {
    const before = app.t.logs.length
    const attempts = Array.from({ length: N }, (_, index) => {
      const key = `wrong-key-${index}-a7f3`
      switch (index % 4) {
        case 0: return { key, headers: { authorization: `Bearer ${key}` } }
        case 1: return { key, headers: { authorization: `Basic ${key}` } }
        case 2: return { key, headers: { authorization: key } }
        default: return { key: undefined, headers: {} }
      }
    })
    for (let at = 0; at < N; at += 20) {
      await Promise.all(attempts.slice(at, at + 20).map(async ({ headers }) => {
        const response = await fetch(`${app.base}/v1/metadata`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' })
        expect(response.status).toBe(401)
        await response.arrayBuffer()
      }))
    }
    const lines = app.t.logs.slice(before)
    expect(lines.length).toBeGreaterThan(0)
    expect(lines.length).toBeLessThanOrEqual(N)
    const keys = attempts.flatMap(({ key }) => key === undefined ? [] : [key])
    expect(lines.filter((line) => keys.some((key) => line.includes(key)))).toEqual([])
    expect(lines.every((line) => (JSON.parse(line) as { level: number }).level <= 30)).toBe(true)
  })
})

// ---------------------------------------------------------------------------------------------------------------------

describe('?full=true', () => {
  let app: Awaited<ReturnType<typeof startApp>>
  beforeAll(async () => { app = await startApp() })
  afterAll(async () => { await app.t.close() })

  it('lists the image\'s tags but nothing about the ExifTool that read them', async () => {
    const response = await fetch(`${app.base}/v1/metadata?full=true`, { method: 'POST', headers: AUTH, body: imageForm(jpeg) })
    expect(response.status).toBe(200)
    const text = await response.text()
    const body = JSON.parse(text) as { tags: Record<string, unknown> }
    expect(body.tags).toHaveProperty('IFD0')
    expect(Object.keys(body.tags)).not.toContain('ExifTool')
    expect(text).not.toContain('ExifToolVersion')
    expect(text).not.toMatch(/"ExifTool"/)
  })
})
