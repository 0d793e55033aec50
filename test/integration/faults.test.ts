import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import { request as httpRequest, type ClientRequest } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { ExifTool } from 'exiftool-vendored'
import { ReadRawTask } from 'exiftool-vendored/dist/ReadRawTask.js'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { AUTH, createTestApp, imageForm, listen, multipart, TEST_CHAT_CONFIG, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { isAlive, until } from '../support/processes.ts'
import { freePort } from '../support/servers.ts'

// Faults, each asserted as the client sees it. Covered elsewhere, and not repeated here:
// - test/integration/exiftool-pool.test.ts: a child killed (SIGKILL) while it reads a request's image → 200 (retried) and the
//   child replaced; a child stopped (SIGSTOP) mid-request → 200 after the task timeout and the retry, or 503
//   EXTRACTION_TIMEOUT with Retry-After when the retry hangs too, then 200 again; a full queue → 503 EXTRACTOR_BUSY;
//   no child left after the app closes (a healthy pool).
// - test/integration/readiness.test.ts: Redis stopped → a quick 503 CONVERSATION_STORE_UNAVAILABLE with Retry-After, not ready,
//   and a new conversation once it is back.
// - test/integration/metadata.http.test.ts: a client that leaves mid-upload → its partial file removed, the server keeps serving.
// - test/integration/shutdown.test.ts: SIGTERM with an upload in flight → it is answered, ExifTool ended, nothing left on disk.

let images: ImageFactory
let photo: Buffer

beforeAll(async () => {
  images = new ImageFactory()
  photo = await images.make('jpeg', { tags: CAMERA_TAGS })
})
afterAll(async () => { await images.close() })

/** Log lines at error level or above (pino: 50 error, 60 fatal). */
function errorLines (lines: string[]): string[] {
  return lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50)
}

async function extract (t: TestApp): Promise<{ statusCode: number, body: Record<string, unknown>, ms: number }> {
  const { payload, headers } = await multipart(imageForm(photo))
  const start = performance.now()
  const response = await t.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
  return { statusCode: response.statusCode, body: response.json(), ms: performance.now() - start }
}

describe('an ExifTool child stopped mid-request', () => {
  it('is answered within the task timeout and one retry, and a child still stopped when the app closes is ended too', async () => {
    const t = await createTestApp({ exiftool: { procs: 1, taskTimeoutMs: 1000, maxQueue: 8 } })
    const extractor = t.app.metadataExtractor
    const seen = new Set<number>()
    try {
      expect((await extract(t)).statusCode).toBe(200)
      const [first] = extractor.pids
      process.kill(first!, 'SIGSTOP')
      seen.add(first!)

      const answer = await extract(t)
      expect(answer.statusCode).toBe(200)
      // One task timeout, then the retry on a new child (perl starts in ~100 ms).
      expect(answer.ms).toBeLessThan(1000 + 1500)
      expect((await extract(t)).statusCode).toBe(200)

      // A child that hangs at shutdown: ending the pool must not wait for it for ever, nor leave it behind.
      const [second] = extractor.pids
      expect(second).not.toBe(first)
      process.kill(second!, 'SIGSTOP')
      seen.add(second!)
    } finally {
      await t.close()
    }
    await until(() => [...seen].every((pid) => !isAlive(pid)), 100, 50)
  })
})

/** A private redis-server (nothing kept on disk), so that stopping or killing it hurts no other test. */
async function startRedis (port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  await until(async () => await new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => { resolve(false) })
  }), 200, 25)
  return child
}

async function killRedis (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGCONT')
  child.kill('SIGKILL')
  await exited
}

describe('a Redis that goes away during a conversation', () => {
  const UNAVAILABLE = {
    statusCode: 503,
    code: 'CONVERSATION_STORE_UNAVAILABLE',
    error: 'Service Unavailable',
    message: 'Conversations are unavailable; retry shortly'
  }
  let port: number
  let redis: ChildProcess
  let t: TestApp

  beforeAll(async () => {
    port = await freePort()
    redis = await startRedis(port)
    t = await createTestApp({
      chat: { ...TEST_CHAT_CONFIG, redisUrl: `redis://127.0.0.1:${port}`, redisKeyPrefix: `faults-${randomUUID()}:`, redisTimeoutMs: 500 }
    })
  })

  afterAll(async () => {
    redis.kill('SIGCONT')
    await t.close()
    await killRedis(redis)
  })

  async function send (payload: Record<string, unknown>): Promise<{ statusCode: number, headers: Record<string, unknown>, body: Record<string, unknown>, ms: number }> {
    const start = performance.now()
    const response = await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: AUTH, payload: { user_id: 'customer-7', ...payload } })
    return { statusCode: response.statusCode, headers: response.headers, body: response.json(), ms: performance.now() - start }
  }

  async function transcript (id: string): Promise<{ statusCode: number, body: Record<string, unknown>, ms: number }> {
    const start = performance.now()
    const response = await t.app.inject({ method: 'GET', url: `/v1/chat/conversations/${id}?user_id=customer-7`, headers: AUTH })
    return { statusCode: response.statusCode, body: response.json(), ms: performance.now() - start }
  }

  function expectQuickUnavailable (answer: { statusCode: number, headers?: Record<string, unknown>, body: Record<string, unknown>, ms: number }): void {
    expect(answer.statusCode).toBe(503)
    expect(answer.body).toEqual(UNAVAILABLE)
    if (answer.headers !== undefined) expect(answer.headers['retry-after']).toBe('2')
    expect(answer.ms).toBeLessThan(2000)
  }

  it('stopped (SIGSTOP): a quick 503 meanwhile, then the same conversation resumes with its earlier turns', async () => {
    const logsBefore = t.logs.length
    const first = await send({ message: 'where is my order' })
    expect(first.statusCode).toBe(200)
    expect(first.body).toMatchObject({ intent: 'track_order' })
    const id = first.body['conversation_id'] as string

    redis.kill('SIGSTOP')
    try {
      expectQuickUnavailable(await send({ message: 'A-4417', conversation_id: id }))
      expectQuickUnavailable(await send({ message: 'hello' }))
      expectQuickUnavailable(await transcript(id))
    } finally {
      redis.kill('SIGCONT')
    }

    // The same conversation, sent again: it continues where it was (the order number answers the question asked).
    let resumed: Awaited<ReturnType<typeof send>> | undefined
    await until(async () => {
      resumed = await send({ message: 'A-4417', conversation_id: id })
      return resumed.statusCode === 200
    }, 40, 50)
    expect(resumed!.body).toMatchObject({ conversation_id: id, intent: 'track_order' })
    expect(resumed!.body['reply']).toContain('A-4417')
    const turns = (await transcript(id)).body['turns'] as Array<Record<string, string>>
    expect(turns.map(({ role, intent }) => [role, intent])).toEqual([
      ['customer', 'track_order'], ['assistant', 'track_order'],
      ['customer', 'track_order'], ['assistant', 'track_order']
    ])
    expect(turns.map(({ text }) => text).filter((_text, i) => i % 2 === 0)).toEqual(['where is my order', 'A-4417'])
    expect(errorLines(t.logs.slice(logsBefore))).toEqual([])
  })

  it('killed and restarted on the same port: a quick 503 meanwhile, then it reconnects without an app restart', async () => {
    const logsBefore = t.logs.length
    const before = await send({ message: 'I need to cancel an order' })
    expect(before.statusCode).toBe(200)

    await killRedis(redis)
    expectQuickUnavailable(await send({ message: 'hello' }))
    expectQuickUnavailable(await send({ message: 'order 99120', conversation_id: before.body['conversation_id'] }))

    redis = await startRedis(port)
    // The client reconnects by itself (ioredis, backing off up to 2 s between attempts).
    await until(async () => (await send({ message: 'hello' })).statusCode === 200, 100, 50)
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
    // This Redis kept nothing on disk (--save "" --appendonly no): what the killed one held is gone, and the
    // conversation is answered as unknown. A Redis with persistence (the compose file's, append-only) keeps it.
    const lost = await send({ message: 'order 99120', conversation_id: before.body['conversation_id'] })
    expect(lost.statusCode).toBe(404)
    expect(lost.body).toMatchObject({ code: 'CONVERSATION_NOT_FOUND' })
    expect(errorLines(t.logs.slice(logsBefore))).toEqual([])
  })
})

describe('a client that goes away', () => {
  let t: TestApp
  let base: string
  const watchPool = () => vi.spyOn(ExifTool.prototype, 'enqueueTask')
  /** Every task handed to the ExifTool pool; the extractor's hand over a read already made, so it can be looked at. */
  let pool: ReturnType<typeof watchPool>
  const readTasks = (): ReadRawTask[] => pool.mock.calls.map(([task]) => task()).filter((task) => task instanceof ReadRawTask)
  const readsOf = (path: string): number => readTasks().filter((task) => task.sourceFile === path).length
  const readPaths = (): string[] => [...new Set(readTasks().map((task) => task.sourceFile).filter((path) => path.startsWith(t.tempRoot)))]

  beforeAll(async () => {
    t = await createTestApp({ exiftool: { procs: 1, taskTimeoutMs: 1000, maxQueue: 8 } })
    base = await listen(t)
    pool = watchPool()
  })
  /** Connections left open by a failed test would keep the app from closing. */
  const uploads: ClientRequest[] = []
  afterEach(() => {
    pool.mockClear()
    for (const upload of uploads.splice(0)) upload.destroy()
  })
  afterAll(async () => {
    const pids = t.app.metadataExtractor.pids
    for (const pid of pids) if (isAlive(pid)) process.kill(pid, 'SIGCONT')
    await t.close()
    pool.mockRestore()
    await until(() => pids.every((pid) => !isAlive(pid)), 100, 50)
  })

  /** Sends `body` (all of it, or its first `sendBytes`) as a multipart POST, and leaves the connection open. */
  async function startUpload (body: Buffer, sendBytes?: number): Promise<ClientRequest> {
    const { payload, headers } = await multipart(imageForm(body))
    const request = httpRequest(new URL(`${base}/v1/metadata`), { method: 'POST', headers: { ...AUTH, ...headers, 'content-length': String(payload.length) } })
    request.on('error', () => {})
    request.write(payload.subarray(0, sendBytes ?? payload.length))
    uploads.push(request)
    return request
  }

  async function scratchEmptyWithinASecond (): Promise<void> {
    await until(async () => (await t.scratchFiles()).length === 0, 100, 10)
  }

  async function stillAnswers (): Promise<void> {
    const response = await fetch(`${base}/v1/metadata`, { method: 'POST', headers: AUTH, body: imageForm(photo) })
    expect(response.status).toBe(200)
  }

  async function abandonMidUpload (): Promise<void> {
    // Past the first 512 KiB, which the intake holds in memory to decide the format before it opens a file.
    const upload = await startUpload(Buffer.concat([photo, Buffer.alloc(1_500_000)]), 900_000)
    await until(async () => (await t.scratchFiles()).length === 1)
    upload.destroy()
    await scratchEmptyWithinASecond()
  }

  it('mid-upload: its partial file is removed within a second, ExifTool never sees it, the server keeps answering', async () => {
    await abandonMidUpload()
    expect(readPaths()).toEqual([])
    await stillAnswers()
  })

  // A client gone mid-upload is its own doing, not a failure of ours: the request stream's reset ("aborted",
  // ECONNRESET) is a malformed body (plugins/multipart.ts), logged at info with its code, never at error level.
  it('mid-upload: nothing is logged at error level', async () => {
    const logsBefore = t.logs.length
    await abandonMidUpload()
    await stillAnswers()
    expect(errorLines(t.logs.slice(logsBefore))).toEqual([])
  })

  it('while ExifTool reads its file: the file is removed within a second and the reads are abandoned', async () => {
    const extractor = t.app.metadataExtractor
    const logsBefore = t.logs.length
    const failuresBefore = { ...extractor.failures }
    await stillAnswers()
    const [child] = extractor.pids
    // The child hangs: the first upload's read is certainly in its hands, the second's waits in the queue.
    process.kill(child!, 'SIGSTOP')
    const inChild = await startUpload(photo)
    await until(() => extractor.busyProcs === 1)
    const queued = await startUpload(photo)
    await until(() => extractor.pendingTasks === 1)
    const paths = readPaths().slice(-2)
    expect((await t.scratchFiles()).length).toBe(2)

    inChild.destroy()
    queued.destroy()
    await scratchEmptyWithinASecond()
    // The queued read is taken off the queue (it never runs); the one in the child is let go.
    expect(extractor.pendingTasks).toBe(0)
    expect(extractor.abandoned).toEqual({ queued: 1, running: 1 })

    // The hung child is replaced after the task timeout, and its abandoned read is not tried again.
    await until(() => !isAlive(child!), 300, 10)
    await stillAnswers()
    for (const path of paths) expect(readsOf(path), path).toBe(1)
    expect(extractor.failures).toEqual(failuresBefore)
    expect(errorLines(t.logs.slice(logsBefore))).toEqual([])
    // Each abandoned request has its one log line, 499 (the client closed it), and no other.
    const requestLines = t.logs.slice(logsBefore).map((line) => JSON.parse(line) as { msg: string, requestId: string, status: number })
      .filter((line) => line.msg === 'request')
    const gone = requestLines.filter((line) => line.status === 499)
    expect(gone).toHaveLength(2)
    for (const { requestId } of gone) expect(requestLines.filter((line) => line.requestId === requestId)).toHaveLength(1)
  })

  it('between two reads: a read of a file already removed is answered as abandoned, not tried again, no error', async () => {
    // The client can go while none of its reads is in the pool (the C2PA validator has the file, or the intake has
    // just finished): the next read finds the file removed.
    const extractor = t.app.metadataExtractor
    const failuresBefore = { ...extractor.failures }
    const [scratch] = await readdir(t.tempRoot)
    const gone = join(t.tempRoot, scratch!, `${randomUUID()}.jpg`)
    await expect(extractor.readSummary(gone, 'jpeg', false)).rejects.toMatchObject({ code: 'BAD_REQUEST' })
    expect(readsOf(gone)).toBe(1)
    expect(extractor.failures).toEqual(failuresBefore)
  })
})
