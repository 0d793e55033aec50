/**
 * What provenance costs a plain camera JPEG (no manifest): the service as it is against itself before provenance,
 * side by side in one run.
 *
 *   npm run bench:provenance                 # 300 requests to each, after 30 of warm-up
 *   BENCH_REQUESTS=1000 npm run bench:provenance
 *   BENCH_BASELINE=<git revision> npm run bench:provenance
 *
 * The baseline is the commit before provenance arrived (found by its subject), checked out in a temporary git
 * worktree that shares this checkout's node_modules. Both services run as `npm start` runs them, one ExifTool
 * process each, on 127.0.0.1; requests alternate between them, one at a time, so both see the same machine. Each
 * request is a multipart upload of a 4000×3000 camera JPEG (about 6 MB, EXIF written by ExifTool).
 * Output: a table, then one JSON line. Exit code 1 when any request failed or provenance costs more than 20%.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { ExifTool } from 'exiftool-vendored'
import sharp from 'sharp'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const KEY = 'bench-provenance-key'
const REQUESTS = Number(process.env['BENCH_REQUESTS'] ?? 300)
const WARM_UP = 30
const BUDGET = 1.2
const run = promisify(execFile)

interface Service { name: string, port: number, child: ChildProcess }

async function baselineRevision (): Promise<string> {
  const configured = process.env['BENCH_BASELINE']
  if (configured !== undefined) return configured
  const { stdout } = await run('git', ['log', '--format=%H', '-1', '--grep', '^Provenance in every metadata answer'], { cwd: ROOT })
  if (stdout.trim() === '') throw new Error('the commit that added provenance is not in this history; set BENCH_BASELINE')
  return `${stdout.trim()}^`
}

async function cameraJpeg (dir: string): Promise<Buffer> {
  const path = join(dir, 'camera.jpg')
  const pixels = await sharp({ create: { width: 4000, height: 3000, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .jpeg({ quality: 90 }).toBuffer()
  await writeFile(path, pixels)
  const exiftool = new ExifTool({ maxProcs: 1 })
  try {
    await exiftool.write(path, {
      Make: 'NIKON CORPORATION',
      Model: 'NIKON Z 6_3',
      DateTimeOriginal: '2024:05:01 10:00:00',
      GPSLatitude: 53.5503,
      GPSLatitudeRef: 'N',
      GPSLongitude: 9.9937,
      GPSLongitudeRef: 'E'
    }, { writeArgs: ['-overwrite_original'] })
  } finally {
    await exiftool.end()
  }
  return await readFile(path)
}

async function start (name: string, cwd: string): Promise<Service> {
  const port = 20_000 + Math.floor(Math.random() * 20_000)
  const child = spawn(process.execPath, ['src/server.ts'], {
    cwd,
    env: { PATH: process.env['PATH'], HOST: '127.0.0.1', PORT: String(port), API_KEYS: KEY, EXIFTOOL_PROCS: '1', RATE_LIMIT_METADATA_PER_MIN: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  for (let attempt = 0; attempt < 600; attempt++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health/ready`)).ok) return { name, port, child }
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  child.kill()
  throw new Error(`${name} did not become ready`)
}

async function post (service: Service, image: Buffer): Promise<number> {
  const form = new FormData()
  form.append('image', new Blob([image], { type: 'image/jpeg' }), 'camera.jpg')
  const started = performance.now()
  const response = await fetch(`http://127.0.0.1:${service.port}/v1/metadata/file`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form })
  await response.arrayBuffer()
  const elapsed = performance.now() - started
  if (response.status !== 200) throw new Error(`${service.name} answered ${response.status}`)
  return elapsed
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
}

const revision = await baselineRevision()
const dir = await mkdtemp(join(tmpdir(), 'bench-provenance-'))
const worktree = join(dir, 'baseline')
await run('git', ['worktree', 'add', '--detach', worktree, revision], { cwd: ROOT })
const services: Service[] = []
try {
  await symlink(join(ROOT, 'node_modules'), join(worktree, 'node_modules'))
  const image = await cameraJpeg(dir)
  services.push(await start('before provenance', worktree), await start('with provenance', ROOT))
  const times = new Map<string, number[]>(services.map((service) => [service.name, []]))
  for (let i = 0; i < WARM_UP + REQUESTS; i++) {
    // Alternating, and swapping who goes first, so neither always follows the other's garbage.
    const order = i % 2 === 0 ? services : [...services].reverse()
    for (const service of order) {
      const elapsed = await post(service, image)
      if (i >= WARM_UP) times.get(service.name)!.push(elapsed)
    }
  }
  const rows = services.map((service) => {
    const sorted = times.get(service.name)!.sort((a, b) => a - b)
    return { service: service.name, median_ms: percentile(sorted, 0.5), p90_ms: percentile(sorted, 0.9) }
  })
  const ratio = rows[1]!.median_ms / rows[0]!.median_ms
  console.log(`camera JPEG ${image.length} bytes, ${REQUESTS} requests each, baseline ${revision}`)
  for (const row of rows) console.log(`${row.service.padEnd(20)} median ${row.median_ms.toFixed(1)} ms   p90 ${row.p90_ms.toFixed(1)} ms`)
  console.log(`provenance / baseline median: ${ratio.toFixed(3)} (budget ${BUDGET})`)
  console.log(JSON.stringify({ bench: 'provenance', imageBytes: image.length, requests: REQUESTS, baseline: revision, rows, ratio }))
  if (ratio > BUDGET) process.exitCode = 1
} finally {
  for (const service of services) service.child.kill('SIGTERM')
  await run('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT }).catch(() => {})
  await rm(dir, { recursive: true, force: true })
}
