import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest'
import { AUTH, createTestApp, imageForm, multipart, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { childrenOf } from '../support/proc.ts'
import { isAlive, until } from '../support/processes.ts'

// The real ExifTool pool, its children stopped and killed with real signals.
let images: ImageFactory
let photo: Buffer
let apps: TestApp[] = []

beforeAll(async () => {
  images = new ImageFactory()
  photo = await images.make('jpeg', { tags: CAMERA_TAGS })
})
afterAll(async () => { await images.close() })
afterEach(async () => {
  for (const testApp of apps) await testApp.close()
  apps = []
})

async function appWith (exiftool: { procs: number, taskTimeoutMs: number, maxQueue: number }): Promise<TestApp> {
  const testApp = await createTestApp({ exiftool })
  apps.push(testApp)
  return testApp
}

async function extract (testApp: TestApp): Promise<{ statusCode: number, headers: Record<string, unknown>, body: Record<string, unknown> }> {
  const { payload, headers } = await multipart(imageForm(photo))
  const response = await testApp.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
  return { statusCode: response.statusCode, headers: response.headers, body: response.json() }
}

/**
 * An app with a one-child pool, warmed up by one answered request, whose child is then frozen (SIGSTOP): the next
 * request is certain to be in that child's hands.
 */
async function appWithFrozenChild (limits: { taskTimeoutMs: number, maxQueue: number }) {
  const testApp = await appWith({ procs: 1, ...limits })
  const extractor = testApp.app.metadataExtractor
  expect((await extract(testApp)).statusCode).toBe(200)
  const [pid] = extractor.pids
  if (pid === undefined) throw new Error('the pool has no child after answering a request')
  process.kill(pid, 'SIGSTOP')
  return { testApp, extractor, pid }
}

describe('the ExifTool pool', () => {
  it('answers a request whose child is killed while it works on it, and replaces the child', async () => {
    // The request is certainly in the frozen child's hands when it is killed.
    const { testApp, extractor, pid } = await appWithFrozenChild({ taskTimeoutMs: 10_000, maxQueue: 8 })
    const pending = extract(testApp)
    await until(() => extractor.busyProcs === 1)
    process.kill(pid, 'SIGKILL')

    const response = await pending
    expect(response.statusCode).toBe(200)
    expect(response.body['camera']).toEqual({ make: 'NIKON', model: 'COOLPIX P6000' })
    expect(extractor.pids).not.toContain(pid)
    expect((await extract(testApp)).statusCode).toBe(200)
  })

  it('replaces a hung child after the per-image timeout and retries the image once', async () => {
    const { testApp, extractor, pid } = await appWithFrozenChild({ taskTimeoutMs: 1000, maxQueue: 8 })

    const response = await extract(testApp)
    expect(response.statusCode).toBe(200)
    expect(response.body['format']).toBe('jpeg')
    expect(extractor.pids).not.toContain(pid)
    await until(() => !isAlive(pid))
  })

  it('answers 503 EXTRACTION_TIMEOUT when the retry hangs too, and recovers', async () => {
    const { testApp, extractor, pid: first } = await appWithFrozenChild({ taskTimeoutMs: 500, maxQueue: 8 })

    const pending = extract(testApp)
    // The first attempt times out; freeze the child that takes the retry as well.
    let second: number | undefined
    await until(() => {
      second = extractor.pids.find((pid) => pid !== first)
      return second !== undefined && extractor.busyProcs === 1
    }, 4000, 1)
    // A new child spends ~90 ms starting perl before it can run the image: ample time to freeze it first.
    process.kill(second!, 'SIGSTOP')

    const response = await pending
    expect(response.statusCode).toBe(503)
    expect(response.headers['retry-after']).toBe('1')
    expect(response.body).toEqual({
      statusCode: 503,
      code: 'EXTRACTION_TIMEOUT',
      error: 'Service Unavailable',
      message: 'Metadata extraction did not finish in time; retry shortly'
    })
    expect(await testApp.scratchFiles()).toEqual([])
    expect((await extract(testApp)).statusCode).toBe(200)
  })

  it('answers 503 with Retry-After when its queue is full, and serves the queued requests', async () => {
    const { testApp, extractor, pid } = await appWithFrozenChild({ taskTimeoutMs: 10_000, maxQueue: 1 })
    try {
      const first = extract(testApp)
      await until(() => extractor.busyProcs === 1)
      const second = extract(testApp)
      await until(() => extractor.pendingTasks === 1)

      const refused = await extract(testApp)
      expect(refused.statusCode).toBe(503)
      expect(refused.headers['retry-after']).toBe('1')
      expect(refused.body).toEqual({
        statusCode: 503,
        code: 'EXTRACTOR_BUSY',
        error: 'Service Unavailable',
        message: 'Metadata extraction is at capacity; retry shortly'
      })

      process.kill(pid, 'SIGCONT')
      expect((await first).statusCode).toBe(200)
      expect((await second).statusCode).toBe(200)
    } finally {
      if (isAlive(pid)) process.kill(pid, 'SIGCONT')
    }
    expect(await testApp.scratchFiles()).toEqual([])
  })

  it('makes the service unready, and extraction a 503, once the pool is gone', async () => {
    const testApp = await appWith({ procs: 1, taskTimeoutMs: 10_000, maxQueue: 8 })
    const ready = await testApp.app.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(200)
    expect(ready.json()).toEqual({ status: 'ready' })

    await testApp.app.metadataExtractor.end()

    const unready = await testApp.app.inject({ method: 'GET', url: '/health/ready' })
    expect(unready.statusCode).toBe(503)
    expect(unready.headers['retry-after']).toBe('5')
    expect(unready.json()).toEqual({ statusCode: 503, code: 'NOT_READY', error: 'Service Unavailable', message: 'The service is not ready' })

    const refused = await extract(testApp)
    expect(refused.statusCode).toBe(503)
    expect(refused.headers['retry-after']).toBe('1')
    expect(refused.body['code']).toBe('EXTRACTOR_UNAVAILABLE')
    expect(await testApp.scratchFiles()).toEqual([])
  })

  it('starts its first child while the app is built, before any request, and is ready with it', async () => {
    // One child at most: the probe is answered by the child started with the app, not by one it made start.
    const testApp = await appWith({ procs: 1, taskTimeoutMs: 10_000, maxQueue: 8 })
    const extractor = testApp.app.metadataExtractor
    await until(() => extractor.pids.length === 1)
    const [pid] = extractor.pids
    expect(isAlive(pid!)).toBe(true)
    const ready = await testApp.app.inject({ method: 'GET', url: '/health/ready' })
    expect(ready.statusCode).toBe(200)
    expect(extractor.pids).toEqual([pid])
  })

  it('leaves no ExifTool process behind when the app closes while its first child is still starting', async () => {
    const before = new Set(childrenOf(process.pid))
    const testApp = await createTestApp({ exiftool: { procs: 1, taskTimeoutMs: 10_000, maxQueue: 8 } })
    const started = childrenOf(process.pid).filter((pid) => !before.has(pid))
    expect(started.length).toBeGreaterThan(0)
    await testApp.close()
    await until(() => !started.some(isAlive))
    expect(await testApp.app.metadataExtractor.isReady(1000)).toBe(false)
  })

  it('leaves no ExifTool process and no scratch directory behind when the app closes', async () => {
    const testApp = await createTestApp({ exiftool: { procs: 2, taskTimeoutMs: 10_000, maxQueue: 8 } })
    await Promise.all([extract(testApp), extract(testApp), extract(testApp)])
    const pids = testApp.app.metadataExtractor.pids
    expect(pids.length).toBeGreaterThan(0)
    expect(pids.every(isAlive)).toBe(true)

    await testApp.app.close()
    await until(() => !pids.some(isAlive))
    const { readdir } = await import('node:fs/promises')
    expect(await readdir(testApp.tempRoot)).toEqual([])
    await testApp.close()
  })
})
