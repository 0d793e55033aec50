import { fork, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { get } from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { freePort, NODE_FLAGS, START_ENV } from '../../test/support/servers.ts'

/** A process the bench started: forked (with a command channel) or spawned (`npm start`). */
export interface Server {
  pid: number
  /** 127.0.0.1 port it listens on; 0 for a worker that does not listen. */
  port: number
  url: string
  stop: () => Promise<void>
}

export interface Child extends Server {
  /** Runs a command in the child and returns its answer. */
  call: <T>(command: string, args?: unknown) => Promise<T>
  /** Settles when the child has exited, however it ended. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

type Reply = { type: 'ready', port: number } | { id: number, result?: unknown, error?: string }

/** What the bench started and has not stopped; true: the child leads its own process group. */
const live = new Map<ChildProcess, boolean>()
// Whatever ends the bench, what it started ends with it (each by its own pid, or process group for spawned ones).
process.once('exit', () => { for (const child of live.keys()) kill(child, 'SIGKILL') })
// Unless the script has its own clean-up for the signal (the soak deletes its Redis keys), which then exits.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { if (process.listenerCount(signal) === 0) process.exit(130) })

/** SIGKILL reaches a spawned child's whole group; a polite signal only the child, which passes it on (npm does). */
function kill (child: ChildProcess, signal: NodeJS.Signals): void {
  // Gone already: its pid may belong to another process by now.
  if (child.exitCode !== null || child.signalCode !== null) return
  try {
    if (child.pid !== undefined) process.kill(signal === 'SIGKILL' && live.get(child) === true ? -child.pid : child.pid, signal)
  } catch {}
}

function exited (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => { resolve() }))
}

/** Asks a child to end (a signal, or for a forked one the end of its channel), and kills it if it will not. */
async function stopChild (child: ChildProcess, signal: NodeJS.Signals | undefined, graceMs = 10_000): Promise<void> {
  if (signal === undefined) child.disconnect()
  else kill(child, signal)
  const gone = await Promise.race([exited(child).then(() => true), delay(graceMs, false)])
  if (!gone) {
    kill(child, 'SIGKILL')
    await exited(child)
  }
  live.delete(child)
}

/** Forks `entry` (a child written with `serveCommands`) and waits until it is ready. */
export async function forkChild (entry: URL, env: Record<string, string> = {}, execArgv: string[] = []): Promise<Child> {
  const child = fork(entry, [], { env: { ...process.env, ...env }, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  live.set(child, false)
  const exitedChild = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { resolve({ code, signal }) })
  })
  const pending = new Map<number, { resolve: (value: unknown) => void, reject: (error: Error) => void }>()
  let nextId = 0
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => { reject(new Error(`${entry.pathname} exited (${code}) before it was ready`)) })
    child.on('message', (reply: Reply) => {
      if ('type' in reply) { resolve(reply.port); return }
      const call = pending.get(reply.id)
      pending.delete(reply.id)
      if (reply.error === undefined) call?.resolve(reply.result)
      else call?.reject(new Error(reply.error))
    })
  })
  child.on('exit', () => { for (const call of pending.values()) call.reject(new Error(`${entry.pathname} exited`)) })
  return {
    pid: child.pid!,
    port,
    url: `http://127.0.0.1:${port}`,
    call: <T>(command: string, args?: unknown) => new Promise<T>((resolve, reject) => {
      const id = nextId++
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
      child.send({ id, command, args })
    }),
    exited: exitedChild,
    stop: () => stopChild(child, child.connected ? undefined : 'SIGTERM')
  }
}

/** The child side: answers the parent's commands; ends (after `close`) when the parent disconnects. */
export function serveCommands (port: number, commands: Record<string, (args: never) => Promise<unknown>>, close: () => Promise<void>): void {
  process.on('message', ({ id, command, args }: { id: number, command: string, args: never }) => {
    const run = commands[command] ?? (async () => { throw new Error(`unknown command ${command}`) })
    run(args).then((result) => process.send?.({ id, result }), (error: unknown) => process.send?.({ id, error: String(error) }))
  })
  process.once('disconnect', () => { close().finally(() => process.exit(0)) })
  process.send?.({ type: 'ready', port })
}

/**
 * The service as `buildApp(loadConfig(env))` builds it, in a child process of its own (bench/support/service.ts) run
 * with the start command's variables and Node flags (`--expose-gc` among them: it answers a `gc` command).
 */
export async function startService (env: Record<string, string> = {}, execArgv: string[] = []): Promise<Child & { apiKey: string }> {
  const apiKey = env['API_KEYS'] ?? `bench-${randomBytes(12).toString('hex')}`
  const config = { API_KEYS: apiKey, RATE_LIMIT_CHAT_PER_MIN: '0', RATE_LIMIT_METADATA_PER_MIN: '0', ...env }
  const child = await forkChild(new URL('./service.ts', import.meta.url), { ...START_ENV, BENCH_SERVICE_ENV: JSON.stringify(config) }, [...NODE_FLAGS, ...execArgv])
  return { ...child, apiKey }
}

/**
 * Spawns a server as it is started in production (`npm start`, `node src/server.ts`) on a free port and waits for
 * /health/ready to answer 200; `readyMs` counts from the spawn.
 */
export async function spawnServer (command: string, args: string[], options: { cwd: string, env: Record<string, string> }): Promise<Server & { readyMs: number }> {
  const port = await freePort()
  const started = performance.now()
  // Its own process group: should it not stop when asked, SIGKILL ends npm and the node it runs together.
  // With the start command's variables, as `npm start` would set them.
  const child = spawn(command, args, { cwd: options.cwd, env: { ...START_ENV, ...options.env, HOST: '127.0.0.1', PORT: String(port) }, stdio: 'ignore', detached: true })
  live.set(child, true)
  const url = `http://127.0.0.1:${port}`
  const stop = (): Promise<void> => stopChild(child, 'SIGTERM')
  while (performance.now() - started < 60_000 && child.exitCode === null) {
    const ready = await fetch(`${url}/health/ready`).then((response) => response.ok, () => false)
    if (ready) return { pid: child.pid!, port, url, readyMs: performance.now() - started, stop }
    await delay(20)
  }
  await stop()
  throw new Error(`${command} ${args.join(' ')} did not become ready`)
}

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The service with WORKERS=`workers`, as `npm start` runs it (`node src/server.ts`: a cluster primary and its workers;
 * their log lines go to /dev/null), with the bench's key and no rate limits like `startService`. Ready once every
 * worker is: /health/ready answered 200 on twice as many new connections in a row as there are workers (the primary
 * hands connections to the workers in turn, and a worker just started refuses for a moment).
 */
export async function startWorkers (workers: number, env: Record<string, string> = {}): Promise<Server & { apiKey: string }> {
  const apiKey = env['API_KEYS'] ?? `bench-${randomBytes(12).toString('hex')}`
  const server = await spawnServer(process.execPath, [...NODE_FLAGS, 'src/server.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      API_KEYS: apiKey,
      RATE_LIMIT_CHAT_PER_MIN: '0',
      RATE_LIMIT_METADATA_PER_MIN: '0',
      ...env,
      WORKERS: String(workers)
    }
  })
  const started = performance.now()
  for (let inARow = 0; inARow < 2 * workers;) {
    if (performance.now() - started > 30_000) {
      await server.stop()
      throw new Error(`not every one of ${workers} workers became ready`)
    }
    inARow = await readyOnNewConnection(server.url) ? inARow + 1 : 0
    if (inARow === 0) await delay(20)
  }
  return { ...server, apiKey }
}

function readyOnNewConnection (url: string): Promise<boolean> {
  return new Promise((resolve) => {
    get(`${url}/health/ready`, { agent: false }, (response) => {
      response.resume()
      resolve(response.statusCode === 200)
    }).on('error', () => { resolve(false) })
  })
}
