import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AUTH, createTestApp, TEST_CHAT_CONFIG, type TestApp } from '../support/app.ts'
import { until } from '../support/processes.ts'
import { freePort } from '../support/servers.ts'

// Readiness and overload: a Redis of the test's own (a real redis-server on a free port, so that stopping it hurts no
// other test), made unresponsive with SIGSTOP; and an event loop blocked on purpose.
describe('with a Redis that stops answering', () => {
  let redis: ChildProcess
  let t: TestApp

  beforeAll(async () => {
    const port = await freePort()
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    await until(async () => await new Promise<boolean>((resolve) => {
      const socket = createServer().listen(port, '127.0.0.1')
      socket.on('listening', () => { socket.close(); resolve(false) })
      socket.on('error', () => { resolve(true) })
    }), 200, 25)
    t = await createTestApp({ chat: { ...TEST_CHAT_CONFIG, redisUrl: `redis://127.0.0.1:${port}`, redisTimeoutMs: 300 } })
  })

  afterAll(async () => {
    redis.kill('SIGCONT')
    await t.close()
    redis.kill('SIGKILL')
  })

  async function timed (request: InjectOptions): Promise<{ ms: number, answer: LightMyRequestResponse }> {
    const start = performance.now()
    const answer = await t.app.inject(request)
    return { ms: performance.now() - start, answer }
  }

  const chat = { method: 'POST' as const, url: '/v1/chat/send', headers: AUTH, payload: { message: 'where is my order', user_id: 'u' } }

  it('answers chat with a quick 503 and Retry-After, says it is not ready, and recovers when Redis does', async () => {
    expect((await t.app.inject(chat)).statusCode).toBe(200)
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)

    redis.kill('SIGSTOP')
    const refused = await timed(chat)
    expect(refused.answer.statusCode).toBe(503)
    expect(refused.answer.json()).toMatchObject({ code: 'CONVERSATION_STORE_UNAVAILABLE' })
    expect(refused.answer.headers['retry-after']).toBe('2')
    expect(refused.ms).toBeLessThan(2000)
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^chat_store_errors_total 1$/m)

    const ready = await timed({ method: 'GET', url: '/health/ready' })
    expect(ready.answer.statusCode).toBe(503)
    expect(ready.answer.json()).toMatchObject({ code: 'NOT_READY' })
    expect(ready.answer.headers['retry-after']).toBe('5')
    expect(ready.ms).toBeLessThan(3000)
    // Alive all the same: nothing to restart.
    expect((await t.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)

    redis.kill('SIGCONT')
    await until(async () => (await t.app.inject(chat)).statusCode === 200, 100, 50)
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
  })
})

describe('with the event loop saturated', () => {
  let t: TestApp

  beforeAll(async () => { t = await createTestApp({ maxEventLoopDelayMs: 50 }) })
  afterAll(async () => { await t.close() })

  function blockEventLoop (ms: number): void {
    const end = performance.now() + ms
    while (performance.now() < end) { /* busy, as a saturated process is */ }
  }

  it('answers the API with 503 OVERLOADED and Retry-After, says it is not ready, keeps the probes answering, and recovers', async () => {
    // A process that has just started counts its start-up as lag until the next sample: wait for that to pass.
    await until(async () => (await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200, 100, 50)
    expect((await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: AUTH, payload: { message: 'hi', user_id: 'u' } })).statusCode).toBe(200)
    let overloaded: LightMyRequestResponse | undefined
    let ready: LightMyRequestResponse | undefined
    await until(async () => {
      blockEventLoop(300)
      await new Promise((resolve) => setTimeout(resolve, 5))
      const answer = await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: AUTH, payload: { message: 'hi', user_id: 'u' } })
      if (answer.statusCode !== 503) return false
      overloaded = answer
      // Within the same sample, readiness says so too, and the probes and metrics still answer.
      ready = await t.app.inject({ method: 'GET', url: '/health/ready' })
      return true
    }, 20, 0)
    expect(ready!.statusCode).toBe(503)
    expect(ready!.json()).toMatchObject({ code: 'NOT_READY' })
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200)
    expect(overloaded!.json()).toEqual({
      statusCode: 503,
      code: 'OVERLOADED',
      error: 'Service Unavailable',
      message: 'The service is overloaded; retry after the Retry-After delay'
    })
    expect(overloaded!.headers['retry-after']).toBe('2')
    expect((await t.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200)
    await until(async () => (await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: AUTH, payload: { message: 'hi', user_id: 'u' } })).statusCode === 200, 100, 50)
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200)
  })
})
