import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import { until } from './processes.ts'

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The service's start command (`npm start`: `[VAR=value …] exec node [flags] src/server.ts`; the Dockerfile carries
 * the same variables as ENV and the same command as CMD, which test/container.test.ts checks): servers the tests and the
 * bench start run with its environment variables (START_ENV) and Node's flags (NODE_FLAGS).
 */
const START_COMMAND = (() => {
  const { scripts } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
  const command = /^((?:[A-Z_]+=\S+ )*)exec node ((?:--\S+ )*)src\/server\.ts$/.exec(scripts['start'] ?? '')
  if (command === null) throw new Error(`npm start is not "[VAR=value …] exec node [flags] src/server.ts": ${scripts['start']}`)
  const env = Object.fromEntries(command[1]!.split(' ').filter(Boolean).map((assignment) => assignment.split('=', 2) as [string, string]))
  return { env, flags: command[2]!.split(' ').filter(Boolean) }
})()
export const START_ENV: Readonly<Record<string, string>> = START_COMMAND.env
export const NODE_FLAGS: readonly string[] = START_COMMAND.flags

/** The idle collections (src/idle-collection.ts) a service at `url` has run, from its /metrics. */
export async function idleCollections (url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const count = /^idle_collections_total (\d+)$/m.exec(text)
  if (count === null) throw new Error(`${url}/metrics has no idle_collections_total`)
  return Number(count[1])
}

/** A TCP port nothing listens on now (the kernel's pick). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A service process started as a container starts it, with its output kept. */
export interface ServiceProcess {
  child: ChildProcess
  port: number
  /** Everything it wrote, as text. */
  output: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

/**
 * Starts `node [NODE_FLAGS] src/server.ts` with START_ENV (or `npm start`) in `cwd` on a free port (or `port`, for a
 * replacement on a gone process's port) with `env` on top of what every test server needs, and waits until
 * /health/ready answers 200.
 */
export async function startService (env: Record<string, string>, how: 'node' | 'npm' = 'node', cwd = PROJECT_ROOT, fixedPort?: number): Promise<ServiceProcess> {
  const port = fixedPort ?? await freePort()
  const fullEnv = {
    PATH: process.env['PATH'],
    HOST: '127.0.0.1',
    PORT: String(port),
    EXIFTOOL_PROCS: '1',
    MODEL_CACHE_DIR: DEFAULT_MODEL_CACHE,
    ...START_ENV,
    ...env
  }
  const child = how === 'node'
    ? spawn(process.execPath, [...NODE_FLAGS, 'src/server.ts'], { cwd, env: fullEnv })
    : spawn('npm', ['start', '--silent'], { cwd, env: fullEnv })
  let output = ''
  child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr!.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => { resolve({ code, signal }) })
  })
  await until(async () => {
    try {
      return (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200
    } catch {
      return false
    }
  }, 600, 50)
  return { child, port, output: () => output, exited }
}

/** Stops a service with SIGTERM and waits for it to exit. */
export async function stopService (service: ServiceProcess): Promise<void> {
  if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGTERM')
  await service.exited
}
