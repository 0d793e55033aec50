import { ExifTool } from 'exiftool-vendored'
import type { ExifToolConfig } from '../config.ts'
import { ExtractionTimeoutError, ExtractorBusyError, ExtractorUnavailableError, withCause } from '../errors.ts'
import type { ImageFormat } from './formats.ts'
import { FULL_READ_ARGS, MAKER_NOTE_READ_ARGS, summaryReadArgs, type RawTagValues } from './tags.ts'

/**
 * The pooled ExifTool processes behind one typed call per read. exiftool-vendored (batch-cluster) runs
 * `-stay_open` children; a child that crashes or exceeds the per-task timeout is replaced and the read retried once.
 */
export class MetadataExtractor {
  readonly #exiftool: ExifTool
  readonly #maxQueue: number
  #ended = false
  /** Reads refused or failed since the pool started, by kind (for /metrics). */
  readonly failures = { busy: 0, timeout: 0, unavailable: 0 }

  constructor (config: ExifToolConfig) {
    this.#maxQueue = config.maxQueue
    this.#exiftool = new ExifTool({
      maxProcs: config.procs,
      taskTimeoutMillis: config.taskTimeoutMs,
      taskRetries: 1,
      minDelayBetweenSpawnMillis: 0,
      // Start-up checks and the exit handlers are the pool's own; the process list stays ours to close.
      checkPerl: true
    })
  }

  /** The tags the API summary needs, from an image already sniffed as `format`; its size too when `needsSize`. */
  async readSummary (path: string, format: ImageFormat, needsSize: boolean): Promise<RawTagValues> {
    return await this.#read(path, summaryReadArgs(format, needsSize))
  }

  /** The maker-note tags that name a camera, for a file whose main IFD names none. */
  async readMakerNotes (path: string): Promise<RawTagValues> {
    return await this.#read(path, MAKER_NOTE_READ_ARGS)
  }

  /** Every tag ExifTool reads, grouped (for `?full=true`). */
  async readAll (path: string): Promise<RawTagValues> {
    return await this.#read(path, FULL_READ_ARGS)
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
    try {
      return await this.#exiftool.readRaw(path, { readArgs, useMWG: false, ignoreMinorErrors: true }) as RawTagValues
    } catch (error) {
      const translated = translatePoolError(error)
      if (translated instanceof ExtractionTimeoutError) this.failures.timeout++
      else if (translated instanceof ExtractorUnavailableError) this.failures.unavailable++
      throw translated
    }
  }
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
