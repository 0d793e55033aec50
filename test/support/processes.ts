/**
 * Child processes, for the tests, the bench and the scripts alike: commands run to their end, children forked with
 * a command channel (the bench's peers, the fuzzer's server), waiting with a bound. Whatever this process started
 * and has not stopped ends with it.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as delay } from 'node:timers/promises'

export interface ProcessResult {
  exitCode: number | null
  stdout: string
  stderr: string
}

/** Runs a command to its end (killed after `timeoutMs`), collecting its output. */
export async function runProcess (
  command: string,
  args: string[],
  options: { cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number }
): Promise<ProcessResult> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  })
  return { exitCode, stdout, stderr }
}

/** Polls a condition, bounded (at most `tries` checks, `intervalMs` apart); throws if it never holds. */
export async function until (condition: () => boolean | Promise<boolean>, tries = 400, intervalMs = 10): Promise<void> {
  for (let attempt = 0; attempt < tries; attempt++) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
  throw new Error(`condition never held in ${tries * intervalMs} ms`)
}

/** `promise`, or an Error(`message`) once `ms` have passed: for a child that may hang. */
export async function withinTime<T> (promise: Promise<T>, ms: number, message: string): Promise<T> {
  const timeout = new AbortController()
  try {
    return await Promise.race([
      promise,
      delay(ms, undefined, { signal: timeout.signal }).then(() => { throw new Error(message) })
    ])
  } finally {
    timeout.abort()
  }
}

/** Whether a process of this id exists (signal 0 checks without signalling). */
export function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** What was started and has not been stopped; true: the child leads its own process group. */
const live = new Map<ChildProcess, boolean>()
let watching = false

/**
 * Remembers a child until it exits. On the first one, whatever ends this process ends the children with it (each by
 * its own pid, or process group for a group leader); a signal nobody else handles ends this process.
 */
export function track (child: ChildProcess, groupLeader: boolean): void {
  live.set(child, groupLeader)
  child.once('exit', () => { live.delete(child) })
  if (watching) return
  watching = true
  process.once('exit', () => { for (const started of live.keys()) kill(started, 'SIGKILL') })
  // Unless the script has its own clean-up for the signal (the soak deletes its Redis keys), which then exits.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => { if (process.listenerCount(signal) === 0) process.exit(130) })
}

/** SIGKILL reaches a group leader's whole group; a polite signal only the child, which passes it on (npm does). */
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
export async function stopChild (child: ChildProcess, signal: NodeJS.Signals | undefined, graceMs = 10_000): Promise<void> {
  if (signal === undefined) child.disconnect()
  else kill(child, signal)
  const gone = await Promise.race([exited(child).then(() => true), delay(graceMs, false)])
  if (!gone) {
    kill(child, 'SIGKILL')
    await exited(child)
  }
}

/** A process that serves HTTP on 127.0.0.1. */
export interface Server {
  pid: number
  port: number
  url: string
  stop: () => Promise<void>
}

/** A forked child written with `serveCommands`. */
export interface Child extends Server {
  /** Runs a command in the child and returns its answer. */
  call: <T>(command: string, args?: unknown) => Promise<T>
  /** Settles when the child has exited, however it ended. */
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
}

type Reply = { type: 'ready', port: number } | { id: number, result?: unknown, error?: string }

/** Forks `entry` (a child written with `serveCommands`) and waits until it is ready. */
export async function forkChild (entry: URL, env: Record<string, string> = {}, execArgv: string[] = []): Promise<Child> {
  const child = fork(entry, [], { env: { ...process.env, ...env }, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  track(child, false)
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

/**
 * The child side: says it is ready (with the port it listens on, 0 for none), answers the parent's commands, and ends
 * (after `close`) when the parent disconnects.
 */
export function serveCommands (port: number, commands: Record<string, (args: never) => Promise<unknown>>, close: () => Promise<void>): void {
  process.on('message', ({ id, command, args }: { id: number, command: string, args: never }) => {
    const run = commands[command] ?? (async () => { throw new Error(`unknown command ${command}`) })
    run(args).then((result) => process.send?.({ id, result }), (error: unknown) => process.send?.({ id, error: String(error) }))
  })
  process.once('disconnect', () => { close().finally(() => process.exit(0)) })
  process.send?.({ type: 'ready', port })
}
