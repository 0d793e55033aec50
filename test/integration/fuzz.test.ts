import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, AUTH, createTestApp, imageForm, listen, type TestApp } from '../support/app.ts'
import {
  buildFuzzBases,
  childProcessesOf,
  describeCase,
  isAlive,
  MUTATION_KINDS,
  outcomeOf,
  planCase,
  problemWith,
  requestIdOf,
  runBounded,
  sendCase,
  serverLogFor,
  type FuzzBase,
  type FuzzCase
} from '../support/image-mutations.ts'
import { until } from '../support/processes.ts'

// Fuzzing POST /v1/metadata: 1,000 mutated images of every accepted format (test/support/image-mutations.ts), sent
// as real multipart and JSON data-URI requests to a listening app with the real ExifTool pool. The same seed base
// every run, so the same 1,000 cases; `npm run fuzz` runs 10,000 (and replays one: `-- --seed S --case I`).
const SEED_BASE = 1
const CASES = 1000
const CONCURRENCY = 4
const PROCS = 2
/** A request hostile enough to time ExifTool out twice (10 s each, then a retry) still answers within this. */
const REQUEST_TIMEOUT_MS = 45_000

let t: TestApp
let baseUrl: string
let bases: FuzzBase[]
let closed = false
const failures: string[] = []
const outcomes = new Map<string, number>()
const ran: FuzzCase[] = []
/** Every ExifTool child seen during the run: all must be gone once the app has closed. */
const pidsSeen = new Set<number>()

beforeAll(async () => {
  [t, bases] = await Promise.all([
    createTestApp({ exiftool: { procs: PROCS, taskTimeoutMs: 10_000, maxQueue: 64 } }),
    buildFuzzBases()
  ])
  baseUrl = await listen(t)
})
afterAll(async () => {
  if (!closed) await t?.close()
})

function count (map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1)
}

function validJpeg (): Buffer {
  const jpeg = bases.find((base) => base.name === 'jpeg')
  if (jpeg === undefined) throw new Error('no JPEG base image')
  return jpeg.bytes
}

describe('fuzzing POST /v1/metadata', () => {
  it(`answers ${CASES} mutated images of every format below 500, in the error envelope, over real HTTP`, async () => {
    const started = performance.now()
    await runBounded(CASES, CONCURRENCY, async (index) => {
      const fuzzCase = planCase(bases, SEED_BASE, index)
      ran.push(fuzzCase)
      let problem: string | undefined
      try {
        const answer = await sendCase(baseUrl, API_KEY, fuzzCase, REQUEST_TIMEOUT_MS)
        count(outcomes, outcomeOf(answer))
        problem = problemWith(answer, fuzzCase.mutation.bytes.length)
      } catch (error) {
        count(outcomes, 'no answer')
        problem = `the request failed: ${String(error)} (cause: ${String((error as Error).cause ?? 'none')})`
      }
      for (const pid of t.app.metadataExtractor.pids) pidsSeen.add(pid)
      if (problem !== undefined) {
        const log = serverLogFor(t.logs, requestIdOf(fuzzCase))
        failures.push(`${describeCase(fuzzCase)}\n    → ${problem}\n    server log: ${log.length === 0 ? '(nothing)' : log.join(' | ')}`)
      }
    })
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    const summary = [...outcomes].sort((a, b) => b[1] - a[1]).map(([outcome, n]) => `${outcome} ×${n}`).join(', ')
    console.log(`fuzz: ${CASES} cases in ${seconds} s (concurrency ${CONCURRENCY}): ${summary}`)
    expect(failures, `${failures.length} of ${CASES} cases failed (replay each with the command shown):\n${failures.join('\n')}\n`).toEqual([])
  }, 240_000)

  it('spread the cases over every format, every mutation kind and both request bodies', () => {
    expect(ran).toHaveLength(CASES)
    expect(new Set(ran.map((fuzzCase) => fuzzCase.base.name))).toEqual(new Set(bases.map((base) => base.name)))
    expect(new Set(ran.map((fuzzCase) => fuzzCase.mutation.kind))).toEqual(new Set(MUTATION_KINDS))
    const dataUris = ran.filter((fuzzCase) => fuzzCase.transport === 'data-uri').length
    expect(dataUris).toBeGreaterThan(CASES * 0.05)
    expect(dataUris).toBeLessThan(CASES * 0.15)
  })

  it('leaves the ExifTool pool healthy: a valid image still answers with its camera, every child alive', async () => {
    // A child may just have been recycled (ExifTool's children retire after 500 tasks) and is replaced on demand:
    // a few rounds of concurrent requests bring the pool back to its size.
    let pids: number[] = []
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(Array.from({ length: PROCS * 2 }, async () => {
        const response = await fetch(`${baseUrl}/v1/metadata`, { method: 'POST', headers: AUTH, body: imageForm(validJpeg()) })
        return { status: response.status, body: await response.json() as Record<string, unknown> }
      }))
      for (const answer of answers) {
        expect(answer.status).toBe(200)
        expect(answer.body['camera']).toEqual({ make: 'NIKON', model: 'COOLPIX P6000' })
      }
      pids = t.app.metadataExtractor.pids
      if (pids.length === PROCS && pids.every(isAlive)) break
    }
    expect(pids).toHaveLength(PROCS)
    expect(pids.every(isAlive)).toBe(true)
    for (const pid of pids) pidsSeen.add(pid)
    const ready = await fetch(`${baseUrl}/health/ready`)
    expect(ready.status).toBe(200)
  })

  it('leaves the scratch directory empty', async () => {
    expect(await t.scratchFiles()).toEqual([])
  })

  it('leaves no ExifTool child behind once the app has closed', async () => {
    await t.close()
    closed = true
    expect(pidsSeen.size).toBeGreaterThanOrEqual(PROCS)
    await until(() => ![...pidsSeen].some(isAlive), 500, 10)
    expect((await childProcessesOf(process.pid)).filter((child) => child.command === 'perl')).toEqual([])
  })
})
