import { access } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import { ExifTool } from 'exiftool-vendored'
// exiftool-vendored's own read task, built here rather than through readRaw() so that a read can be withdrawn
// from the queue and its retry decided per read (the package exports the options type but not the class).
import { ReadRawTask } from 'exiftool-vendored/dist/ReadRawTask.js'
import type { ExifToolConfig } from '../config.ts'
import { BadRequestError, ExtractionTimeoutError, ExtractorBusyError, ExtractorUnavailableError, withCause } from '../errors.ts'
import type { ImageFormat } from './formats.ts'
import { FULL_READ_ARGS, MAKER_NOTE_READ_ARGS, summaryReadArgs, type RawTagValues, type SummaryReadOptions } from './read-args.ts'

/** A failed read is tried once more (a child that crashed or hung is replaced first), after this pause. */
const READ_RETRIES = 1
const RETRY_DELAY_MS = 50

/** What the caller of an abandoned read gets: nobody is left to see it, so it only has to be no error of ours. */
function abandonment (): Error {
  return new BadRequestError('The request was abandoned before its image was read')
}

/** One read in progress: the task it has in the pool now, and how to give it up. */
interface PendingRead {
  task: ReadRawTask | undefined
  /** Set when the read is abandoned: what its caller gets instead of tags. */
  abandoned: Error | undefined
  /** Settles the caller's promise at once with the abandonment. */
  giveUp: (error: Error) => void
}

/**
 * The pooled ExifTool processes behind one typed call per read. exiftool-vendored (batch-cluster) runs
 * `-stay_open` children; a child that crashes or exceeds the per-task timeout is replaced and the read retried once.
 * A read whose file is abandoned (its client went away) is withdrawn: see `abandon`.
 */
export class MetadataExtractor {
  readonly #exiftool: ExifTool
  readonly #maxQueue: number
  #ended = false
  /** Reads in progress, by the path they read. */
  readonly #reads = new Map<string, Set<PendingRead>>()
  /** Reads refused or failed since the pool started, by kind (for /metrics). */
  readonly failures = { busy: 0, timeout: 0, unavailable: 0 }
  /** Reads given up because their requester went away, by where they were: waiting for a child, or in one. */
  readonly abandoned = { queued: 0, running: 0 }

  constructor (config: ExifToolConfig) {
    this.#maxQueue = config.maxQueue
    this.#exiftool = new ExifTool({
      maxProcs: config.procs,
      taskTimeoutMillis: config.taskTimeoutMs,
      // Reads are retried here, per read (below); the readiness probe's version check keeps the pool's one retry.
      taskRetries: 1,
      minDelayBetweenSpawnMillis: 0,
      // Start-up checks and the exit handlers are the pool's own; the process list stays ours to close.
      checkPerl: true
    })
  }

  /** The tags the API summary needs, from an image already sniffed as `format`; its size too when `needsSize`. */
  async readSummary (path: string, format: ImageFormat, needsSize: boolean, options: SummaryReadOptions = {}): Promise<RawTagValues> {
    return await this.#read(path, summaryReadArgs(format, needsSize, options))
  }

  /** The maker-note tags that name a camera, for a file whose main IFD names none. */
  async readMakerNotes (path: string): Promise<RawTagValues> {
    return await this.#read(path, MAKER_NOTE_READ_ARGS)
  }

  /** Every tag ExifTool reads, grouped (for `?full=true`). */
  async readAll (path: string): Promise<RawTagValues> {
    return await this.#read(path, FULL_READ_ARGS)
  }

  /**
   * Starts a child now instead of on the first read: ExifTool's Perl takes a few hundred milliseconds to start, which
   * the service spends loading the rest of itself, so that the readiness probe and the first image find it running.
   */
  start (): void {
    this.#exiftool.version().catch(() => {})
  }

  /** True when a child answers within `timeoutMs`: the readiness probe. */
  async isReady (timeoutMs: number): Promise<boolean> {
    if (this.#ended) return false
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

  get pendingTasks (): number {
    return this.#exiftool.pendingTasks
  }

  get busyProcs (): number {
    return this.#exiftool.busyProcs
  }

  /**
   * Gives up the reads of `path`, whose requester has gone: a read still waiting for a child is taken off the queue
   * and never runs; one a child is working on is left to finish (a `-stay_open` child cannot withdraw a command
   * without being killed, which would cost every queued read a new process), its result is discarded and it is
   * not retried. Either way the caller's promise rejects at once (BAD_REQUEST: nobody is left to answer). A read
   * that starts after its file is gone fails as abandoned too: the file's owner removes it only once its request
   * has ended.
   */
  abandon (path: string): void {
    for (const read of this.#reads.get(path) ?? []) {
      if (read.abandoned !== undefined) continue
      read.abandoned = abandonment()
      // batch-cluster drops a task rejected while it is queued. A running one must not be rejected: its child would
      // be handed the next read while still working on this one, and this one's output taken for the next's.
      if (read.task?.runtimeMs === undefined) {
        read.task?.reject(new Error('read abandoned'))
        this.abandoned.queued++
      } else {
        this.abandoned.running++
      }
      read.giveUp(read.abandoned)
    }
  }

  /** Ends every child; pending reads finish first. */
  async end (): Promise<void> {
    this.#ended = true
    await this.#exiftool.end(true)
  }

  async #read (path: string, readArgs: string[]): Promise<RawTagValues> {
    if (this.#ended || this.#exiftool.ended) {
      throw new ExtractorUnavailableError()
    }
    if (this.#exiftool.pendingTasks >= this.#maxQueue) {
      this.failures.busy++
      throw new ExtractorBusyError()
    }
    const { promise: givenUp, reject: giveUp } = Promise.withResolvers<never>()
    // Only ever raced against a task: never unhandled while between attempts.
    givenUp.catch(() => {})
    const read: PendingRead = { task: undefined, abandoned: undefined, giveUp }
    const reads = this.#reads.get(path) ?? new Set()
    this.#reads.set(path, reads.add(read))
    try {
      for (let attempt = 0; ; attempt++) {
        const task = ReadRawTask.for(path, { readArgs, useMWG: false, ignoreMinorErrors: true })
        read.task = task
        try {
          return await Promise.race([this.#exiftool.enqueueTask(() => task, false), givenUp]) as RawTagValues
        } catch (error) {
          if (read.abandoned !== undefined) throw read.abandoned
          if (!await exists(path)) throw abandonment()
          if (attempt >= READ_RETRIES) throw this.#translated(error)
        }
        await Promise.race([delay(RETRY_DELAY_MS), givenUp])
      }
    } finally {
      reads.delete(read)
      if (reads.size === 0) this.#reads.delete(path)
    }
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

/** How batch-cluster reports that a child died or the pool closed under a task (after its one retry). */
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
