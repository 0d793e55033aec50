/**
 * Fuzzing POST /v1/metadata, the long run (issue "Hardening", part 2): mutated images of every accepted format sent
 * to a real server; zero 5xx, zero crashes, the pool healthy afterwards, the scratch directory empty, no child left.
 *
 *   npm run fuzz                                  # 10,000 cases, seed base 1, 4 requests in flight
 *   npm run fuzz -- --cases 50000 --seed 7        # more cases, other mutations
 *   npm run fuzz -- --concurrency 8
 *   npm run fuzz -- --seed 1 --case 1234,5678     # replay cases (as a failure report names them), answers printed
 *
 * 1. The base images (test/support/image-mutations.ts buildFuzzBases: every picture format, JPEG XL as codestream
 *    and container, every camera raw; a few KB each, made in code) are built here, before the server starts.
 * 2. The server runs in a child process forked from this file (`--fuzz-server`), so this load generator does not
 *    share its event loop: buildApp + loadConfig with a generated API key, the metadata rate limit off (120 a minute
 *    would refuse nearly every case), its scratch directory under a private temporary root, and the service's own
 *    defaults for everything else (EXIFTOOL_PROCS = CPU count, 10 s per image, queue 256, overload refusal at 1 s
 *    of event-loop delay, request logging at info, its lines kept in a file here to quote for failing cases).
 * 3. Case i of seed base S is the same on every run and machine (test/fuzz.test.ts runs cases 0..999 of seed base
 *    1): base i mod 29, mutation kind in turn, every parameter from a PRNG seeded by (S, i); about one in ten sent
 *    as a JSON data URI, the rest as multipart. Each answer must be < 500, JSON, in the error envelope with
 *    statusCode = the HTTP status when not 200; a request that throws (reset, hang-up) or gets no answer within
 *    60 s is a crash.
 * 4. Before and after the cases, at rest (idle connections closed by the server, after a GC): the server's RSS
 *    (/proc/<pid>/status) and heap, its open file descriptors (/proc/<pid>/fd). After: a valid JPEG still answers
 *    200 with its camera, /health/ready is 200, the pool has EXIFTOOL_PROCS live children, the scratch directory is
 *    empty; and once the server has closed, none of its children is alive.
 *
 * Exit code 1 on any 5xx, crash, broken answer, or leak (scratch files, children left, file descriptors up by more
 * than FD_SLACK, heap after GC up by more than HEAP_SLACK_MB).
 */
import { fork, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import type { FuzzBase, FuzzCase } from '../test/support/image-mutations.ts'

// The harness (and with it sharp and ExifTool for the base images) is loaded by the fuzzer role only: the server
// process holds nothing but the service.
type Harness = typeof import('../test/support/image-mutations.ts')
let harness: Harness

const SERVER_FLAG = '--fuzz-server'
const DEFAULT_CASES = 10_000
const DEFAULT_SEED = 1
const DEFAULT_CONCURRENCY = 4
/** ExifTool's 10 s per image, once more on a new child, and slack: an answer later than this is a hang. */
const REQUEST_TIMEOUT_MS = 60_000
/** Open descriptors may differ by a few between two quiet moments (a timer's, a worker's); more is a leak. */
const FD_SLACK = 8
const HEAP_SLACK_MB = 64
const MB = 1024 * 1024

type ToServer = { cmd: 'state' } | { cmd: 'close' }
interface ServerState {
  pids: number[]
  procs: number
  scratchFiles: number
  heapUsedMB: number
  /** Memory outside the V8 heap held by JavaScript objects (Buffers among them). */
  externalMB: number
}
type FromServer =
  | { type: 'ready', port: number, pid: number }
  | { type: 'state', state: ServerState }
  | { type: 'closed', leftoverEntries: number }
  | { type: 'failed', message: string }

// ---------------------------------------------------------------------------------------------------------------
// Server role (child process): the real app, nothing else loaded
// ---------------------------------------------------------------------------------------------------------------

async function serve (): Promise<void> {
  const send = (message: FromServer): void => { process.send?.(message) }
  const tempRoot = requiredEnv('FUZZ_TEMP_ROOT')
  const log = createWriteStream(requiredEnv('FUZZ_LOG_FILE'))
  const { buildApp } = await import('../src/app.ts')
  const { loadConfig } = await import('../src/config.ts')
  const config = loadConfig({ API_KEYS: requiredEnv('FUZZ_API_KEY'), TMPDIR: tempRoot, RATE_LIMIT_METADATA_PER_MIN: '0' })
  const app = await buildApp(config, { logStream: { write (line: string) { log.write(line) } } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')

  let closing: Promise<void> | undefined
  const close = async (): Promise<void> => {
    closing ??= app.close()
    await closing
  }
  const handle = async (message: ToServer): Promise<void> => {
    switch (message.cmd) {
      case 'state': {
        // At rest: keep-alive connections the load generator left open closed, garbage collected (--expose-gc).
        app.server.closeIdleConnections()
        ;(globalThis as { gc?: () => void }).gc?.()
        let scratchFiles = 0
        for (const entry of await readdir(tempRoot, { withFileTypes: true })) {
          if (entry.isDirectory()) scratchFiles += (await readdir(join(tempRoot, entry.name))).length
        }
        send({
          type: 'state',
          state: {
            pids: app.metadataExtractor.pids,
            procs: config.exiftool.procs,
            scratchFiles,
            heapUsedMB: process.memoryUsage().heapUsed / MB,
            externalMB: process.memoryUsage().external / MB
          }
        })
        break
      }
      case 'close': {
        await close()
        await new Promise<void>((resolve) => { log.end(resolve) })
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
  // The parent is gone: end the ExifTool pool rather than linger.
  process.once('disconnect', () => {
    close().then(() => process.exit(0), () => process.exit(1))
  })
  send({ type: 'ready', port: address.port, pid: process.pid })
}

function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}

// ---------------------------------------------------------------------------------------------------------------
// Fuzzer role (parent process)
// ---------------------------------------------------------------------------------------------------------------

interface Options {
  cases: number
  seed: number
  concurrency: number
  /** Replay only these case indexes. */
  only?: number[]
}

function options (): Options {
  const { values } = parseArgs({
    options: {
      cases: { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      case: { type: 'string' }
    }
  })
  const integer = (text: string | undefined, fallback: number, name: string, min: number): number => {
    if (text === undefined) return fallback
    const value = Number(text)
    if (!Number.isSafeInteger(value) || value < min) throw new Error(`--${name} must be an integer ≥ ${min}, not ${text}`)
    return value
  }
  const only = values.case?.split(',').map((text) => integer(text.trim(), 0, 'case', 0))
  return {
    cases: integer(values.cases, DEFAULT_CASES, 'cases', 1),
    seed: integer(values.seed, DEFAULT_SEED, 'seed', 0) >>> 0,
    concurrency: integer(values.concurrency, DEFAULT_CONCURRENCY, 'concurrency', 1),
    ...(only === undefined ? {} : { only })
  }
}

interface Sample {
  rssMB: number
  fds: number
  heapUsedMB: number
  externalMB: number
}

interface LiveServer {
  child: ChildProcess
  pid: number
  baseUrl: string
  /** Set when the process exited before it was asked to. */
  crash: () => string | undefined
  state: () => Promise<ServerState>
  close: () => Promise<{ leftoverEntries: number | undefined }>
}

async function main (): Promise<void> {
  const opts = options()
  harness = await import('../test/support/image-mutations.ts')
  const { buildFuzzBases } = harness
  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-fuzz-'))
  const tempRoot = join(dir, 'root')
  const logFile = join(dir, 'server.log')
  await mkdir(tempRoot, { mode: 0o700 })
  const apiKey = `fuzz-${randomBytes(16).toString('hex')}`
  let server: LiveServer | undefined
  try {
    log(`Node ${process.version}, ${availableParallelism()} CPUs; building the base images`)
    const bases = await buildFuzzBases()
    server = await startServer(apiKey, tempRoot, logFile)
    log(`server pid ${server.pid} at ${server.baseUrl}`)
    const valid = bases.find((base) => base.name === 'jpeg')!
    if (opts.only !== undefined) {
      await replay(server, apiKey, bases, opts, logFile)
      return
    }
    process.exitCode = await fuzz(server, apiKey, bases, valid, opts, logFile)
  } finally {
    await server?.close()
    await rm(dir, { recursive: true, force: true })
  }
}

async function replay (server: LiveServer, apiKey: string, bases: FuzzBase[], opts: Options, logFile: string): Promise<void> {
  const { describeCase, planCase, problemWith, requestIdOf, sendCase, serverLogFor } = harness
  let failed = false
  for (const index of opts.only ?? []) {
    const fuzzCase = planCase(bases, opts.seed, index)
    console.log(describeCase(fuzzCase))
    try {
      const answer = await sendCase(server.baseUrl, apiKey, fuzzCase, REQUEST_TIMEOUT_MS)
      const problem = problemWith(answer, fuzzCase.mutation.bytes.length)
      failed ||= problem !== undefined
      console.log(`  → HTTP ${answer.status} ${answer.body.slice(0, 500)}${problem === undefined ? '' : `\n  PROBLEM: ${problem}`}`)
    } catch (error) {
      failed = true
      console.log(`  → the request failed: ${String(error)}`)
    }
    await delay(300) // the request's log line is written as the answer leaves, through a buffered stream
    const lines = serverLogFor([await readFile(logFile, 'utf8')], requestIdOf(fuzzCase))
    console.log(`  server log: ${lines.length === 0 ? '(nothing)' : lines.join(' | ')}`)
  }
  process.exitCode = failed ? 1 : 0
}

async function fuzz (server: LiveServer, apiKey: string, bases: FuzzBase[], valid: FuzzBase, opts: Options, logFile: string): Promise<number> {
  const { childProcessesOf, describeCase, isAlive, outcomeOf, planCase, problemWith, requestIdOf, runBounded, sendCase, serverLogFor } = harness
  const verdicts: string[] = []
  // Warm-up (not counted): every ExifTool child started and used, then the resting state measured.
  const warm = await healthy(server, apiKey, valid)
  if (warm !== undefined) verdicts.push(`the server was not healthy before the cases: ${warm}`)
  const before = await sample(server)
  await delay(1000) // the client notices the connections the server closed before it reuses them

  const perFormat = new Map<string, number>()
  const perKind = new Map<string, number>()
  const fellBack = new Map<string, number>()
  const perTransport = new Map<string, number>()
  const outcomes = new Map<string, number>()
  const outcomesPerFormat = new Map<string, Map<string, number>>()
  const failures: Array<{ fuzzCase: FuzzCase, problem: string }> = []
  /** The server's RSS every 1000 cases, under load: growth that goes on is a leak, a plateau is the allocator. */
  const rssTrajectory: number[] = []
  let done = 0
  let skipped = 0
  const started = performance.now()
  await runBounded(opts.cases, opts.concurrency, async (index) => {
    if (server.crash() !== undefined) { skipped++; return }
    const fuzzCase = planCase(bases, opts.seed, index)
    count(perFormat, fuzzCase.base.name)
    count(perKind, fuzzCase.mutation.kind)
    count(perTransport, fuzzCase.transport)
    if (fuzzCase.requested !== fuzzCase.mutation.kind) count(fellBack, `${fuzzCase.requested} → ${fuzzCase.mutation.kind}`)
    let outcome: string
    let problem: string | undefined
    try {
      const answer = await sendCase(server.baseUrl, apiKey, fuzzCase, REQUEST_TIMEOUT_MS)
      outcome = outcomeOf(answer)
      problem = problemWith(answer, fuzzCase.mutation.bytes.length)
    } catch (error) {
      outcome = 'no answer (crash)'
      problem = `the request failed: ${String(error)} (cause: ${String((error as Error).cause ?? 'none')})`
    }
    count(outcomes, outcome)
    const formatOutcomes = outcomesPerFormat.get(fuzzCase.base.name) ?? new Map<string, number>()
    outcomesPerFormat.set(fuzzCase.base.name, formatOutcomes)
    count(formatOutcomes, outcome)
    if (problem !== undefined) {
      failures.push({ fuzzCase, problem })
      log(`FAILURE ${describeCase(fuzzCase)}\n  → ${problem}`)
    }
    if (++done % 1000 === 0) {
      const rssMB = await rssOf(server.pid)
      rssTrajectory.push(rssMB)
      log(`${done}/${opts.cases} cases, ${failures.length} failures, ${((performance.now() - started) / 1000).toFixed(0)} s, server RSS ${mb(rssMB)}`)
    }
  })
  const seconds = (performance.now() - started) / 1000

  const crash = server.crash()
  let after: Sample | undefined
  let end: ServerState | undefined
  let children: Array<{ pid: number, command: string }> = []
  if (crash === undefined) {
    const health = await healthy(server, apiKey, valid)
    if (health !== undefined) verdicts.push(`the pool is not healthy after the cases: ${health}`)
    after = await sample(server)
    end = await server.state()
    children = await childProcessesOf(server.pid)
  } else {
    verdicts.push(`the server crashed: ${crash}`)
  }
  const { leftoverEntries } = await server.close()
  await waitUntil(() => !children.some((child) => isAlive(child.pid)), 5000)
  const left = children.filter((child) => isAlive(child.pid))

  // -------------------------------------------------------------------------------------------------------------
  // The summary
  const serverLog = await readFile(logFile, 'utf8').catch(() => '')
  const line = (label: string, map: Map<string, number>): string =>
    `${label}: ${[...map].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${key} ${n}`).join(', ') || 'none'}`
  console.log('')
  console.log(`fuzz: ${done} cases${skipped > 0 ? ` (${skipped} not sent after the crash)` : ''}, seed base ${opts.seed}, concurrency ${opts.concurrency}, ` +
    `${bases.length} base images, ${seconds.toFixed(1)} s (${(done / seconds).toFixed(1)} cases/s)`)
  console.log(`base images: ${bases.map((base) => `${base.name} ${base.bytes.length} B (${createHash('sha256').update(base.bytes).digest('hex').slice(0, 8)})`).join(', ')}`)
  console.log(line('cases per format', perFormat))
  console.log(line('cases per mutation kind', perKind))
  console.log(line('kinds that fell back (nothing in the file they apply to)', fellBack))
  console.log(line('request bodies', perTransport))
  console.log(line('outcomes', outcomes))
  console.log('outcomes per format:')
  for (const base of bases) console.log(`  ${line(base.name, outcomesPerFormat.get(base.name) ?? new Map())}`)
  if (failures.length === 0) {
    console.log('failures (5xx, crashes, broken answers): none')
  } else {
    console.log(`failures (5xx, crashes, broken answers): ${failures.length}`)
    for (const { fuzzCase, problem } of failures) {
      const lines = serverLogFor([serverLog], requestIdOf(fuzzCase))
      console.log(`  ${describeCase(fuzzCase)}\n    → ${problem}\n    server log: ${lines.length === 0 ? '(nothing)' : lines.join(' | ')}`)
    }
    verdicts.push(`${failures.length} case(s) failed`)
  }
  console.log(`server pid ${server.pid}: RSS ${mb(before.rssMB)} → ${after === undefined ? '?' : mb(after.rssMB)}, ` +
    `heap after GC ${mb(before.heapUsedMB)} → ${after === undefined ? '?' : mb(after.heapUsedMB)}, ` +
    `external ${mb(before.externalMB)} → ${after === undefined ? '?' : mb(after.externalMB)}, ` +
    `open fds ${before.fds} → ${after?.fds ?? '?'} (at rest, idle connections closed)`)
  console.log(`server RSS every 1000 cases (under load): ${rssTrajectory.map((value) => value.toFixed(0)).join(', ') || '-'} MB`)
  if (after !== undefined && after.fds > before.fds + FD_SLACK) verdicts.push(`file descriptors grew from ${before.fds} to ${after.fds}`)
  if (after !== undefined && after.heapUsedMB > before.heapUsedMB + HEAP_SLACK_MB) verdicts.push(`the heap after GC grew from ${mb(before.heapUsedMB)} to ${mb(after.heapUsedMB)}`)
  const scratchEmpty = end !== undefined && end.scratchFiles === 0 && leftoverEntries === 0
  console.log(`scratch directory empty: ${scratchEmpty ? 'yes' : 'no'} (${end?.scratchFiles ?? '?'} files after the cases, ${leftoverEntries ?? '?'} entries left under its root after close)`)
  if (!scratchEmpty) verdicts.push('the scratch directory was not empty')
  console.log(`ExifTool pool at the end: ${end === undefined ? '?' : `${end.pids.length} of ${end.procs} children alive (${end.pids.join(', ')})`}; ` +
    `server's children before close: ${children.map((child) => `${child.command} ${child.pid}`).join(', ') || 'none'}; ` +
    `children left after it exited: ${left.length === 0 ? 'none' : left.map((child) => `${child.command} ${child.pid}`).join(', ')}`)
  if (left.length > 0) verdicts.push(`${left.length} child process(es) left`)
  console.log(verdicts.length === 0 ? 'result: PASS' : `result: FAIL: ${verdicts.join('; ')}`)
  return verdicts.length === 0 ? 0 : 1
}

/** A valid JPEG answers 200 with its camera (as many at once as the pool has children), the service is ready, and
 * every ExifTool child is alive: undefined, or what is wrong. */
async function healthy (server: LiveServer, apiKey: string, valid: FuzzBase): Promise<string | undefined> {
  const { isAlive } = harness
  let problem: string | undefined
  // A child may just have been recycled (they retire after 500 tasks) and is replaced on demand: a few rounds.
  for (let round = 0; round < 5; round++) {
    const state = await server.state()
    const answers = await Promise.all(Array.from({ length: state.procs * 2 }, async () => {
      const form = new FormData()
      form.append('image', new Blob([valid.bytes]), 'valid.jpg')
      const response = await fetch(`${server.baseUrl}/v1/metadata`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      return { status: response.status, body: await response.json() as { camera?: { make?: string } } }
    }))
    const wrong = answers.find((answer) => answer.status !== 200 || answer.body.camera?.make !== 'NIKON')
    const ready = await fetch(`${server.baseUrl}/health/ready`)
    const after = await server.state()
    problem = wrong !== undefined
      ? `a valid JPEG got HTTP ${wrong.status} ${JSON.stringify(wrong.body).slice(0, 200)}`
      : ready.status !== 200
        ? `/health/ready answered ${ready.status}`
        : after.pids.length !== after.procs || !after.pids.every(isAlive)
          ? `${after.pids.length} of ${after.procs} ExifTool children alive`
          : undefined
    if (problem === undefined) return undefined
  }
  return problem
}

async function sample (server: LiveServer): Promise<Sample> {
  const state = await server.state()
  await delay(500) // the closed connections' descriptors are released
  const fds = (await readdir(`/proc/${server.pid}/fd`)).length
  return { rssMB: await rssOf(server.pid), fds, heapUsedMB: state.heapUsedMB, externalMB: state.externalMB }
}

async function rssOf (pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) / 1024
}

async function startServer (apiKey: string, tempRoot: string, logFile: string): Promise<LiveServer> {
  const child = fork(import.meta.filename, [SERVER_FLAG], {
    env: { ...process.env, FUZZ_API_KEY: apiKey, FUZZ_TEMP_ROOT: tempRoot, FUZZ_LOG_FILE: logFile },
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  let closing = false
  let crash: string | undefined
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      if (!closing) crash = `exit code ${code ?? '-'}, signal ${signal ?? '-'}`
      resolve()
    })
  })
  const waiting = new Map<string, Array<(message: FromServer) => void>>()
  child.on('message', (message: FromServer) => {
    const next = waiting.get(message.type)?.shift()
    if (next !== undefined) next(message)
    else if (message.type === 'failed') log(`server: ${message.message}`)
  })
  const reply = async <T extends FromServer['type']>(type: T, timeoutMs: number): Promise<Extract<FromServer, { type: T }>> =>
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => { reject(new Error(`the server did not send '${type}' within ${timeoutMs} ms`)) }, timeoutMs)
      const queue = waiting.get(type) ?? []
      waiting.set(type, queue)
      queue.push((message) => { clearTimeout(timer); resolve(message as Extract<FromServer, { type: T }>) })
      exited.then(() => { clearTimeout(timer); reject(new Error(`the server exited (${crash ?? 'closed'})`)) }, () => {})
    })
  const ready = await reply('ready', 120_000)
  return {
    child,
    pid: ready.pid,
    baseUrl: `http://127.0.0.1:${ready.port}`,
    crash: () => crash,
    state: async () => {
      child.send({ cmd: 'state' } satisfies ToServer)
      return (await reply('state', 30_000)).state
    },
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return { leftoverEntries: undefined }
      closing = true
      const closed = reply('closed', 30_000).then((message) => message.leftoverEntries, () => undefined)
      child.send({ cmd: 'close' } satisfies ToServer)
      const leftoverEntries = await closed
      if (!await Promise.race([exited.then(() => true), delay(15_000).then(() => false)])) {
        child.kill('SIGKILL')
        await exited
      }
      return { leftoverEntries }
    }
  }
}

function count (map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}

async function waitUntil (condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition() && Date.now() < deadline) await delay(50)
}

async function delay (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

function mb (value: number): string {
  return `${value.toFixed(1)} MB`
}

function log (message: string): void {
  process.stderr.write(`fuzz: ${message}\n`)
}

if (process.argv.includes(SERVER_FLAG)) {
  await serve()
} else {
  await main()
}
