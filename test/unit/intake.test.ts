import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { receiveImage, releaseChunk } from '../../src/metadata/intake.ts'

// The metadata intake (src/metadata/intake.ts) on its own, without HTTP or ExifTool: what it does with the chunks it
// is given.

const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')

describe('the intake, given chunks to release', () => {
  let dir: string
  let photo: Buffer
  let files = 0
  const scratchFile = (extension: string): string => join(dir, `image-${files++}.${extension}`)
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'intake-test-'))
    photo = await readFile(new URL('../../examples/photo.jpg', import.meta.url))
  })
  afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

  it('hands each chunk back once copied, to be freed, and stores every byte', async () => {
    // As busboy passes a socket's body on: the HTTP parser's copies, whole, with a slice where a boundary fell.
    const own: Buffer[] = []
    for (let at = 0; at < photo.length; at += 4096) {
      const chunk = Buffer.allocUnsafeSlow(Math.min(4096, photo.length - at))
      photo.copy(chunk, 0, at)
      own.push(chunk)
    }
    const shared = Buffer.concat([Buffer.from('--boundary\r\n\r\n'), own.pop()!, Buffer.from('\r\n--boundary--')])
    const tail = shared.subarray(14, shared.length - 14)
    async function * chunks (): AsyncGenerator<Buffer> {
      yield * own
      yield tail
    }
    const released: Buffer[] = []
    const release = (chunk: Buffer): void => {
      released.push(chunk)
      releaseChunk(chunk)
    }
    const stored = await receiveImage(chunks(), { scratchFile, maxBytes: 1_000_000, release })
    expect(stored).toMatchObject({ sizeBytes: photo.length, sha256: sha256(photo), sniffed: { format: 'jpeg' } })
    expect(await readFile(stored.path)).toEqual(photo)
    await rm(stored.path)
    expect(released).toEqual([...own, tail])
    expect(own.every((chunk) => (chunk.buffer as ArrayBuffer).detached && chunk.length === 0)).toBe(true)
    // releaseChunk leaves a slice alone: it shares its buffer with whoever holds the rest of it.
    expect(tail.length).toBe(photo.length % 4096 || 4096)
    expect(shared.subarray(0, 14).toString()).toBe('--boundary\r\n\r\n')
  })

  it('leaves the chunks alone when not asked to release them', async () => {
    const chunk = Buffer.from(photo)
    const stored = await receiveImage([chunk], { scratchFile, maxBytes: 1_000_000 })
    expect(stored.sha256).toBe(sha256(photo))
    await rm(stored.path)
    expect(chunk).toEqual(photo)
  })
})
