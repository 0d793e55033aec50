import { access } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import { ExifTool } from 'exiftool-vendored'
import { BadRequestError, ExtractionTimeoutError, ExtractorBusyError, ExtractorUnavailableError, ImageTooComplexError, withCause } from '../errors.ts'
import { boundedChildFactory, ChildWatch, type FileFault } from './exiftool-children.ts'
import { FairQueue, type Admission } from './fair-queue.ts'
import type { ImageFormat } from './formats.ts'
import { FULL_READ_ARGS, MAKER_NOTE_READ_ARGS, summaryReadArgs, type RawTagValues, type SummaryReadOptions } from './read-args.ts'
import { RefusedFiles } from './refused-files.ts'

/** The pool's settings (src/config.ts reads them from the environment; the defaults below are its defaults). */
export interface ExifToolConfig {
  /** ExifTool processes kept in the pool (of each worker process). */
  procs: number
  /**
   * Time a child may spend on one read without progress (with a CPU limit, on Linux: without spending CPU) before it
   * is taken as hung, the pool's fault rather than the file's: it is replaced and the read tried once more.
   */
  taskTimeoutMs: number
  /** Reads waiting for a free process before new requests get 503. */
  maxQueue: number
  /** CPU time one read may take; a file that needs more is refused (IMAGE_TOO_COMPLEX). 0: no limit. */
  readCpuMs?: number
  /** Address-space limit of each child, in bytes; a file that needs more is refused. 0: no limit. */
  memoryLimitBytes?: number
  /**
   * The part of `procs` (and of `maxQueue`) the reads of one client may hold at once (0 < share ≤ 1). Unset: no
   * per-client limit (a tool's own pool); the service's configuration sets DEFAULT_CLIENT_SHARE unless told otherwise.
   */
  clientShare?: number
  /** How long the digest of a refused file is remembered, so that a resend is refused without ExifTool. */
  refusedTtlMs?: number
}

export const DEFAULT_READ_CPU_MS = 2000
export const DEFAULT_MEMORY_LIMIT_BYTES = 512 * 1024 * 1024
export const DEFAULT_CLIENT_SHARE = 0.5
export const DEFAULT_REFUSED_TTL_MS = 3_600_000
/** Refused files remembered at most (a digest and a reason each: about 2 MB when full). */
const REFUSED_FILES_MAX = 10_000
/** A child left with more resident memory than this after a read is replaced; real files leave far less. */
const RETIRE_ABOVE_BYTES = 128 * 1024 * 1024

/** A failed read caused by neither the file nor the client is tried once more, after this pause. */
const READ_RETRIES = 1
const RETRY_DELAY_MS = 50
/** Reads that name no client (tools and tests) share one. */
const NO_CLIENT = ''

/** Who a read is for: the file's digest (a file refused once is refused again at once) and the client's id. */
export interface ReadContext {
  /** The file's SHA-256, hex. */
  sha256?: string
  /** A non-secret id of the API key: its reads get their share of the pool. */
  clientId?: string
}

/** What the caller of an abandoned read gets: nobody is left to see it, so it only has to be no error of ours. */
function abandonment (): Error {
  return new BadRequestError('The request was abandoned before its image was read')
}

/** One read in progress: its place in the pool's queue, and how to give it up. */
interface PendingRead {
  admission: Admission
  /** Set when the read is abandoned: what its caller gets instead of tags. */
  abandoned: Error | undefined
  /** Settles the caller's promise at once with the abandonment. */
  giveUp: (error: Error) => void
}

/**
 * The pooled ExifTool processes behind one typed call per read. exiftool-vendored (batch-cluster) runs
 * `-stay_open` children, each under a memory limit; a read past its CPU time is stopped. A file that stops or
 * crashes its child is refused (IMAGE_TOO_COMPLEX), not retried, and its digest remembered; a child that hangs or
 * is killed from outside is replaced and the read tried once more. Reads enter the pool through a queue of ours that
 * hands exiftool-vendored at most `procs` at a time and gives each client its share of them; a read whose file is
 * abandoned (its client went away) is withdrawn: see `abandon`.
 */
export class MetadataExtractor {
  readonly #exiftool: ExifTool
  readonly #queue: FairQueue
  readonly #children: ChildWatch
  readonly #refused: RefusedFiles
  readonly #procs: number
  readonly #readCpuMs: number
  readonly #memoryLimitBytes: number
  #ended = false
  /** Reads in progress, by the path they read. */
  readonly #reads = new Map<string, Set<PendingRead>>()
  /** Reads refused or failed since the pool started, by kind (for /metrics). */
  readonly failures = { busy: 0, timeout: 0, unavailable: 0 }
  /** Reads given up because their requester went away, by where they were: waiting for a child, or in one. */
  readonly abandoned = { queued: 0, running: 0 }
  /** Files refused as beyond the pool's bounds, by why; `remembered`: a resend, refused without ExifTool. */
  readonly refusals: Record<FileFault | 'remembered', number> = { cpu: 0, memory: 0, crash: 0, remembered: 0 }

  constructor (config: ExifToolConfig) {
    this.#procs = config.procs
    this.#readCpuMs = config.readCpuMs ?? DEFAULT_READ_CPU_MS
    this.#memoryLimitBytes = config.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES
    this.#queue = new FairQueue({ slots: config.procs, maxWaiting: config.maxQueue, share: config.clientShare ?? 1 })
    this.#refused = new RefusedFiles({ max: REFUSED_FILES_MAX, ttlMs: config.refusedTtlMs ?? DEFAULT_REFUSED_TTL_MS })
    this.#exiftool = new ExifTool({
      maxProcs: config.procs,
      taskTimeoutMillis: config.taskTimeoutMs,
      // Reads are retried here, per read, and only when the file is not at fault (below).
      taskRetries: 0,
      minDelayBetweenSpawnMillis: 0,
      processFactory: boundedChildFactory(this.#memoryLimitBytes),
      // Start-up checks and the exit handlers are the pool's own; the process list stays ours to close.
      checkPerl: true
    })
    this.#children = new ChildWatch(this.#exiftool, {
      readCpuMs: this.#readCpuMs,
      memoryLimitBytes: this.#memoryLimitBytes,
      retireAboveBytes: RETIRE_ABOVE_BYTES
    })
  }

  /** The tags the API summary needs, from an image already sniffed as `format`; its size too when `needsSize`. */
  async readSummary (path: string, format: ImageFormat, needsSize: boolean, options: SummaryReadOptions & ReadContext = {}): Promise<RawTagValues> {
    return await this.#read(path, summaryReadArgs(format, needsSize, options), options)
  }

  /** The maker-note tags that name a camera, for a file whose main IFD names none. */
  async readMakerNotes (path: string, context: ReadContext = {}): Promise<RawTagValues> {
    return await this.#read(path, MAKER_NOTE_READ_ARGS, context)
  }

  /** Every tag ExifTool reads, grouped (for `?full=true`). */
  async readAll (path: string, context: ReadContext = {}): Promise<RawTagValues> {
    return await this.#read(path, FULL_READ_ARGS, context)
  }

  /**
   * Starts a child now instead of on the first read: ExifTool's Perl takes a few hundred milliseconds to start, which
   * the service spends loading the rest of itself, so that the readiness probe and the first image find it running.
   */
  start (): void {
    this.#exiftool.version().catch(() => {})
  }

  /**
   * True when a child answers within `timeoutMs`, or every child is at work on a read: a pool busy with slow files
   * is working (each read is bounded), and asking it for its version would only time the queue.
   */
  async isReady (timeoutMs: number): Promise<boolean> {
    if (this.#ended || this.#exiftool.ended) return false
    if (this.#exiftool.busyProcs >= this.#procs) return true
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<false>((resolve) => { timer = setTimeout(resolve, timeoutMs, false) })
    try {
      return await Promise.race([this.#exiftool.version().then(() => true, () => false), timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Process ids of the live children (tests and diagnostics). */
  get pids (): number[] {
    return this.#exiftool.pids
  }

  /** Reads waiting for a child: in our queue, or handed over while a child starts. */
  get pendingTasks (): number {
    return this.#queue.waiting + this.#exiftool.pendingTasks
  }

  get busyProcs (): number {
    return this.#exiftool.busyProcs
  }

  /** Children replaced because a read left them holding much memory. */
  get retiredChildren (): number {
    return this.#children.retired
  }

  /**
   * Gives up the reads of `path`, whose requester has gone: a read still waiting for a child leaves the queue and
   * never runs; one a child is working on is left to finish (a `-stay_open` child cannot withdraw a command
   * without being killed, which would cost every queued read a new process), its result is discarded and it is
   * not retried. Either way the caller's promise rejects at once (BAD_REQUEST: nobody is left to answer). A read
   * that starts after its file is gone fails as abandoned too: the file's owner removes it only once its request
   * has ended.
   */
  abandon (path: string): void {
    for (const read of this.#reads.get(path) ?? []) {
      if (read.abandoned !== undefined) continue
      read.abandoned = abandonment()
      if (read.admission.running) {
        this.abandoned.running++
      } else {
        read.admission.leave()
        this.abandoned.queued++
      }
      read.giveUp(read.abandoned)
    }
  }

  /** Ends every child: reads in progress finish first; reads still waiting fail as unavailable. */
  async end (): Promise<void> {
    this.#ended = true
    for (const reads of this.#reads.values()) {
      for (const read of reads) if (!read.admission.running) read.giveUp(new ExtractorUnavailableError())
    }
    await this.#exiftool.end(true)
  }

  async #read (path: string, readArgs: string[], context: ReadContext): Promise<RawTagValues> {
    if (this.#ended || this.#exiftool.ended) {
      throw new ExtractorUnavailableError()
    }
    const known = context.sha256 === undefined ? undefined : this.#refused.reasonFor(context.sha256)
    if (known !== undefined) {
      this.refusals.remembered++
      throw new ImageTooComplexError(known)
    }
    const admission = this.#queue.enqueue(context.clientId ?? NO_CLIENT)
    if (admission === undefined) {
      this.failures.busy++
      throw new ExtractorBusyError()
    }
    const { promise: givenUp, reject: giveUp } = Promise.withResolvers<never>()
    // Only ever raced against the queue or a read: never unhandled while between them.
    givenUp.catch(() => {})
    const read: PendingRead = { admission, abandoned: undefined, giveUp }
    const reads = this.#reads.get(path) ?? new Set()
    this.#reads.set(path, reads.add(read))
    /** Set while a child works on a read whose caller has gone: its slot is given back when the child is done. */
    let slotHeldByChild = false
    try {
      await Promise.race([admission.started, givenUp])
      for (let attempt = 0; ; attempt++) {
        const done = this.#children.reading()
        const attempted = this.#exiftool.readRaw(path, { readArgs, useMWG: false, ignoreMinorErrors: true }).finally(done)
        try {
          return await Promise.race([attempted, givenUp]) as RawTagValues
        } catch (error) {
          if (read.abandoned !== undefined) {
            // The child finishes (or is stopped) on its own: its slot is given back then, and a file that stopped
            // it is remembered all the same (leaving early must not spare a hostile file its refusal).
            slotHeldByChild = true
            attempted.then(() => {}, async (failure: unknown) => {
              const fault = await this.#children.faultOf(failure)
              if (fault !== undefined) this.#refuse(fault, context, failure)
            }).finally(() => { admission.leave() })
            throw read.abandoned
          }
          const fault = await this.#children.faultOf(error)
          if (fault !== undefined) throw this.#refuse(fault, context, error)
          if (!await exists(path)) throw abandonment()
          if (attempt >= READ_RETRIES || this.#ended) throw this.#translated(error)
        }
        await Promise.race([delay(RETRY_DELAY_MS), givenUp])
      }
    } finally {
      reads.delete(read)
      if (reads.size === 0) this.#reads.delete(path)
      if (!slotHeldByChild) admission.leave()
    }
  }

  /** The file is at fault: refused with why, and remembered so that a resend is refused without ExifTool. */
  #refuse (fault: FileFault, context: ReadContext, cause: unknown): Error {
    this.refusals[fault]++
    const reason = fault === 'cpu'
      ? `reading its metadata takes more than ${seconds(this.#readCpuMs)} s of processing`
      : fault === 'memory'
        ? `reading its metadata needs more than ${Math.round(this.#memoryLimitBytes / 1024 / 1024)} MB of memory`
        : 'its metadata makes the metadata reader fail'
    if (context.sha256 !== undefined) this.#refused.remember(context.sha256, reason)
    return withCause(new ImageTooComplexError(reason), cause)
  }

  #translated (error: unknown): Error {
    const translated = translatePoolError(error)
    if (translated instanceof ExtractionTimeoutError) this.failures.timeout++
    else if (translated instanceof ExtractorUnavailableError) this.failures.unavailable++
    return translated
  }
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}

/** Milliseconds as seconds for people: whole when whole, else to one decimal. */
function seconds (ms: number): string {
  return String(Math.round(ms / 100) / 10)
}

/** How batch-cluster reports that a child died or the pool closed under a task. */
const POOL_FAILURE = /has ended|terminated before task completed|unexpectedly closed|exited|end\(\)/i

/** Pool failures become the API's 503s; their text (paths, ExifTool output) stays in the server log. */
function translatePoolError (error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error))
  if (error.name === 'TaskTimeoutError') {
    return withCause(new ExtractionTimeoutError(), error)
  }
  if (POOL_FAILURE.test(error.message)) {
    return withCause(new ExtractorUnavailableError(), error)
  }
  return error
}
