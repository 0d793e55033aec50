import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AUTH, createTestApp, imageForm, multipart, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory, PICTURE_FORMATS } from '../support/images.ts'
import { Rng } from '../support/rng.ts'

// Damaged and hostile files through the real pipeline: sniffing, the real ExifTool pool, the envelope.
let t: TestApp
let images: ImageFactory

beforeAll(async () => {
  t = await createTestApp({ exiftool: { procs: 2, taskTimeoutMs: 5000, maxQueue: 64 } })
  images = new ImageFactory()
})
afterAll(async () => {
  await images.close()
  await t.close()
})

function damaged (image: Buffer, seed: number): Buffer[] {
  // Deterministic (mulberry32), so every run damages the same bytes.
  const rng = new Rng(seed)
  const next = (): number => rng.next()
  const variants: Buffer[] = []
  for (const fraction of [0.1, 0.3, 0.5, 0.8, 0.95]) variants.push(image.subarray(0, Math.max(16, Math.floor(image.length * fraction))))
  for (let round = 0; round < 10; round++) {
    const copy = Buffer.from(image)
    for (let flip = 0; flip < 1 + round * 3; flip++) copy[Math.floor(next() * copy.length)] = Math.floor(next() * 256)
    variants.push(copy)
  }
  // Absurd lengths where readers take them from the file: every 32-bit word at the start set to 0xffffffff in turn.
  for (let offset = 4; offset < Math.min(64, image.length - 4); offset += 12) {
    const copy = Buffer.from(image)
    copy.writeUInt32BE(0xffffffff, offset)
    variants.push(copy)
  }
  return variants
}

describe.each(PICTURE_FORMATS)('damaged %s files', (format) => {
  it('get 200, 415 or 422 in the envelope, never a 5xx, and leave nothing behind', async () => {
    const image = await images.make(format, { width: 48, height: 32, tags: CAMERA_TAGS })
    const seed = PICTURE_FORMATS.indexOf(format) + 1
    const statuses = new Set<number>()
    for (const variant of damaged(image, seed)) {
      const { payload, headers } = await multipart(imageForm(variant, `damaged.${format}`))
      const response = await t.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
      expect([200, 415, 422]).toContain(response.statusCode)
      const body = response.json()
      if (response.statusCode === 200) expect(body).toHaveProperty('format')
      else expect(body).toMatchObject({ statusCode: response.statusCode, code: expect.any(String), message: expect.any(String) })
      statuses.add(response.statusCode)
    }
    // Truncated to 10% is never a readable image of that size: at least one variant is refused.
    expect([...statuses].some((status) => status !== 200)).toBe(true)
    expect(await t.scratchFiles()).toEqual([])

    const healthy = await t.app.inject({ method: 'GET', url: '/health/ready' })
    expect(healthy.statusCode).toBe(200)
  })
})
