import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { request } from 'node:http'
import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CAMERA_TAGS, dataUri, ImageFactory } from './support/images.ts'
import { startService, stopService, type ServiceProcess } from './support/servers.ts'

// Camera raw files run to tens or hundreds of megabytes: a multipart upload streams to disk, hashed on the way,
// with bounded memory. The service runs in its own process (npm start's command), so its memory is its own.
const API_KEY = 'large-upload-key'
const MIB = 1024 * 1024
let service: ServiceProcess
let images: ImageFactory
let photo: Buffer

beforeAll(async () => {
  images = new ImageFactory()
  photo = await images.make('jpeg', { width: 320, height: 240, tags: CAMERA_TAGS })
  service = await startService({ API_KEYS: API_KEY, RATE_LIMIT_METADATA_PER_MIN: '0' })
}, 60_000)

afterAll(async () => {
  await stopService(service)
  await images.close()
})

/** The service's resident memory now, from /proc. */
async function residentBytes (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024
}

/**
 * Uploads `photo` followed by `paddingBytes` zero bytes (a JPEG's readers stop at its end marker) as the multipart
 * field `image`, generated as it is sent, so the test never holds the body either; returns the answer and the digest
 * of the file sent.
 */
async function uploadPadded (paddingBytes: number): Promise<{ status: number, body: Record<string, unknown>, sha256: string }> {
  const boundary = 'large-upload-boundary-7f3a'
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="raw.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`)
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  const digest = createHash('sha256').update(photo)
  const zeros = Buffer.alloc(MIB)
  async function * body (): AsyncGenerator<Buffer> {
    yield head
    yield photo
    for (let sent = 0; sent < paddingBytes; sent += MIB) {
      const chunk = zeros.subarray(0, Math.min(MIB, paddingBytes - sent))
      digest.update(chunk)
      yield chunk
    }
    yield tail
  }
  return await new Promise((resolve, reject) => {
    const outgoing = request({
      host: '127.0.0.1',
      port: service.port,
      method: 'POST',
      path: '/v1/metadata/file',
      headers: {
        authorization: `Bearer ${API_KEY}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': head.length + photo.length + paddingBytes + tail.length
      }
    }, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { resolve({ status: response.statusCode!, body: JSON.parse(text), sha256: digest.digest('hex') }) })
    })
    outgoing.on('error', reject)
    Readable.from(body()).pipe(outgoing)
  })
}

describe('a large camera file as a multipart upload', () => {
  it('150 MB streams to disk, hashed on the way, with bounded memory', async () => {
    const pid = service.child.pid!
    const before = await residentBytes(pid)
    let peak = before
    const sampler = setInterval(() => {
      residentBytes(pid).then((bytes) => { peak = Math.max(peak, bytes) }, () => {})
    }, 10)
    let answer
    try {
      answer = await uploadPadded(150 * 1000 * 1000)
    } finally {
      clearInterval(sampler)
    }
    expect(answer.status).toBe(200)
    const size = photo.length + 150 * 1000 * 1000
    expect(answer.body).toMatchObject({
      camera: { make: 'NIKON', model: 'COOLPIX P6000' },
      format: 'jpeg',
      filesize_bytes: size,
      provenance: { sha256: answer.sha256, content_credentials: null }
    })
    // Held in memory, the file alone would add 143 MiB. Streamed, the chunks already written wait only for the
    // garbage collector: growth levels off near 60 MiB (measured: 28 MiB for 30 MB, 61 for 150 MB, 57 for 190 MB).
    expect(peak - before).toBeLessThan(100 * MIB)
  }, 120_000)

  it('a JPEG whose size comes after 40 MB of comment segments is sized by ExifTool, not by reading it into memory', async () => {
    // 640 comment segments of 64 KiB between the start of the image and its frame header: far past the sniff's
    // head and past the size it would read whole.
    const comment = Buffer.concat([Buffer.from([0xff, 0xfe, 0xff, 0xff]), Buffer.alloc(0xfffd, 0x20)])
    const padded = Buffer.concat([photo.subarray(0, 2), ...Array.from({ length: 640 }, () => comment), photo.subarray(2)])
    const form = new FormData()
    form.append('image', new Blob([padded]), 'commented.jpg')
    const response = await fetch(`http://127.0.0.1:${service.port}/v1/metadata/file`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}` }, body: form })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ format: 'jpeg', resolution: { width: 320, height: 240 }, camera: { make: 'NIKON' }, filesize_bytes: padded.length })
  }, 60_000)

  it('is refused with 413 over MAX_UPLOAD_BYTES (200 MiB by default)', async () => {
    const answer = await uploadPadded(200 * MIB)
    expect(answer.status).toBe(413)
    expect(answer.body).toEqual({
      statusCode: 413,
      code: 'IMAGE_TOO_LARGE',
      error: 'Payload Too Large',
      message: `The image is larger than the limit of ${200 * MIB} bytes`
    })
  }, 120_000)

  it('a data URI keeps its own, smaller limit (MAX_IMAGE_BYTES, 25 MiB by default)', async () => {
    // One byte over the limit keeps the body within the route's body limit, so the whole body is read and the image
    // refused once decoded; a body far over it is refused from its Content-Length, before it has been sent, and
    // fetch may then see the closed socket (EPIPE) instead of the answer.
    const big = Buffer.concat([photo, Buffer.alloc(25 * MIB + 1 - photo.length)])
    const response = await fetch(`http://127.0.0.1:${service.port}/v1/metadata`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ image: dataUri(big, 'image/jpeg') })
    })
    expect(response.status).toBe(413)
    expect(await response.json()).toMatchObject({ code: 'IMAGE_TOO_LARGE', message: `The image is larger than the limit of ${25 * MIB} bytes` })
  }, 60_000)
})
