import { once } from 'node:events'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, imageForm, listen, multipart, type TestApp } from '../support/app.ts'
import { bareProvenance, CAMERA_TAGS, dataUri, ImageFactory, largePng, PICTURE_FORMATS, type PictureFormat } from '../support/images.ts'
import { until } from '../support/processes.ts'

// The real server on a real port, called with real HTTP clients (fetch and node:http).
let t: TestApp
let small: TestApp
let images: ImageFactory
let base: string
let smallBase: string
const fixtures = new Map<PictureFormat, Buffer>()

const SMALL_LIMIT = 1024 * 1024

beforeAll(async () => {
  images = new ImageFactory()
  t = await createTestApp({ exiftool: { procs: 2, taskTimeoutMs: 10_000, maxQueue: 64 } })
  small = await createTestApp({ maxImageBytes: SMALL_LIMIT, maxUploadBytes: SMALL_LIMIT })
  base = await listen(t)
  smallBase = await listen(small)
  for (const format of PICTURE_FORMATS) {
    const tags = { ...CAMERA_TAGS, SubSecTimeOriginal: '25', OffsetTimeOriginal: '+01:00' }
    fixtures.set(format, await images.make(format, { width: 40, height: 30, tags }))
  }
})

afterAll(async () => {
  await images.close()
  await t.close()
  await small.close()
})

const auth = { authorization: `Bearer ${API_KEY}` }

/** What ExifTool writes per format: GIF holds XMP only, where EXIF's separate sub-second and offset tags have no place. */
function expectedDatetime (format: PictureFormat): string {
  return format === 'gif' ? '2008-10-22T16:38:20' : '2008-10-22T16:38:20.25+01:00'
}

describe.each(PICTURE_FORMATS)('%s over HTTP', (format) => {
  const expected = (bytes: Buffer): Record<string, unknown> => ({
    camera: { make: 'NIKON', model: 'COOLPIX P6000' },
    datetime: expectedDatetime(format),
    gps: { latitude: 43.4670816, longitude: 11.8845383, altitude: null },
    resolution: { width: 40, height: 30 },
    format,
    filesize_kb: Math.round(bytes.length / 1024),
    filesize_bytes: bytes.length,
    provenance: bareProvenance(bytes)
  })

  it('as a JSON data URI', async () => {
    const bytes = fixtures.get(format)!
    const response = await fetch(`${base}/v1/metadata`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ image: dataUri(bytes, `image/${format}`) })
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^application\/json/)
    expect(await response.json()).toEqual(expected(bytes))
  })

  it('as a multipart upload', async () => {
    const bytes = fixtures.get(format)!
    const response = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: imageForm(bytes, `photo.${format}`) })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual(expected(bytes))
  })
})

describe('large and concurrent uploads', () => {
  let large: Buffer
  beforeAll(async () => {
    large = await images.rewrite(await largePng(20_000_000), 'png', CAMERA_TAGS)
    expect(large.length).toBeGreaterThan(20_000_000)
  })

  it('takes a 20 MB photo as multipart', async () => {
    const response = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: imageForm(large, 'big.png') })
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toMatchObject({ format: 'png', filesize_bytes: large.length, camera: { make: 'NIKON' } })
    expect(await t.scratchFiles()).toEqual([])
  })

  it('takes a 20 MB photo as multipart with text fields after it, still counting their bytes', async () => {
    // The intake frees each socket chunk it has copied (plugins/multipart.ts): what busboy parses after the file must
    // be untouched by it.
    const withField = (bytes: number): FormData => {
      const form = imageForm(large, 'big.png')
      form.append('description', 'é'.repeat(bytes / 2))
      form.append('note', 'kept')
      return form
    }
    const taken = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: withField(64 * 1024) })
    expect(taken.status).toBe(200)
    expect(await taken.json()).toMatchObject({ filesize_bytes: large.length, camera: { make: 'NIKON' }, provenance: { sha256: bareProvenance(large)['sha256'] } })
    const refused = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: withField(64 * 1024 + 2) })
    expect(refused.status).toBe(413)
    expect(await refused.json()).toMatchObject({ code: 'FIELD_TOO_LARGE' })
    expect(await t.scratchFiles()).toEqual([])
  })

  it('keeps a file intact whose network chunk ends in all but the last byte of the boundary', async () => {
    // busboy keeps those bytes in a buffer of its own (its look-behind). When the next chunk is a lone CR, which could
    // start the boundary again, it passes them on by themselves, as a view of that whole buffer, and reuses the buffer
    // for the CR: the intake must not free it as it frees the socket's chunks (doing so answered 400).
    const boundary = 'chunk-edge-boundary-Q'
    const partial = Buffer.from(`\r\n--${boundary.slice(0, -1)}`)
    const photo = fixtures.get('jpeg')!
    // A JPEG comment segment (FF FE) right after the start of image carries the near-boundary, a CR and an X.
    const comment = Buffer.concat([Buffer.alloc(100, 'c'), partial, Buffer.from('\rX')])
    const segment = Buffer.concat([Buffer.from([0xff, 0xfe, (comment.length + 2) >> 8, (comment.length + 2) & 0xff]), comment])
    const file = Buffer.concat([photo.subarray(0, 2), segment, photo.subarray(2)])
    const head = Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="edge.jpg"\r\ncontent-type: image/jpeg\r\n\r\n`)
    const body = Buffer.concat([head, file, Buffer.from(`\r\n--${boundary}--\r\n`)])
    const cut = head.length + 2 + 4 + 100 + partial.length
    const { port } = new URL(base)
    const socket = connect(Number(port), '127.0.0.1')
    await once(socket, 'connect')
    socket.write(`POST /v1/metadata HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: multipart/form-data; boundary=${boundary}\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`)
    // Three network chunks: up to the near-boundary, then the CR alone, then the rest.
    for (const piece of [body.subarray(0, cut), body.subarray(cut, cut + 1), body.subarray(cut + 1)]) {
      socket.write(piece)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const response = Buffer.concat(await socket.toArray()).toString()
    expect(response).toMatch(/^HTTP\/1\.1 200 /)
    const answer = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>
    expect(answer).toMatchObject({ format: 'jpeg', filesize_bytes: file.length, camera: { make: 'NIKON' }, provenance: { sha256: bareProvenance(file)['sha256'] } })
  })

  it('takes a 20 MB photo as a JSON data URI', async () => {
    const response = await fetch(`${base}/v1/metadata`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ image: dataUri(large, 'image/png') })
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ filesize_bytes: large.length })
  })

  it('answers concurrent requests in every format, each with its own image', async () => {
    const responses = await Promise.all([...fixtures].map(async ([format, bytes]) => {
      const response = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: imageForm(bytes) })
      return { format, bytes, body: await response.json() }
    }))
    for (const { format, bytes, body } of responses) {
      expect(body).toMatchObject({ format, filesize_bytes: bytes.length })
    }
    expect(await t.scratchFiles()).toEqual([])
  })
})

describe('limits while streaming', () => {
  it('refuses an upload over MAX_UPLOAD_BYTES with 413 while it streams, keeping nothing', async () => {
    const oversized = Buffer.concat([fixtures.get('jpeg')!, Buffer.alloc(SMALL_LIMIT * 3)])
    const { payload, headers } = await multipart(imageForm(oversized))
    const response = await rawPost(`${smallBase}/v1/metadata`, { ...auth, ...headers }, payload)
    expect(response.status).toBe(413)
    expect(JSON.parse(response.body)).toEqual({
      statusCode: 413,
      code: 'IMAGE_TOO_LARGE',
      error: 'Payload Too Large',
      message: `The image is larger than the limit of ${SMALL_LIMIT} bytes`
    })
    expect(await small.scratchFiles()).toEqual([])
  })

  it('refuses a JSON body too large for any image with 413', async () => {
    const body = JSON.stringify({ image: dataUri(Buffer.alloc(SMALL_LIMIT * 2), 'image/jpeg') })
    const response = await rawPost(`${smallBase}/v1/metadata`, { ...auth, 'content-type': 'application/json' }, Buffer.from(body))
    expect(response.status).toBe(413)
    expect(JSON.parse(response.body).code).toBe('IMAGE_TOO_LARGE')
  })

  it('removes the partial file of an upload the client abandons, and keeps serving', async () => {
    // Past the first 512 KiB, which the intake holds in memory to decide the format before it opens a file.
    const { payload, headers } = await multipart(imageForm(Buffer.concat([fixtures.get('jpeg')!, Buffer.alloc(1_500_000)])))
    const url = new URL(`${base}/v1/metadata`)
    const request = httpRequest(url, { method: 'POST', headers: { ...auth, ...headers, 'content-length': String(payload.length) } })
    request.on('error', () => {})
    request.write(payload.subarray(0, 900_000))
    await until(async () => (await t.scratchFiles()).length === 1)
    request.destroy()
    await until(async () => (await t.scratchFiles()).length === 0)
    expect(await t.scratchFiles()).toEqual([])

    const response = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: auth, body: imageForm(fixtures.get('png')!) })
    expect(response.status).toBe(200)
  })
})

/** A POST that tolerates the server answering, and closing, before the whole body is sent. */
async function rawPost (url: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number, body: string }> {
  return await new Promise((resolve, reject) => {
    const request = httpRequest(new URL(url), { method: 'POST', headers: { ...headers, 'content-length': String(body.length) } }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString() }) })
      response.on('error', reject)
    })
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error)
    })
    request.end(body)
  })
}
