/**
 * Speed and memory of image metadata extraction, measured rather than asserted in tests.
 *
 *   npm run bench                    # HTTP runs of 10 s each (after 2 s of warm-up), about a minute in all
 *   BENCH_SECONDS=3 npm run bench    # shorter (or longer, up to 120) HTTP runs
 *
 * 1. ExifTool cost per image, sequential, on a ~2 MB 3000×2000 camera JPEG and a 640×480 one: a fresh `perl exiftool`
 *    per image, the service's pooled MetadataExtractor.readSummary, and exiftool-vendored's default read().
 * 2. POST /v1/metadata under autocannon (8 connections): JSON data-URI bodies (small JPEG), multipart (camera JPEG),
 *    and, as a memory control, the camera JPEG as a data URI (a body the server has to hold whole).
 * 3. The server process's RSS and heap before and after each run, and their peaks sampled every 100 ms.
 *
 * Each run gets its own app in a child process forked from this file: autocannon keeps a whole request per
 * connection in memory and would otherwise share the server's event loop and RSS, and RSS seldom shrinks, so runs
 * sharing one process would inherit each other's growth. Everything listens and connects on 127.0.0.1 only.
 * Output: a table, then one JSON line (the last line). Exit code 1 when any HTTP request was not 2xx or failed.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { EventEmitter } from 'node:events'

const SERVER_FLAG = '--bench-server'
const CONNECTIONS = 8
const EXIFTOOL_PROCS = 2
const FRESH_ITERATIONS = 30
const POOLED_ITERATIONS = 100
/** Any one timing series stops early past this, so a slow machine still finishes. */
const SERIES_BUDGET_MS = 20_000
const SAMPLE_INTERVAL_MS = 100
const MB = 1024 * 1024

interface MemorySnapshot {
  rssMB: number
  heapUsedMB: number
  heapTotalMB: number
  externalMB: number
  arrayBuffersMB: number
  /** The pool's perl children together (Linux /proc); they are separate processes, outside `rssMB`. */
  exiftoolRssMB: number | null
  /** Files in the app's scratch directory: should be none between requests. */
  scratchFiles: number
}

interface MemoryPeaks {
  samples: number
  spanMs: number
  start: MemorySnapshot
  /** Each field's own maximum over the samples (not necessarily from the same sample). */
  peak: Omit<MemorySnapshot, 'exiftoolRssMB' | 'scratchFiles'>
}

type ToServer =
  | { cmd: 'snapshot', gc: boolean }
  | { cmd: 'sample-start' }
  | { cmd: 'sample-stop' }
  | { cmd: 'close' }

type FromServer =
  | { type: 'ready', port: number }
  | { type: 'snapshot', memory: MemorySnapshot }
  | { type: 'samples', peaks: MemoryPeaks }
  | { type: 'closed', leftoverEntries: number }
  | { type: 'failed', message: string }

// ---------------------------------------------------------------------------------------------------------------
// Server role (child process): the real app, nothing else loaded, so its memory is the service's own.
// ---------------------------------------------------------------------------------------------------------------

async function serve (): Promise<void> {
  const send = (message: FromServer): void => { process.send?.(message) }
  const tempRoot = requiredEnv('BENCH_TEMP_ROOT')
  const { buildApp } = await import('../src/app.ts')
  const { loadConfig } = await import('../src/config.ts')
  // The service's own defaults, as `npm start` reads them (request logging on, as in production; the lines go
  // nowhere), but for the key, the pool size, the scratch directory and no rate limit.
  const app = await buildApp(loadConfig({
    API_KEYS: requiredEnv('BENCH_API_KEY'),
    EXIFTOOL_PROCS: String(EXIFTOOL_PROCS),
    TMPDIR: tempRoot,
    RATE_LIMIT_METADATA_PER_MIN: '0'
  }), { logStream: { write () {} } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')

  const snapshot = async (): Promise<MemorySnapshot> => {
    const usage = process.memoryUsage()
    return {
      ...megabytes(usage),
      exiftoolRssMB: await rssOfProcesses(app.metadataExtractor.pids),
      scratchFiles: await countScratchFiles(tempRoot)
    }
  }

  let sampler: { timer: NodeJS.Timeout, startedAt: number, start: MemorySnapshot, samples: number, peak: MemoryPeaks['peak'] } | undefined
  let closing: Promise<void> | undefined
  const close = async (): Promise<void> => {
    if (sampler !== undefined) clearInterval(sampler.timer)
    closing ??= app.close()
    await closing
  }

  const handle = async (message: ToServer): Promise<void> => {
    switch (message.cmd) {
      case 'snapshot': {
        // Only with --expose-gc: separates what is retained from garbage not yet collected.
        if (message.gc) (globalThis as { gc?: () => void }).gc?.()
        send({ type: 'snapshot', memory: await snapshot() })
        break
      }
      case 'sample-start': {
        const start = await snapshot()
        const peak = megabytesOnly(start)
        const timer = setInterval(() => {
          const usage = megabytes(process.memoryUsage())
          for (const key of Object.keys(usage) as Array<keyof typeof usage>) peak[key] = Math.max(peak[key], usage[key])
          if (sampler !== undefined) sampler.samples++
        }, SAMPLE_INTERVAL_MS)
        timer.unref()
        sampler = { timer, startedAt: performance.now(), start, samples: 0, peak }
        send({ type: 'samples', peaks: { samples: 0, spanMs: 0, start, peak: megabytesOnly(peak) } })
        break
      }
      case 'sample-stop': {
        if (sampler === undefined) throw new Error('sampling was not started')
        clearInterval(sampler.timer)
        const { start, samples, peak, startedAt } = sampler
        sampler = undefined
        send({ type: 'samples', peaks: { samples, spanMs: performance.now() - startedAt, start, peak: megabytesOnly(peak) } })
        break
      }
      case 'close': {
        await close()
        // Closing the app removes its scratch directory; anything left under the root is a leak.
        send({ type: 'closed', leftoverEntries: (await readdir(tempRoot)).length })
        process.disconnect()
        break
      }
    }
  }
  process.on('message', (message: ToServer) => {
    handle(message).catch((error: unknown) => { send({ type: 'failed', message: String(error) }) })
  })
  // The parent is gone (crashed or killed): end the pool rather than linger.
  process.once('disconnect', () => {
    close().catch((error: unknown) => { console.error('bench server: close failed:', error) })
  })
  send({ type: 'ready', port: address.port })
}

function megabytes (usage: NodeJS.MemoryUsage): MemoryPeaks['peak'] {
  return {
    rssMB: usage.rss / MB,
    heapUsedMB: usage.heapUsed / MB,
    heapTotalMB: usage.heapTotal / MB,
    externalMB: usage.external / MB,
    arrayBuffersMB: usage.arrayBuffers / MB
  }
}

function megabytesOnly (memory: MemoryPeaks['peak']): MemoryPeaks['peak'] {
  const { rssMB, heapUsedMB, heapTotalMB, externalMB, arrayBuffersMB } = memory
  return { rssMB, heapUsedMB, heapTotalMB, externalMB, arrayBuffersMB }
}

async function rssOfProcesses (pids: number[]): Promise<number | null> {
  let total = 0
  for (const pid of pids) {
    try {
      const status = await readFile(`/proc/${pid}/status`, 'utf8')
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]
      if (kb === undefined) return null
      total += Number(kb) * 1024
    } catch {
      return null
    }
  }
  return total / MB
}

async function countScratchFiles (tempRoot: string): Promise<number> {
  let count = 0
  for (const entry of await readdir(tempRoot, { withFileTypes: true })) {
    if (entry.isDirectory()) count += (await readdir(join(tempRoot, entry.name))).length
  }
  return count
}

// ---------------------------------------------------------------------------------------------------------------
// Bench role (parent process)
// ---------------------------------------------------------------------------------------------------------------

interface TimingRow {
  method: string
  image: string
  n: number
  medianMs: number
  p95Ms: number
  minMs: number
  maxMs: number
}

interface HttpRow {
  body: string
  /** A comparison for memory only: the same camera JPEG as a data URI, which the server must hold whole. */
  control: boolean
  requestBytes: number
  seconds: number
  requests: number
  reqPerSec: number
  latencyMs: { p50: number, p97_5: number, p99: number, mean: number, max: number }
  ok2xx: number
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
  memory: { before: MemorySnapshot, sampled: MemoryPeaks, after: MemorySnapshot, afterGc: MemorySnapshot }
  /** Entries left under the app's temp root after it closed. */
  leftoverEntries: number
}

interface Scenario {
  name: string
  control: boolean
  headers: Record<string, string>
  body: Buffer
}

/** The part of autocannon's programmatic API used here (the package ships no types). */
interface AutocannonOptions {
  url: string
  method: 'POST'
  headers: Record<string, string>
  body: Buffer | string
  connections: number
  pipelining: number
  duration: number
  timeout: number
}
interface LatencyHistogram { mean: number, max: number, p50: number, p97_5: number, p99: number }
interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  non2xx: number
  '2xx': number
  statusCodeStats: Record<string, { count: number }>
  latency: LatencyHistogram
  requests: { average: number, total: number }
}
type Autocannon = (options: AutocannonOptions, done: (error: Error | null, result: AutocannonResult) => void) => EventEmitter

interface Images {
  camera: Buffer
  small: Buffer
  cameraPath: string
  smallPath: string
}

/** The app child currently running, for the deadline to kill. */
let liveServer: ChildProcess | undefined

async function main (): Promise<void> {
  const seconds = benchSeconds()
  const loadStart = loadavg()[0]!
  const warmupSeconds = Math.min(2, seconds)
  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-bench-'))
  // Whatever hangs, the bench ends: the budget is the planned work plus generous slack.
  const deadline = setTimeout(() => {
    console.error('bench: over its time budget; stopping')
    liveServer?.kill('SIGKILL')
    rmSync(dir, { recursive: true, force: true })
    process.exit(1)
  }, 150_000 + 3 * (seconds + warmupSeconds + 10) * 1000)
  deadline.unref()

  try {
    log(`Node ${process.version}, ${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'})`)
    const images = await makeImages(dir)
    log(`images: camera ${kib(images.camera.length)} KiB, small ${kib(images.small.length)} KiB`)

    const exiftool = await measureExifTool(images)

    const runs: HttpRow[] = []
    const scenarios = await httpScenarios(images)
    for (const [index, scenario] of scenarios.entries()) {
      runs.push(await runScenario(join(dir, `server-${index}`), scenario, seconds, warmupSeconds))
    }

    report({ images, exiftool, runs, seconds, loadStart })
    const failed = runs.filter((run) => run.non2xx > 0 || run.errors > 0 || run.timeouts > 0)
    for (const run of failed) {
      console.error(`bench: ${run.body}: ${run.non2xx} non-2xx, ${run.errors} errors, ${run.timeouts} timeouts; status codes ${JSON.stringify(run.statusCodes)}`)
    }
    if (failed.length > 0) process.exitCode = 1
  } finally {
    await rm(dir, { recursive: true, force: true })
    clearTimeout(deadline)
  }
}

function benchSeconds (): number {
  const text = process.env['BENCH_SECONDS']
  if (text === undefined || text === '') return 10
  const value = Number(text)
  if (!Number.isFinite(value) || value < 1 || value > 120) throw new Error('BENCH_SECONDS must be a number from 1 to 120')
  return value
}

/** A 640×480 JPEG and a ~2 MB 3000×2000 one at quality 90, both carrying CAMERA_TAGS written by the real ExifTool. */
async function makeImages (dir: string): Promise<Images> {
  const { ImageFactory, CAMERA_TAGS } = await import('../test/support/images.ts')
  const factory = new ImageFactory()
  try {
    const small = await factory.make('jpeg', { width: 640, height: 480, tags: CAMERA_TAGS })
    // ImageFactory encodes a smooth gradient at quality 80 (about 65 KB at this size); grain brings the file to a
    // phone photo's size.
    const camera = await factory.rewrite(await grainyJpeg(3000, 2000, 90), 'jpeg', CAMERA_TAGS)
    const cameraPath = join(dir, 'camera.jpg')
    const smallPath = join(dir, 'small.jpg')
    await writeFile(cameraPath, camera)
    await writeFile(smallPath, small)
    return { camera, small, cameraPath, smallPath }
  } finally {
    await factory.close()
  }
}

async function grainyJpeg (width: number, height: number, quality: number): Promise<Buffer> {
  const { default: sharp } = await import('sharp')
  const raw = Buffer.alloc(width * height * 3)
  // A fixed-seed xorshift: the same bytes on every run, so runs compare.
  let state = 0x9e3779b9
  const amplitude = 16
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      state ^= state << 13
      state ^= state >>> 17
      state ^= state << 5
      const noise = ((state >>> 0) % (2 * amplitude + 1)) - amplitude
      const offset = (y * width + x) * 3
      raw[offset] = clampByte(((x * 255) / width | 0) + noise)
      raw[offset + 1] = clampByte(((y * 255) / height | 0) + noise)
      raw[offset + 2] = clampByte(128 + noise)
    }
  }
  return await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer()
}

function clampByte (value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : value
}

async function measureExifTool (images: Images): Promise<TimingRow[]> {
  const { ExifTool } = await import('exiftool-vendored')
  const { MetadataExtractor } = await import('../src/metadata/extractor.ts')
  const { summaryReadArgs } = await import('../src/metadata/tags.ts')
  const require = createRequire(import.meta.url)
  // The perl script exiftool-vendored itself runs, resolved from where exiftool-vendored is installed.
  const script = createRequire(require.resolve('exiftool-vendored'))('exiftool-vendored.pl') as string
  const targets = [{ name: 'camera', path: images.cameraPath }, { name: 'small', path: images.smallPath }]
  const rows: TimingRow[] = []

  for (const { name, path } of targets) {
    log(`exiftool: fresh process per image, ${name}`)
    const args = [script, '-json', ...summaryReadArgs('jpeg', false), path]
    const check = (output: string): void => { expectMake((JSON.parse(output) as Array<Record<string, unknown>>)[0]?.['IFD0:Make'], 'fresh exiftool') }
    // Untimed runs first: the script and its modules come from the page cache afterwards, as on a busy server.
    for (let i = 0; i < 2; i++) check(await runProcess('perl', args))
    const times = await series(FRESH_ITERATIONS, async () => { check(await runProcess('perl', args)) })
    rows.push(timingRow('a) fresh exiftool process', name, times))
  }

  // One process each: per-image cost, not parallelism, is measured (the HTTP runs use the service's two).
  const extractor = new MetadataExtractor({ procs: 1, taskTimeoutMs: 10_000, maxQueue: 64 })
  const defaults = new ExifTool({ maxProcs: 1 })
  try {
    for (const { name, path } of targets) {
      log(`exiftool: pooled, tuned args vs default read(), ${name}`)
      const tuned = async (): Promise<void> => { expectMake((await extractor.readSummary(path, 'jpeg', false))['IFD0:Make'], 'readSummary') }
      const plain = async (): Promise<void> => { expectMake((await defaults.read(path)).Make, 'read()') }
      for (let i = 0; i < 5; i++) { await tuned(); await plain() }
      // Alternating the two cancels drift (thermal, other tenants) between them.
      const tunedTimes: number[] = []
      const plainTimes: number[] = []
      await series(POOLED_ITERATIONS, async () => {
        tunedTimes.push(await timed(tuned))
        plainTimes.push(await timed(plain))
      })
      rows.push(timingRow('b) pooled, readSummary (tuned)', name, tunedTimes))
      rows.push(timingRow('c) pooled, default read()', name, plainTimes))
    }
  } finally {
    await extractor.end()
    await defaults.end()
  }
  return rows
}

function expectMake (make: unknown, what: string): void {
  if (make !== 'NIKON') throw new Error(`${what} did not read the camera make (got ${JSON.stringify(make)})`)
}

/** Runs `task` up to `count` times (or until the series budget is spent); returns each run's milliseconds. */
async function series (count: number, task: () => Promise<void>): Promise<number[]> {
  const times: number[] = []
  const started = performance.now()
  for (let i = 0; i < count && performance.now() - started < SERIES_BUDGET_MS; i++) times.push(await timed(task))
  return times
}

async function timed (task: () => Promise<void>): Promise<number> {
  const start = performance.now()
  await task()
  return performance.now() - start
}

function timingRow (method: string, image: string, times: number[]): TimingRow {
  const sorted = [...times].sort((a, b) => a - b)
  return {
    method,
    image,
    n: sorted.length,
    medianMs: quantile(sorted, 0.5),
    p95Ms: quantile(sorted, 0.95),
    minMs: sorted[0] ?? NaN,
    maxMs: sorted.at(-1) ?? NaN
  }
}

/** Linear interpolation between closest ranks, on sorted values. */
function quantile (sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  const position = (sorted.length - 1) * q
  const lower = Math.floor(position)
  const low = sorted[lower]!
  const high = sorted[Math.min(lower + 1, sorted.length - 1)]!
  return low + (high - low) * (position - lower)
}

function runProcess (command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk))
    child.once('error', reject)
    child.once('close', (code, signal) => {
      if (code === 0) resolve(Buffer.concat(out).toString('utf8'))
      else reject(new Error(`${command} exited with ${code ?? signal}: ${Buffer.concat(err).toString('utf8').trim()}`))
    })
  })
}

async function httpScenarios (images: Images): Promise<Scenario[]> {
  const { multipart, imageForm } = await import('../test/support/app.ts')
  const form = await multipart(imageForm(images.camera, 'camera.jpg'))
  const dataUriBody = (image: Buffer): Buffer =>
    Buffer.from(JSON.stringify({ image: `data:image/jpeg;base64,${image.toString('base64')}` }))
  return [
    { name: 'JSON data URI, small JPEG', control: false, headers: { 'content-type': 'application/json' }, body: dataUriBody(images.small) },
    { name: 'multipart, camera JPEG', control: false, headers: form.headers, body: form.payload },
    { name: 'control: JSON data URI, camera JPEG', control: true, headers: { 'content-type': 'application/json' }, body: dataUriBody(images.camera) }
  ]
}

/**
 * One load run against its own freshly started app: RSS seldom shrinks, so in a shared process each run's growth
 * would depend on the runs before it.
 */
async function runScenario (serverRoot: string, scenario: Scenario, seconds: number, warmupSeconds: number): Promise<HttpRow> {
  await mkdir(serverRoot)
  const apiKey = randomBytes(24).toString('base64url')
  const server = fork(import.meta.filename, [SERVER_FLAG], {
    execArgv: [...process.execArgv, '--expose-gc'],
    env: { ...process.env, BENCH_TEMP_ROOT: serverRoot, BENCH_API_KEY: apiKey },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  liveServer = server
  try {
    const { port } = await ask(server, null, 'ready', 60_000)
    const url = `http://127.0.0.1:${port}/v1/metadata`
    const headers = { ...scenario.headers, authorization: `Bearer ${apiKey}` }
    const { body, name } = scenario

    // One checked request first: a load run of fast errors would otherwise look like a fine result.
    const response = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) })
    const answer = await response.json() as { camera?: { make?: unknown } }
    if (response.status !== 200) throw new Error(`${name}: HTTP ${response.status} ${JSON.stringify(answer)}`)
    expectMake(answer.camera?.make, name)

    log(`http: ${name}: warm-up ${warmupSeconds} s, then ${seconds} s, ${CONNECTIONS} connections`)
    const before = (await ask(server, { cmd: 'snapshot', gc: true }, 'snapshot')).memory
    // Sampling covers the warm-up too, where most of the growth happens.
    await ask(server, { cmd: 'sample-start' }, 'samples')
    await load({ url, headers, body, duration: warmupSeconds })
    const result = await load({ url, headers, body, duration: seconds })
    const { peaks } = await ask(server, { cmd: 'sample-stop' }, 'samples')
    await settle()
    const after = (await ask(server, { cmd: 'snapshot', gc: false }, 'snapshot')).memory
    const afterGc = (await ask(server, { cmd: 'snapshot', gc: true }, 'snapshot')).memory
    const { leftoverEntries } = await ask(server, { cmd: 'close' }, 'closed')
    await waitForExit(server, 10_000)

    return {
      body: name,
      control: scenario.control,
      requestBytes: body.length,
      seconds: result.duration,
      requests: result.requests.total,
      reqPerSec: result.requests.total / result.duration,
      latencyMs: {
        p50: result.latency.p50,
        p97_5: result.latency.p97_5,
        p99: result.latency.p99,
        mean: result.latency.mean,
        max: result.latency.max
      },
      ok2xx: result['2xx'],
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count])),
      memory: { before, sampled: peaks, after, afterGc },
      leftoverEntries
    }
  } finally {
    await stopServer(server)
    liveServer = undefined
  }
}

/** Requests cut off when a run stops are cleaned up asynchronously; give them a moment before the next reading. */
async function settle (): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 500))
}

function load (options: { url: string, headers: Record<string, string>, body: Buffer, duration: number }): Promise<AutocannonResult> {
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon
  return new Promise((resolve, reject) => {
    autocannon({ ...options, method: 'POST', connections: CONNECTIONS, pipelining: 1, timeout: 10 }, (error, result) => {
      if (error === null) resolve(result)
      else reject(error)
    })
  })
}

/** Sends `message` (if any) and waits for the server's reply of `type`, its failure, its exit, or the timeout. */
function ask<T extends FromServer['type']> (
  server: ChildProcess,
  message: ToServer | null,
  type: T,
  timeoutMs = 30_000
): Promise<Extract<FromServer, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { settle(new Error(`server gave no '${type}' within ${timeoutMs} ms`)) }, timeoutMs)
    const onMessage = (reply: FromServer): void => {
      if (reply.type === 'failed') settle(new Error(`server: ${reply.message}`))
      else if (reply.type === type) settle(undefined, reply as Extract<FromServer, { type: T }>)
    }
    const onExit = (code: number | null, signal: string | null): void => {
      settle(new Error(`server exited (${code ?? signal}) before '${type}'`))
    }
    function settle (error?: Error, reply?: Extract<FromServer, { type: T }>): void {
      clearTimeout(timer)
      server.off('message', onMessage)
      server.off('exit', onExit)
      if (error !== undefined) reject(error)
      else resolve(reply!)
    }
    server.on('message', onMessage)
    server.once('exit', onExit)
    if (message !== null) server.send(message)
  })
}

function waitForExit (child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true)
  return new Promise((resolve) => {
    const timer = setTimeout(() => { child.off('exit', onExit); resolve(false) }, timeoutMs)
    const onExit = (): void => { clearTimeout(timer); resolve(true) }
    child.once('exit', onExit)
  })
}

/** Makes sure the server is gone: asked to close (ending its ExifTool pool) if still there, killed only if it will not. */
async function stopServer (server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return
  if (server.connected) {
    try {
      await ask(server, { cmd: 'close' }, 'closed', 15_000)
    } catch {}
  }
  if (!await waitForExit(server, 5_000)) {
    server.kill('SIGKILL')
    await waitForExit(server, 5_000)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------------------------

function report (results: {
  images: Images
  exiftool: TimingRow[]
  runs: HttpRow[]
  seconds: number
  loadStart: number
}): void {
  const { images, exiftool, runs } = results
  const out: string[] = ['', `chat-metadata-api bench: Node ${process.version}, ${availableParallelism()} CPUs, ` +
    `load average ${results.loadStart.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end (other work on the machine skews every number)`]
  out.push(`images: camera.jpg 3000×2000 q90 ${kib(images.camera.length)} KiB; small.jpg 640×480 ${kib(images.small.length)} KiB (both with CAMERA_TAGS)`)

  out.push('', 'ExifTool cost per image (ms, one request at a time)')
  out.push(...table(
    ['method', 'image', 'n', 'median', 'p95', 'min', 'max'],
    exiftool.map((row) => [row.method, row.image, String(row.n), ms(row.medianMs), ms(row.p95Ms), ms(row.minMs), ms(row.maxMs)])
  ))
  for (const image of ['camera', 'small']) {
    const tuned = exiftool.find((row) => row.image === image && row.method.startsWith('b)'))
    const plain = exiftool.find((row) => row.image === image && row.method.startsWith('c)'))
    const fresh = exiftool.find((row) => row.image === image && row.method.startsWith('a)'))
    if (tuned !== undefined && plain !== undefined && fresh !== undefined) {
      out.push(`  ${image}: default read() / tuned = ${(plain.medianMs / tuned.medianMs).toFixed(1)}×, fresh / tuned = ${(fresh.medianMs / tuned.medianMs).toFixed(1)}× (medians)`)
    }
  }

  out.push('', `POST /v1/metadata (${CONNECTIONS} connections, ${EXIFTOOL_PROCS} ExifTool processes, a fresh app per row; latency in ms; load generator on the same 2 CPUs)`)
  out.push(...table(
    ['body', 'req bytes', 's', 'requests', 'req/s', 'p50', 'p97.5', 'p99', 'max', '2xx', 'non-2xx', 'errors'],
    runs.map((run) => [
      run.body, String(run.requestBytes), run.seconds.toFixed(1), String(run.requests), run.reqPerSec.toFixed(1),
      ms(run.latencyMs.p50), ms(run.latencyMs.p97_5), ms(run.latencyMs.p99), ms(run.latencyMs.max),
      String(run.ok2xx), String(run.non2xx), String(run.errors + run.timeouts)
    ])
  ))

  out.push('', 'Server process memory (MB)')
  out.push(...table(
    ['body', 'rss before', 'rss peak', 'growth', 'rss after GC', 'heap before', 'heap peak', 'heap after GC',
      'heapTotal peak', 'arrayBuffers peak', 'samples', 'perl rss', 'scratch', 'left'],
    runs.map(({ body, memory: { before, sampled, afterGc }, leftoverEntries }) => [
      body, mb(before.rssMB), mb(sampled.peak.rssMB), mb(sampled.peak.rssMB - before.rssMB), mb(afterGc.rssMB),
      mb(before.heapUsedMB), mb(sampled.peak.heapUsedMB), mb(afterGc.heapUsedMB),
      mb(sampled.peak.heapTotalMB), mb(sampled.peak.arrayBuffersMB), `${sampled.samples} in ${(sampled.spanMs / 1000).toFixed(1)} s`,
      afterGc.exiftoolRssMB === null ? 'n/a' : mb(afterGc.exiftoolRssMB), String(afterGc.scratchFiles), String(leftoverEntries)
    ])
  ))
  out.push(
    '  before: after one checked request, GC\'d. peak: largest 100 ms sample over warm-up + run, each column on its own.',
    '  heap: heapUsed. perl rss: both ExifTool children, after the run. scratch: upload files left after the run.',
    '  left: entries under the app\'s temp root after it closed.'
  )
  const upload = runs.find((run) => run.body.startsWith('multipart'))
  const control = runs.find((run) => run.control)
  if (upload !== undefined && control !== undefined) {
    const growth = (run: HttpRow): number => run.memory.sampled.peak.rssMB - run.memory.before.rssMB
    out.push(`  peak RSS growth: multipart ${mb(growth(upload))} MB, the same image as a data URI ${mb(growth(control))} MB; ` +
      `${CONNECTIONS} connections × ${mb(images.camera.length / MB)} MB image = ${mb(CONNECTIONS * images.camera.length / MB)} MB`)
  }
  console.log(out.join('\n'))

  // One line for machines, last in the output.
  console.log(JSON.stringify({
    bench: 'chat-metadata-api',
    node: process.version,
    cpus: availableParallelism(),
    loadAverage: { start: results.loadStart, end: loadavg()[0] },
    connections: CONNECTIONS,
    exiftoolProcs: EXIFTOOL_PROCS,
    httpSeconds: results.seconds,
    images: { cameraBytes: images.camera.length, smallBytes: images.small.length },
    exiftool,
    http: runs,
    ok: runs.every((run) => run.non2xx === 0 && run.errors === 0 && run.timeouts === 0)
  }, (_key, value: unknown) => typeof value === 'number' && !Number.isInteger(value) ? round(value) : value))
}

function table (headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)))
  // The first column is text (left-aligned); the rest are numbers (right-aligned).
  const line = (cells: string[]): string => '  ' + cells.map((cell, column) =>
    column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join('  ')
  return [line(headers), '  ' + widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(line)]
}

function ms (value: number): string {
  return value.toFixed(1)
}

function mb (value: number): string {
  return value.toFixed(1)
}

function kib (bytes: number): string {
  return (bytes / 1024).toFixed(1)
}

function round (value: number): number {
  return Math.round(value * 100) / 100
}

function log (message: string): void {
  console.error(`bench: ${message}`)
}

function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}

if (process.argv[2] === SERVER_FLAG) {
  try {
    await serve()
  } catch (error) {
    process.send?.({ type: 'failed', message: String(error) } satisfies FromServer)
    throw error
  }
} else {
  try {
    await main()
  } catch (error) {
    console.error('bench: failed:', error)
    process.exitCode = 1
  }
}
