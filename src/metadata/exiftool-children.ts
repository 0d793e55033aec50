import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { accessSync, constants, readFileSync } from 'node:fs'
import { once } from 'node:events'
import { delimiter, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { DefaultExiftoolArgs, exiftoolPath, type ExifTool } from 'exiftool-vendored'

/**
 * Why a read failed when the file, not the pool, is at fault: its child spent more than the read's CPU time
 * ('cpu', the child is killed), hit its memory limit ('memory': perl exits with status 1, "Out of memory!"), or
 * died on it another way ('crash': a Perl error ends ExifTool's process, or a signal such as SIGSEGV).
 */
export type FileFault = 'cpu' | 'memory' | 'crash'

/** Signals a process gets from its own fault; SIGKILL and SIGTERM come from outside (the OOM killer, an operator). */
const CRASH_SIGNALS = new Set<NodeJS.Signals>(['SIGSEGV', 'SIGBUS', 'SIGABRT', 'SIGILL', 'SIGFPE', 'SIGSYS'])
/** perl's exit status when an allocation fails. */
const OUT_OF_MEMORY_STATUS = 1
/** How often the children's CPU time is looked at while they read. */
const POLL_INTERVAL_MS = 100
/** Linux's clock ticks per second in /proc/<pid>/stat (USER_HZ: 100 on every architecture Node runs on). */
const TICKS_PER_SECOND = 100
/** How long a failed read waits for its child's exit status before judging without it. */
const EXIT_WAIT_MS = 1000

/**
 * A child of the pool as batch-cluster's events hand it over (its BatchProcess): the part watched here.
 */
interface PoolChild {
  readonly pid: number
  readonly proc: ChildProcess
  readonly currentTask: { readonly taskId: number, resetTimeout: () => boolean } | undefined
  readonly startupTaskId: number
  readonly exitCode: number | null
  readonly exitSignal: NodeJS.Signals | null
  readonly ending: boolean
  requestRetirement: () => void
}

/** What the watch knows of one live child. */
interface Watched {
  readonly child: PoolChild
  /** The read it is at, when last looked; its CPU time when first seen at it, and when last looked. */
  taskId: number | undefined
  cpuMsAtStart: number
  cpuMsLastSeen: number
}

export interface ChildLimits {
  /** CPU time one read may take; 0: no limit. */
  readCpuMs: number
  /** Address space of each child; 0: no limit. */
  memoryLimitBytes: number
  /** A child left larger than this after a read is retired (replaced on the next read). */
  retireAboveBytes: number
}

/**
 * How the pool's children are started: perl running ExifTool, under an address-space limit (RLIMIT_AS, set by
 * `ulimit -v` in the shell that then execs perl, so the pid batch-cluster watches is perl's own). perl cannot grow
 * past it: an allocation fails and perl exits ("Out of memory!"), so a file that needs more costs one child, not
 * the machine's memory. Linux only (/proc and RLIMIT_AS as Linux means them); elsewhere perl runs unbounded.
 * The environment is ExifTool's own (LANG=C, as exiftool-vendored sets it), not the service's: no key or secret of
 * the service reaches the child.
 */
export function boundedChildFactory (memoryLimitBytes: number): () => Promise<ChildProcess> {
  return async () => {
    const script = await exiftoolPath()
    const perl = perlPath()
    const env: NodeJS.ProcessEnv = { LANG: 'C' }
    if (process.env['EXIFTOOL_HOME'] !== undefined) env['EXIFTOOL_HOME'] = process.env['EXIFTOOL_HOME']
    const options: SpawnOptions = { stdio: 'pipe', shell: false, detached: false, windowsHide: true, env }
    const args = [script, ...DefaultExiftoolArgs]
    if (memoryLimitBytes === 0 || process.platform !== 'linux') return spawn(perl, args, options)
    const kib = String(Math.floor(memoryLimitBytes / 1024))
    return spawn('/bin/sh', ['-c', 'ulimit -v "$1" && shift && exec "$@"', 'sh', kib, perl, ...args], options)
  }
}

let perl: string | undefined

/** The perl exiftool-vendored would run: /usr/bin/perl, else the first on PATH. */
function perlPath (): string {
  perl ??= ['/usr/bin', ...(process.env['PATH'] ?? '').split(delimiter)].map((dir) => join(dir, 'perl')).find(isExecutable) ?? 'perl'
  return perl
}

function isExecutable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Watches the pool's children through exiftool-vendored's events: kills a child whose read has taken more than
 * `readCpuMs` of CPU time, tells a failed read whether the file was at fault (the child was killed for its CPU time,
 * ran out of memory or crashed on it) or the pool (a child killed from outside, hung, or gone), and retires a
 * child that a read left large. CPU time, not wall time, is what a file costs: a loaded machine stretches every
 * read's wall time, and would otherwise blame real photos for it. So the pool's wall-clock task timeout is restarted
 * while a child makes progress (spends CPU): it fires only for a child that does not (stopped, blocked), and a costly
 * file on a starved machine still meets its CPU limit, and its refusal, rather than a timeout and a retry.
 */
export class ChildWatch {
  readonly #limits: ChildLimits
  readonly #children = new Map<number, Watched>()
  /** The child each failed read's error came from (batch-cluster rejects a read with the error it reports). */
  readonly #failedIn = new WeakMap<object, PoolChild>()
  readonly #killedForCpu = new WeakSet<PoolChild>()
  #reads = 0
  #timer: NodeJS.Timeout | undefined
  /** Children retired for the memory a read left them. */
  retired = 0

  constructor (exiftool: ExifTool, limits: ChildLimits) {
    this.#limits = limits
    exiftool.on('childStart', (child) => {
      this.#children.set(child.pid, { child, taskId: undefined, cpuMsAtStart: 0, cpuMsLastSeen: 0 })
    })
    exiftool.on('childEnd', (child) => { this.#children.delete(child.pid) })
    exiftool.on('taskResolved', (_task, child) => { this.#afterRead(child) })
    exiftool.on('taskError', (error, _task, child) => {
      this.#failedIn.set(error, child)
      this.#afterRead(child)
    })
  }

  /** Marks a read in progress: the children are watched while any is. Returns its end. */
  reading (): () => void {
    if (this.#reads++ === 0 && this.#limits.readCpuMs > 0 && process.platform === 'linux') {
      this.#timer = setInterval(() => { this.#poll() }, POLL_INTERVAL_MS).unref()
    }
    let done = false
    return () => {
      if (done) return
      done = true
      if (--this.#reads === 0) {
        clearInterval(this.#timer)
        this.#timer = undefined
      }
    }
  }

  /**
   * The file's fault behind a failed read, or undefined when the pool is at fault (or ExifTool answered with an
   * error of its own). Waits, briefly, for the exit status of a child that is ending.
   */
  async faultOf (error: unknown): Promise<FileFault | undefined> {
    if (typeof error !== 'object' || error === null) return undefined
    const child = this.#failedIn.get(error)
    if (child === undefined) return undefined
    if (this.#killedForCpu.has(child)) return 'cpu'
    if (!child.ending || (error as Error).name === 'TaskTimeoutError') return undefined
    if (child.exitCode === null && child.exitSignal === null && child.proc.exitCode === null && child.proc.signalCode === null) {
      await Promise.race([once(child.proc, 'exit').catch(() => {}), delay(EXIT_WAIT_MS, undefined, { ref: false })])
    }
    const code = child.exitCode ?? child.proc.exitCode
    const signal = child.exitSignal ?? child.proc.signalCode
    if (code !== null && code !== 0) return code === OUT_OF_MEMORY_STATUS && this.#limits.memoryLimitBytes > 0 ? 'memory' : 'crash'
    return signal !== null && CRASH_SIGNALS.has(signal) ? 'crash' : undefined
  }

  #poll (): void {
    for (const watched of this.#children.values()) {
      const { child } = watched
      const task = child.currentTask
      if (task === undefined || task.taskId === child.startupTaskId || child.ending) {
        watched.taskId = undefined
        continue
      }
      const cpuMs = cpuTimeMs(child.pid)
      if (cpuMs === undefined) continue
      if (watched.taskId !== task.taskId) {
        // First seen now: the little it spent since it started (under one interval) goes uncounted.
        watched.taskId = task.taskId
        watched.cpuMsAtStart = cpuMs
      } else if (cpuMs - watched.cpuMsAtStart > this.#limits.readCpuMs) {
        this.#killedForCpu.add(child)
        // SIGKILL: perl cannot put it off; batch-cluster sees the exit, fails the read and starts a new child.
        try { process.kill(child.pid, 'SIGKILL') } catch {}
        watched.taskId = undefined
      } else if (cpuMs > watched.cpuMsLastSeen) {
        task.resetTimeout()
      }
      watched.cpuMsLastSeen = cpuMs
    }
  }

  /** A child that a read left holding much memory (perl keeps what it took) is replaced once idle. */
  #afterRead (child: PoolChild): void {
    if (child.ending || process.platform !== 'linux') return
    const rss = residentBytes(child.pid)
    if (rss !== undefined && rss > this.#limits.retireAboveBytes) {
      this.retired++
      child.requestRetirement()
    }
  }
}

/** A process's CPU time (user and system), from /proc/<pid>/stat; undefined once it is gone. */
function cpuTimeMs (pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // Fields after the command name (which may hold spaces): state is the first, utime the 12th, stime the 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1000 / TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

/** A process's resident memory, from /proc/<pid>/status; undefined once it is gone. */
function residentBytes (pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return match === null ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}
