import { access } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'
import { ExifTool } from 'exiftool-vendored'
import { BadRequestError, ExtractionTimeoutError, ExtractorBusyError, ExtractorUnavailableError, withCause } from '../errors.ts'
import { FairQueue, type Admission } from './fair-queue.ts'
import type { ImageFormat } from './formats.ts'
import { FULL_READ_ARGS, MAKER_NOTE_READ_ARGS, summaryReadArgs, type RawTagValues } from './tags.ts'

/** The pool's settings (src/config.ts reads them from the environment; the defaults below are its defaults). */
export interface ExifToolConfig {
  /** ExifTool processes kept in the pool (of each worker process). */
  procs: number
  /** Per-image limit; a child that exceeds it is replaced and the image tried once more. */
  taskTimeoutMs: number
  /** Reads waiting for a free process before new requests get 503. */
  maxQueue: number
  /** The part of `procs` (and of `maxQueue`) the reads of one API key may hold at once (0 < share ≤ 1). */
  clientShare?: number
}

export const DEFAULT_CLIENT_SHARE = 0.5

/** A failed read is tried once more (a child that crashed or hung is replaced first), after this pause. */
const READ_RETRIES = 1
const RETRY_DELAY_MS = 50
/** Reads that name no client (tools and tests) share one. */
const NO_CLIENT = ''

/** Who a read is for. */
export interface ReadContext {
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
 * `-stay_open` children; a child that crashes or exceeds the per-task timeout is replaced and the read retried once.
 * Reads enter the pool through a queue of ours that hands exiftool-vendored at most `procs` at a time and gives each
 * client its share of them; a read whose file is abandoned (its client went away) is withdrawn: see `abandon`.
 */
export class MetadataExtractor {
  readonly #exiftool: ExifTool
  readonly #queue: FairQueue
  readonly #procs: number
  #ended = false
  /** Reads in progress, by the path they read. */
  readonly #reads = new Map<string, Set<PendingRead>>()
  /** Reads refused or failed since the pool started, by kind (for /metrics). */
  readonly failures = { busy: 0, timeout: 0, unavailable: 0 }
  /** Reads given up because their requester went away, by where they were: waiting for a child, or in one. */
  readonly abandoned = { queued: 0, running: 0 }

  constructor (config: ExifToolConfig) {
    this.#procs = config.procs
    this.#queue = new FairQueue({ slots: config.procs, maxWaiting: config.maxQueue, share: config.clientShare ?? DEFAULT_CLIENT_SHARE })
    this.#exiftool = new ExifTool({
      maxProcs: config.procs,
      taskTimeoutMillis: config.taskTimeoutMs,
      // Reads are retried here, per read (below).
      taskRetries: 0,
      minDelayBetweenSpawnMillis: 0,
      // Start-up checks and the exit handlers are the pool's own; the process list stays ours to close.
      checkPerl: true
    })
  }

  /** The tags the API summary needs, from an image already sniffed as `format`; its size too when `needsSize`. */
  async readSummary (path: string, format: ImageFormat, needsSize: boolean, context: ReadContext = {}): Promise<RawTagValues> {
    return await this.#read(path, summaryReadArgs(format, needsSize), context)
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
        const attempted = this.#exiftool.readRaw(path, { readArgs, useMWG: false, ignoreMinorErrors: true })
        try {
          return await Promise.race([attempted, givenUp]) as RawTagValues
        } catch (error) {
          if (read.abandoned !== undefined) {
            // The child finishes on its own: its slot is given back then.
            slotHeldByChild = true
            attempted.then(() => {}, () => {}).finally(() => { admission.leave() })
            throw read.abandoned
          }
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
