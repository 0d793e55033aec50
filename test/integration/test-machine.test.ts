import { dirname } from 'node:path'
import { Redis } from 'ioredis'
import { describe, expect, inject, it } from 'vitest'
import { runProcess } from '../support/processes.ts'
import { REDIS_URL } from '../support/redis.ts'
import { PROJECT_ROOT } from '../support/servers.ts'

// What `npm test` needs from the machine (scripts/test-machine.ts, its pretest) and the Redis the test run starts.
describe('the test machine', () => {
  const pid = inject('privateRedisPid')

  it.runIf(pid !== undefined)('the tests use a Redis of the run\'s own, not the one on 6379', async () => {
    expect(REDIS_URL).toBe(process.env['TEST_REDIS_URL'])
    expect(new URL(REDIS_URL).port).not.toBe('6379')
    const client = new Redis(REDIS_URL)
    try {
      expect(/^process_id:(\d+)\r?$/m.exec(await client.info('server'))?.[1]).toBe(String(pid))
      expect(await client.config('GET', 'save')).toEqual(['save', ''])
    } finally {
      client.disconnect()
    }
  })

  it('passes at once on a machine that has everything', async () => {
    const started = performance.now()
    const result = await runProcess(process.execPath, ['scripts/test-machine.ts'], { cwd: PROJECT_ROOT, env: { ...process.env, TEST_MACHINE: 'check' }, timeoutMs: 30_000 })
    expect(result.exitCode, result.stderr).toBe(0)
    expect(performance.now() - started).toBeLessThan(10_000)
  })

  it('fails at once when something is missing, printing the command that installs it', async () => {
    // A PATH with Node alone: curl, openssl, perl, docker-compose and redis-server are not found on it. TEST_MACHINE=check
    // keeps it from installing them (the test runs as root).
    const started = performance.now()
    const result = await runProcess(process.execPath, ['scripts/test-machine.ts'], { cwd: PROJECT_ROOT, env: { PATH: dirname(process.execPath), TEST_MACHINE: 'check' }, timeoutMs: 30_000 })
    expect(result.exitCode).toBe(1)
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(result.stderr).toMatch(/^ {2}curl: test\/readme\.test\.ts runs the README's curl commands$/m)
    expect(result.stderr).toMatch(/^ {2}(sudo )?apt-get install -y --no-install-recommends perl docker-compose openssl curl redis-server$/m)
  })
})
