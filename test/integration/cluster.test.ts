import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDirectoryPrefix } from '../../src/scratch-directory.ts'
import { childrenOf, residentBytes } from '../support/proc.ts'
import { isAlive, runProcess, until } from '../support/processes.ts'
import { deleteKeys, REDIS_URL } from '../support/redis.ts'
import { PROJECT_ROOT, startService, stopService, type ServiceProcess } from '../support/servers.ts'

// WORKERS=2 as a user runs it: the real entry (`node src/server.ts`) becoming a node:cluster primary with two workers
// on one port, sharing the real Redis. Every request goes over a connection of its own, which the primary hands to
// the workers in turn, so consecutive requests land on different workers.
const KEY = 'cluster-test-key'
const PREFIX = `chat-metadata-api-test:cluster:${randomUUID()}:`
const MESSAGES = [
  'where is my order #A-10042?',
  'what payment methods do you accept',
  'how do I reset my password',
  'do you ship to Norway',
  'can I change the delivery address',
  'the parcel arrived damaged, what now?'
]

function isServer (pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').some((argument) => argument.endsWith('src/server.ts'))
  } catch {
    return false
  }
}

/** One request over a new connection, closed after the answer. */
async function send (port: number, method: 'GET' | 'POST', path: string, body?: unknown, key = KEY): Promise<{ status: number, text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body)
  return await new Promise((resolve, reject) => {
    const request = httpRequest({
      host: '127.0.0.1',
      port,
      method,
      path,
      agent: false,
      headers: { authorization: `Bearer ${key}`, ...payload === undefined ? {} : { 'content-type': 'application/json' } }
    }, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, text }) })
    })
    request.on('error', reject)
    request.end(payload)
  })
}

/** The value of one series in a scrape, or undefined when it is absent. */
function value (text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

const CHAT_OK = 'http_requests_total{method="POST",route="/v1/chat/send",status="200"}'

/** The service's JSON log lines, the primary's and its workers' (they inherit its stdout), whole lines only. */
function logLines (service: ServiceProcess): Array<Record<string, unknown>> {
  return service.output().split('\n').slice(0, -1)
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

function said (service: ServiceProcess, msg: string): Array<Record<string, unknown>> {
  return logLines(service).filter((line) => line['msg'] === msg)
}

/**
 * Waits until `count` workers listen and each has said it is ready: one that has just started refuses the API for a
 * moment (it counts its start-up as event-loop lag), and the primary hands it connections all the same.
 */
async function workersReady (service: ServiceProcess, count: number): Promise<number[]> {
  await until(() => said(service, 'worker listening').length >= count, 400, 25)
  const workers = childrenOf(service.child.pid!)
  await until(async () => {
    await send(service.port, 'GET', '/health/ready')
    const ready = new Set(said(service, 'request').filter((line) => line['route'] === '/health/ready' && line['status'] === 200).map((line) => line['pid']))
    return workers.every((pid) => ready.has(pid))
  }, 200, 25)
  return workers
}

// The services' scratch directories go under a root of this file's own: a worker killed with SIGKILL cannot remove
// its own, and none may be left in the machine's /tmp.
let scratchRoot: string
beforeAll(async () => { scratchRoot = await mkdtemp(join(tmpdir(), 'chat-metadata-api-cluster-test-')) })
afterAll(async () => { await rm(scratchRoot, { recursive: true, force: true }) })

describe('WORKERS=2', () => {
  let service: ServiceProcess
  let workers: number[]
  let chatsAnswered = 0

  /** The pids of the workers that answered each request to `route`, once `count` of them have been logged. */
  const servedBy = async (route: string, count: number): Promise<number[]> => {
    const pids = (): number[] => said(service, 'request').filter((line) => line['route'] === route).map((line) => line['pid'] as number)
    // A request's log line may reach the output just after its answer reached the test.
    await until(() => pids().length === count, 200, 25)
    return pids()
  }

  beforeAll(async () => {
    // startService waits until one worker is ready; the tests want both.
    service = await startService({ TMPDIR: scratchRoot, API_KEYS: KEY, WORKERS: '2', REDIS_URL, REDIS_KEY_PREFIX: PREFIX })
    workers = await workersReady(service, 2)
  })

  afterAll(async () => {
    await stopService(service)
    await deleteKeys(PREFIX)
  })

  it('runs a primary and two worker processes of the same entry', () => {
    expect(isServer(service.child.pid!)).toBe(true)
    expect(workers).toHaveLength(2)
    expect(workers.every(isServer)).toBe(true)
    expect(said(service, 'worker listening').map((line) => line['workerPid']).sort()).toEqual([...workers].sort())
  })

  it('continues one conversation whichever worker takes each message', async () => {
    let id: string | undefined
    for (const message of [...MESSAGES, ...MESSAGES]) {
      const answer = await send(service.port, 'POST', '/v1/chat/send', { message, user_id: 'customer-1', ...id === undefined ? {} : { conversation_id: id } })
      expect(answer.status, answer.text).toBe(200)
      chatsAnswered++
      id = (JSON.parse(answer.text) as { conversation_id: string }).conversation_id
    }
    const transcript = await send(service.port, 'GET', `/v1/chat/conversations/${id!}?user_id=customer-1`)
    expect(transcript.status).toBe(200)
    const turns = (JSON.parse(transcript.text) as { turns: Array<{ role: string, text: string }> }).turns
    expect(turns).toHaveLength(4 * MESSAGES.length)
    expect(turns.filter((turn) => turn.role === 'customer').map((turn) => turn.text)).toEqual([...MESSAGES, ...MESSAGES])
    // Both workers answered some of them.
    expect(new Set(await servedBy('/v1/chat/send', chatsAnswered))).toEqual(new Set(workers))
  })

  it('answers /metrics from any worker with the sum over both', async () => {
    const scrapes = [await send(service.port, 'GET', '/metrics'), await send(service.port, 'GET', '/metrics')]
    expect(new Set(await servedBy('/metrics', 2))).toEqual(new Set(workers))
    for (const scrape of scrapes) {
      expect(scrape.status).toBe(200)
      expect(value(scrape.text, CHAT_OK)).toBe(chatsAnswered)
      expect(value(scrape.text, 'http_request_duration_seconds_count{method="POST",route="/v1/chat/send",status="200"}')).toBe(chatsAnswered)
      // Node's gauges as prom-client adds them up: memory summed (more than either worker holds), the start time left out.
      expect(value(scrape.text, 'process_resident_memory_bytes')).toBeGreaterThan(Math.max(...workers.map(residentBytes)))
      expect(scrape.text).not.toContain('process_start_time_seconds')
    }
  })

  it('replaces a worker that dies, and keeps answering meanwhile', async () => {
    const [killed, survivor] = workers as [number, number]
    process.kill(killed, 'SIGKILL')
    await until(() => said(service, 'worker exited unexpectedly').length === 1, 200, 25)
    for (let request = 0; request < 4; request++) expect((await send(service.port, 'GET', '/health/live')).status).toBe(200)

    workers = await workersReady(service, 3)
    expect(workers).toHaveLength(2)
    expect(workers).toContain(survivor)
    expect(workers).not.toContain(killed)
    // The dead worker's counts went with it: the sum is now the survivor's (the newcomer has answered no chat).
    const scrape = await send(service.port, 'GET', '/metrics')
    expect(scrape.status).toBe(200)
    const survivorsChats = (await servedBy('/v1/chat/send', chatsAnswered)).filter((pid) => pid === survivor).length
    expect(value(scrape.text, CHAT_OK)).toBe(survivorsChats)
  })

  it('on SIGTERM closes both workers and exits 0, leaving no process behind', async () => {
    const tree = [service.child.pid!, ...workers, ...workers.flatMap(childrenOf)]
    service.child.kill('SIGTERM')
    expect(await service.exited).toEqual({ code: 0, signal: null })
    await until(() => tree.every((pid) => !isAlive(pid)), 100, 50)
    expect(new Set(said(service, 'closing').map((line) => line['pid']))).toEqual(new Set([service.child.pid, ...workers]))
    expect(said(service, 'worker exited').map((line) => line['code'])).toEqual([0, 0])
  })
})

describe('WORKERS=2, a worker killed mid-upload', () => {
  /** Each worker's scratch directory under the root, and the files in it. */
  const scratch = async (workers: number[]): Promise<Map<number, string[] | undefined>> => {
    const names = await readdir(scratchRoot)
    return new Map(await Promise.all(workers.map(async (pid) => {
      const own = names.find((name) => name.startsWith(scratchDirectoryPrefix(pid)))
      return [pid, own === undefined ? undefined : await readdir(join(scratchRoot, own))] as const
    })))
  }

  it('loses the upload, and the primary removes the worker\'s scratch directory with the partial file in it', async () => {
    const service = await startService({ TMPDIR: scratchRoot, API_KEYS: KEY, WORKERS: '2', REDIS_URL, REDIS_KEY_PREFIX: PREFIX })
    try {
      const workers = await workersReady(service, 2)
      // Half of a 2 MB upload, past the 512 KiB the intake holds before it opens the scratch file; the rest never comes.
      const boundary = 'cluster-kill-boundary'
      const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\n`)
      const upload = httpRequest({
        host: '127.0.0.1',
        port: service.port,
        method: 'POST',
        path: '/v1/metadata',
        agent: false,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + 2 * 1024 * 1024 }
      })
      upload.on('error', () => {})
      upload.write(Buffer.concat([head, Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(1024 * 1024)]))
      let receiving: number | undefined
      await until(async () => {
        receiving = [...(await scratch(workers))].find(([, files]) => (files ?? []).length > 0)?.[0]
        return receiving !== undefined
      }, 400, 25)
      process.kill(receiving!, 'SIGKILL')
      await until(() => said(service, 'worker exited unexpectedly').length === 1, 200, 25)
      await until(async () => (await scratch([receiving!])).get(receiving!) === undefined, 200, 25)
      upload.destroy()
      // The other worker's is untouched.
      const survivor = workers.find((pid) => pid !== receiving)!
      expect((await scratch([survivor])).get(survivor)).toEqual([])
    } finally {
      await stopService(service)
      await deleteKeys(PREFIX)
    }
    // Every directory of the service is gone once it has stopped.
    expect((await readdir(scratchRoot)).filter((name) => name.startsWith('chat-metadata-api-'))).toEqual([])
  })
})

describe('WORKERS=2 without a key, outside production', () => {
  it('generates one development key, logged once, that every worker accepts', async () => {
    const service = await startService({ TMPDIR: scratchRoot, WORKERS: '2', REDIS_URL, REDIS_KEY_PREFIX: PREFIX })
    try {
      await workersReady(service, 2)
      const warnings = service.output().split('\n').filter((line) => line.includes('generated a development API key'))
      expect(warnings).toHaveLength(1)
      const key = /for this run: (\S+)"/.exec(warnings[0]!)![1]!
      for (let request = 0; request < 4; request++) {
        expect((await send(service.port, 'POST', '/v1/chat/send', { message: 'hi', user_id: 'customer-2' }, key)).status).toBe(200)
      }
      // Both workers took some (their log lines may reach the output just after the answers).
      const chatWorkers = (): Set<unknown> => new Set(said(service, 'request').filter((line) => line['route'] === '/v1/chat/send').map((line) => line['pid']))
      await until(() => chatWorkers().size === 2, 200, 25)
    } finally {
      await stopService(service)
      await deleteKeys(PREFIX)
    }
  })
})

describe('WORKERS=2 in a crash loop', () => {
  it('stops with exit 1 at the sixth worker death within a minute, instead of replacing them forever', async () => {
    const service = await startService({ TMPDIR: scratchRoot, API_KEYS: KEY, WORKERS: '2', REDIS_URL, REDIS_KEY_PREFIX: PREFIX })
    try {
      await until(() => said(service, 'worker listening').length === 2, 400, 25)
      for (let death = 1; death <= 6; death++) {
        // The newest worker: each replacement is killed as soon as it is forked (the replacements come 0.1–1.6 s apart).
        const started = said(service, 'worker started')
        process.kill(started.at(-1)!['workerPid'] as number, 'SIGKILL')
        if (death < 6) await until(() => said(service, 'worker started').length > started.length, 200, 25)
      }
      expect(await service.exited).toEqual({ code: 1, signal: null })
      expect(said(service, 'worker exited unexpectedly')).toHaveLength(6)
      expect(said(service, 'workers keep dying: stopping')).toHaveLength(1)
    } finally {
      await stopService(service)
      await deleteKeys(PREFIX)
    }
  })
})

describe('WORKERS=2 that cannot run', () => {
  const start = async (env: Record<string, string>): Promise<{ exitCode: number | null, stdout: string, stderr: string }> =>
    await runProcess('npm', ['start', '--silent'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env['PATH'], HOST: '127.0.0.1', PORT: '0', API_KEYS: KEY, EXIFTOOL_PROCS: '1', WORKERS: '2', ...env },
      timeoutMs: 20_000
    })

  it('without REDIS_URL, stops before forking, saying why in one line', async () => {
    const { exitCode, stdout, stderr } = await start({})
    expect(exitCode).toBe(1)
    expect(stderr.trim()).toBe('Invalid configuration: WORKERS above 1 needs REDIS_URL, so that the workers share conversations and rate-limit counts')
    expect(stdout).toBe('')
  })

  it('when a worker cannot start, exits 1 with the worker\'s message instead of restarting it', async () => {
    const { exitCode, stdout, stderr } = await start({ REDIS_URL: 'redis://127.0.0.1:1' })
    expect(exitCode).toBe(1)
    expect(stderr).toMatch(/^Start-up failed: Redis at 127\.0\.0\.1:1 cannot be reached: .*ECONNREFUSED/m)
    expect(stdout).toMatch(/"msg":"a worker failed to start: stopping"/)
    expect(stdout).not.toMatch(/"msg":"worker listening"/)
  })
})
