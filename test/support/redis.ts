import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { until } from './processes.ts'
import { freePort } from './servers.ts'

/**
 * The real Redis the tests use: the test run's own (test/support/global-setup.ts starts it on a free port and sets
 * TEST_REDIS_URL), or the one TEST_REDIS_URL names when it is set beforehand. Each suite keeps its keys under its own
 * prefix.
 */
export const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'

/** Removes every key under the given prefixes, so that a run leaves nothing behind. */
export async function deleteKeys (...prefixes: string[]): Promise<void> {
  const client = new Redis(REDIS_URL)
  try {
    for (const prefix of prefixes) {
      const keys = await client.keys(`${prefix}*`)
      if (keys.length > 0) await client.del(...keys)
    }
  } finally {
    client.disconnect()
  }
}

export interface PrivateRedis {
  url: string
  pid: number
  stop: () => Promise<void>
}

/**
 * A redis-server of the test run's own, on a free loopback port, keeping nothing on disk (its directory is a
 * temporary one, removed when it stops).
 */
export async function startPrivateRedis (): Promise<PrivateRedis> {
  const port = await freePort()
  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-redis-'))
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<void>((resolve) => { child.on('exit', () => { resolve() }) })
  const spawned = await new Promise<Error | undefined>((resolve) => {
    child.on('spawn', () => { resolve(undefined) })
    child.on('error', resolve)
  })
  if (spawned !== undefined) {
    await rm(dir, { recursive: true, force: true })
    throw new Error(`redis-server cannot be started (${spawned.message}): npm run test:machine installs it`)
  }
  const url = `redis://127.0.0.1:${port}`
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  // Refused until the server listens: each attempt's failure is the answer, not an event to report.
  client.on('error', () => {})
  try {
    await until(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${output}`)
      try {
        if (client.status !== 'ready') await client.connect()
        return await client.ping() === 'PONG'
      } catch {
        client.disconnect()
        return false
      }
    }, 100, 50)
  } finally {
    client.disconnect()
  }
  return {
    url,
    pid: child.pid!,
    stop: async () => {
      child.kill('SIGTERM')
      await exited
      await rm(dir, { recursive: true, force: true })
    }
  }
}
