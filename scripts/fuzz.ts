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
 * 2. The server runs in a child process (scripts/fuzz/service.ts, forked with test/support/processes.ts), so this
 *    load generator does not share its event loop: buildApp + loadConfig with a generated API key, the metadata rate
 *    limit off (120 a minute would refuse nearly every case), its scratch directory under a private temporary root,
 *    and the service's own defaults for everything else (EXIFTOOL_PROCS = CPU count, 10 s per image, queue 256,
 *    overload refusal at 1 s of event-loop delay, request logging at info, its lines kept in a file here to quote
 *    for failing cases).
 * 3. Case i of seed base S is the same on every run and machine (test/integration/fuzz.test.ts runs cases 0..999 of seed base
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
import { createHash, randomBytes } from 'node:crypto'
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import {
  buildFuzzBases, childProcessesOf, describeCase, isAlive, outcomeOf, planCase, problemWith, requestIdOf, runBounded,
  sendCase, serverLogFor, type FuzzBase, type FuzzCase
} from '../test/support/image-mutations.ts'
import { until } from '../test/support/processes.ts'
import { healthy, REQUEST_TIMEOUT_MS, residentMB, restingSample, startServer, type FuzzServer, type RestingSample, type ServerState } from './fuzz/server.ts'

const DEFAULT_CASES = 10_000
const DEFAULT_SEED = 1
const DEFAULT_CONCURRENCY = 4
/** Open descriptors may differ by a few between two quiet moments (a timer's, a worker's); more is a leak. */
const FD_SLACK = 8
const HEAP_SLACK_MB = 64

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

async function main (): Promise<void> {
  const opts = options()
  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-fuzz-'))
  const tempRoot = join(dir, 'root')
  const logFile = join(dir, 'server.log')
  await mkdir(tempRoot, { mode: 0o700 })
  const apiKey = `fuzz-${randomBytes(16).toString('hex')}`
  let server: FuzzServer | undefined
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

async function replay (server: FuzzServer, apiKey: string, bases: FuzzBase[], opts: Options, logFile: string): Promise<void> {
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

async function fuzz (server: FuzzServer, apiKey: string, bases: FuzzBase[], valid: FuzzBase, opts: Options, logFile: string): Promise<number> {
  const verdicts: string[] = []
  // Warm-up (not counted): every ExifTool child started and used, then the resting state measured.
  const warm = await healthy(server, apiKey, valid)
  if (warm !== undefined) verdicts.push(`the server was not healthy before the cases: ${warm}`)
  const before = await restingSample(server)
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
      const rssMB = await residentMB(server.pid)
      rssTrajectory.push(rssMB)
      log(`${done}/${opts.cases} cases, ${failures.length} failures, ${((performance.now() - started) / 1000).toFixed(0)} s, server RSS ${mb(rssMB)}`)
    }
  })
  const seconds = (performance.now() - started) / 1000

  const crash = server.crash()
  let after: RestingSample | undefined
  let end: ServerState | undefined
  let children: Array<{ pid: number, command: string }> = []
  if (crash === undefined) {
    const health = await healthy(server, apiKey, valid)
    if (health !== undefined) verdicts.push(`the pool is not healthy after the cases: ${health}`)
    after = await restingSample(server)
    end = await server.state()
    children = await childProcessesOf(server.pid)
  } else {
    verdicts.push(`the server crashed: ${crash}`)
  }
  const { leftoverEntries } = await server.close()
  await until(() => !children.some((child) => isAlive(child.pid)), 100, 50).catch(() => {})
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

function count (map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}

function mb (value: number): string {
  return `${value.toFixed(1)} MB`
}

function log (message: string): void {
  process.stderr.write(`fuzz: ${message}\n`)
}

await main()
