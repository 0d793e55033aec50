import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import { stopChild, track } from './processes.ts'

export const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The service's start command (`npm start`: `[VAR=value …] exec node [flags] src/server.ts`; the Dockerfile carries
 * the same variables as ENV and the same command as CMD, which test/integration/container.test.ts checks): servers
 * the tests, the bench and the scripts start run with its environment variables (START_ENV) and Node's flags
 * (NODE_FLAGS), none today.
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

/** A TCP port nothing listens on now (the kernel's pick). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** The service as a container runs it, in a process of its own. */
export interface ServiceProcess {
  child: ChildProcess
  pid: number
  port: number
  url: string
  /** From the spawn to the first 200 of /health/ready. */
  readyMs: number
  /** Everything it wrote, as text ('' when its output is discarded). */
  output: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  /** SIGTERM, then SIGKILL (to the whole process group) if it has not exited within 10 s. */
  stop: () => Promise<void>
}

export interface StartOptions {
  /** `node [NODE_FLAGS] src/server.ts` (what the Dockerfile runs), or `npm start`. */
  how?: 'node' | 'npm'
  /** The checkout to start it from. */
  cwd?: string
  /** Keep what it writes (the default), or discard it: a bench's load would pile up its log lines here. */
  output?: 'keep' | 'discard'
  /** How long it may take to answer /health/ready with 200. */
  readyTimeoutMs?: number
  /** A port of its own choosing (a replacement on a gone process's port); a free one by default. */
  port?: number
}

/**
 * Starts the service as production does (`node [NODE_FLAGS] src/server.ts`, or `npm start`) with START_ENV, on a free
 * port of 127.0.0.1, and waits until /health/ready answers 200. Its environment is `env` over the least every caller
 * needs: PATH and HOME, the trained model's cache, and one ExifTool process (the machines that run the tests are
 * small and shared; a caller measuring the defaults says how many).
 */
export async function startService (env: Record<string, string>, options: StartOptions = {}): Promise<ServiceProcess> {
  const port = options.port ?? await freePort()
  const fullEnv = {
    PATH: process.env['PATH'] ?? '',
    HOME: process.env['HOME'] ?? '',
    MODEL_CACHE_DIR: DEFAULT_MODEL_CACHE,
    EXIFTOOL_PROCS: '1',
    ...START_ENV,
    ...env,
    HOST: '127.0.0.1',
    PORT: String(port)
  }
  const keep = options.output !== 'discard'
  const cwd = options.cwd ?? PROJECT_ROOT
  const started = performance.now()
  // Its own process group: should it not stop when asked, SIGKILL ends npm and the node it runs together.
  const child = options.how === 'npm'
    ? spawn('npm', ['start', '--silent'], { cwd, env: fullEnv, detached: true, stdio: keep ? 'pipe' : 'ignore' })
    : spawn(process.execPath, [...NODE_FLAGS, 'src/server.ts'], { cwd, env: fullEnv, detached: true, stdio: keep ? 'pipe' : 'ignore' })
  track(child, true)
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr?.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => { resolve({ code, signal }) })
  })
  const url = `http://127.0.0.1:${port}`
  const stop = (): Promise<void> => stopChild(child, 'SIGTERM')
  const deadline = started + (options.readyTimeoutMs ?? 60_000)
  while (child.exitCode === null && child.signalCode === null) {
    if (await fetch(`${url}/health/ready`).then((response) => response.ok, () => false)) {
      return { child, pid: child.pid!, port, url, readyMs: performance.now() - started, output: () => output, exited, stop }
    }
    if (performance.now() > deadline) break
    await delay(20)
  }
  await stop()
  throw new Error(`the service did not become ready (exit ${child.exitCode ?? child.signalCode ?? 'none'}):\n${output.slice(-2000)}`)
}

/** Stops a service with SIGTERM and waits for it to exit. */
export async function stopService (service: ServiceProcess): Promise<void> {
  if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGTERM')
  await service.exited
}
