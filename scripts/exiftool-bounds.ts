/**
 * What the ExifTool findings of the second outside probe cost the service (issue 24, rows 2 and 4, and the pool's
 * fair share): the figures in RELIABILITY.md, "ExifTool bounded whatever the file".
 *
 *   npx node scripts/exiftool-bounds.ts
 *
 * 1. Each costly file of test/support/costly-files.ts, around a small camera JPEG or PNG, sent to
 *    POST /v1/metadata?full=true of a test app with one ExifTool process and the service's defaults otherwise: its
 *    status and time, the ExifTool children's resident memory at peak (sampled every 25 ms) and 300 ms after.
 * 2. A pool of two processes shared by two keys: two clients of one key send slow files that the structure checks
 *    let through (1,200 and more XMP structures nested 28 deep, each file distinct) while the other key sends a
 *    photo and asks /health/ready every 200 ms for 20 s.
 *
 * The figures before the bounds came from the same script in a checkout without them, with this file and
 * test/support/costly-files.ts copied in (before 58b71bb, childrenOf and residentBytes are in
 * test/support/processes.ts).
 */
import { childrenOf, residentBytes } from '../test/support/proc.ts'
import { API_KEY, AUTH, createTestApp, imageForm, multipart, type TestApp } from '../test/support/app.ts'
import {
  jpegWithExtendedLengthJumbf,
  jpegWithNestedCbor,
  jpegWithNestedXmp,
  jpegWithProfileIfd,
  pngWithManyNestedXmp,
  pngWithNestedXmp
} from '../test/support/costly-files.ts'
import { CAMERA_TAGS, ImageFactory } from '../test/support/images.ts'

const MB = 1024 * 1024
const OTHER_KEY = 'other-key-93d0e1'

const factory = new ImageFactory()
const photo = await factory.make('jpeg', { width: 64, height: 48, tags: CAMERA_TAGS })
const png = await factory.make('png', { width: 64, height: 48, tags: CAMERA_TAGS })
await factory.close()

/** The ExifTool processes of this one (the test app's pool). */
function exiftoolMemory (): number {
  let bytes = 0
  for (const pid of childrenOf(process.pid)) {
    try { bytes += residentBytes(pid) } catch {}
  }
  return bytes
}

async function send (t: TestApp, bytes: Buffer, filename: string, options: { query?: string, key?: string } = {}): Promise<{ status: number, code: string, ms: number }> {
  const { payload, headers } = await multipart(imageForm(bytes, filename))
  const authorization = options.key === undefined ? AUTH : { authorization: `Bearer ${options.key}` }
  const started = performance.now()
  const response = await t.app.inject({ method: 'POST', url: `/v1/metadata${options.query ?? ''}`, headers: { ...authorization, ...headers }, payload })
  return { status: response.statusCode, code: (response.json() as { code?: string }).code ?? '', ms: performance.now() - started }
}

const files: Array<[string, Buffer, string]> = [
  ['a photo', photo, 'photo.jpg'],
  ['JPEG, CBOR nested 40,000 deep in JUMBF', jpegWithNestedCbor(photo, 40_000), 'photo.jpg'],
  ['PNG, XMP nested 3,000 deep', pngWithNestedXmp(png, 3000), 'photo.png'],
  ['JPEG, XMP nested 1,500 deep', jpegWithNestedXmp(photo, 1500), 'photo.jpg'],
  ['PNG, 1,200 XMP structures nested 28 deep', pngWithManyNestedXmp(png, 28, 1200), 'photo.png'],
  ['JPEG, Exif ProfileIFD', jpegWithProfileIfd(photo), 'photo.jpg'],
  ['JPEG, JUMBF with a 64-bit length', jpegWithExtendedLengthJumbf(photo), 'photo.jpg'],
  ['the ProfileIFD JPEG again', jpegWithProfileIfd(photo), 'photo.jpg']
]

const single = await createTestApp({ exiftool: { procs: 1, taskTimeoutMs: 10_000, maxQueue: 64 } })
await send(single, photo, 'photo.jpg')
console.log('| file | status | time | ExifTool RSS, peak | 300 ms after |\n|---|---|---|---|---|')
for (const [name, bytes, filename] of files) {
  let peak = 0
  const sampler = setInterval(() => { peak = Math.max(peak, exiftoolMemory()) }, 25)
  const answer = await send(single, bytes, filename, { query: '?full=true' })
  clearInterval(sampler)
  await new Promise((resolve) => setTimeout(resolve, 300))
  console.log(`| ${name} (${Math.round(bytes.length / 1024)} KB) | ${answer.status} ${answer.code} | ${(answer.ms / 1000).toFixed(1)} s | ` +
    `${Math.round(peak / MB)} MB | ${Math.round(exiftoolMemory() / MB)} MB |`)
}
await single.close()

// The service's default share of the pool per key (EXIFTOOL_KEY_SHARE); a test app's pool has none unless told.
const shared = await createTestApp({ apiKeys: [API_KEY, OTHER_KEY], exiftool: { procs: 2, taskTimeoutMs: 10_000, maxQueue: 256, clientShare: 0.5 } })
await Promise.all([send(shared, photo, 'photo.jpg', { key: OTHER_KEY }), send(shared, photo, 'photo.jpg')])
const alone: number[] = []
for (let i = 0; i < 5; i++) alone.push((await send(shared, photo, 'photo.jpg', { key: OTHER_KEY })).ms)
const load = { on: true }
let count = 1200
const slow: string[] = []
const slowClient = async (): Promise<void> => {
  while (load.on) {
    const answer = await send(shared, pngWithManyNestedXmp(png, 28, count++), 'slow.png')
    slow.push(`${answer.status} ${answer.code} in ${(answer.ms / 1000).toFixed(1)} s`)
  }
}
const clients = [slowClient(), slowClient()]
await new Promise((resolve) => setTimeout(resolve, 500))
const latencies: number[] = []
const readiness: number[] = []
for (const end = Date.now() + 20_000; Date.now() < end;) {
  latencies.push((await send(shared, photo, 'photo.jpg', { key: OTHER_KEY })).ms)
  readiness.push((await shared.app.inject({ method: 'GET', url: '/health/ready' })).statusCode)
  await new Promise((resolve) => setTimeout(resolve, 200))
}
load.on = false
const quantile = (values: number[], q: number): string => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!.toFixed(0)
}
console.log(`\nanother key's photos: alone p50 ${quantile(alone, 0.5)} ms; beside the slow key ${latencies.length} in 20 s, ` +
  `p50 ${quantile(latencies, 0.5)} ms, max ${quantile(latencies, 1)} ms; /health/ready ${readiness.filter((status) => status === 200).length}/${readiness.length} ready`)
await Promise.all(clients)
console.log(`the slow key's files: ${slow.join(', ')}`)
await shared.close()
