import { X509Certificate } from 'node:crypto'
import { stat } from 'node:fs/promises'
import { Piscina } from 'piscina'
import { ExtractionTimeoutError, ExtractorBusyError, ExtractorUnavailableError, withCause } from '../../errors.ts'
import type { VerifyResult, VerifyTask } from './c2pa-worker.ts'

export interface ContentCredentialsConfig {
  /** PEM certificates whose chains count as trusted signers (and time-stamp authorities); undefined: none. */
  trustAnchorsPem?: string
  /** Worker threads validating manifests. */
  workers: number
  /** Per-file limit; the thread is ended when it is exceeded. */
  timeoutMs: number
  /** A thread with no file for this long ends (default a minute); the next file that needs one starts it again. */
  idleTimeoutMs?: number
  /** Larger files are not validated (integrity not_checked); default DEFAULT_MAX_VALIDATED_BYTES. */
  maxBytes?: number
}

/**
 * The largest file validated unless configured otherwise. c2pa-rs holds the whole file in the thread's WebAssembly
 * memory, and for JPEG copies it more than once on the way (its Blob reader too reads a JPEG whole): a file costs
 * about four and a half times its size while it is validated, and the thread keeps the grown memory until it idles
 * out. This keeps one thread well under 300 MB; camera and phone JPEGs are far smaller.
 */
export const DEFAULT_MAX_VALIDATED_BYTES = 48 * 1024 * 1024

/** What the verifier says about one file: the validator's result, or that it did not read the file. */
export type VerifyOutcome = VerifyResult | { kind: 'not_checked', reason: string }

/** Files waiting for a validator thread before new ones get 503. */
const MAX_QUEUE = 64
/** How long a new thread may take to load the validator (compiling 9 MB of WebAssembly), at start-up or on demand. */
const LOAD_TIMEOUT_MS = 30_000
/** A validator thread with no file for this long ends, unless configured otherwise. */
const IDLE_TIMEOUT_MS = 60_000

/**
 * c2pa-rs's settings: nothing fetched over the network (no remote manifests, no OCSP: a request must not make the
 * service call out), trust checked against the configured anchors only, time-stamps checked against them too.
 */
function validatorSettings (trustAnchorsPem: string | undefined): string {
  return JSON.stringify({
    verify: {
      verify_trust: true,
      verify_timestamp_trust: true,
      ocsp_fetch: false,
      remote_manifest_fetch: false
    },
    ...(trustAnchorsPem === undefined ? {} : { trust: { trust_anchors: trustAnchorsPem } })
  })
}

/** The containers c2pa-rs reads, by the API's format name; a TIFF-based raw is read as TIFF. */
const MEDIA_TYPES: Readonly<Record<string, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  gif: 'image/gif',
  tiff: 'image/tiff',
  heic: 'image/heic',
  heif: 'image/heif',
  avif: 'image/avif',
  jxl: 'image/jxl',
  dng: 'image/dng',
  nef: 'image/x-nikon-nef',
  nrw: 'image/x-nikon-nef',
  arw: 'image/x-sony-arw',
  srf: 'image/x-sony-arw',
  sr2: 'image/x-sony-arw',
  cr2: 'image/tiff',
  pef: 'image/tiff',
  srw: 'image/tiff',
  '3fr': 'image/tiff',
  erf: 'image/tiff',
  iiq: 'image/tiff'
}

/**
 * Validates C2PA manifests (Content Credentials) with c2pa-rs in a pool of worker threads. Callers see one typed
 * call; a file that takes longer than the limit ends its thread and is answered as a timeout.
 */
export class ContentCredentialsVerifier {
  readonly #pool: Piscina<VerifyTask, VerifyResult>
  readonly #timeoutMs: number
  readonly #maxBytes: number
  /** A thread loading the validator for a pool that had none, while files wait for it. */
  #loading: Promise<void> | undefined
  /** Files validated since the pool started, by outcome (for /metrics). */
  readonly outcomes = { report: 0, absent: 0, unreadable: 0, not_checked: 0, timeout: 0, busy: 0, unavailable: 0 }

  private constructor (pool: Piscina<VerifyTask, VerifyResult>, timeoutMs: number, maxBytes: number) {
    this.#pool = pool
    this.#timeoutMs = timeoutMs
    this.#maxBytes = maxBytes
  }

  /**
   * Proves the validator loads, so that a broken one stops start-up rather than a request: one thread loads it and
   * reads an empty file, then ends. The threads that serve start with the first file that carries a manifest (the
   * validator loads in about 0.1 s) and end after a quiet spell: a thread holds 30–40 MB (9 MB of WebAssembly,
   * compiled, and its memory) that a service whose files carry no manifest has no use for.
   */
  static async start (config: ContentCredentialsConfig): Promise<ContentCredentialsVerifier> {
    const options = {
      filename: new URL('./c2pa-worker.ts', import.meta.url).href,
      name: 'default',
      minThreads: 0,
      workerData: { settings: validatorSettings(config.trustAnchorsPem) }
    }
    const probe = new Piscina<VerifyTask, VerifyResult>({ ...options, maxThreads: 1 })
    try {
      await loadValidator(probe)
    } catch (error) {
      throw new Error(`The C2PA validator did not start: ${(error as Error).message}`, { cause: error })
    } finally {
      await probe.close({ force: true })
    }
    const pool = new Piscina<VerifyTask, VerifyResult>({ ...options, maxThreads: config.workers, maxQueue: MAX_QUEUE, idleTimeout: config.idleTimeoutMs ?? IDLE_TIMEOUT_MS })
    return new ContentCredentialsVerifier(pool, config.timeoutMs, config.maxBytes ?? DEFAULT_MAX_VALIDATED_BYTES)
  }

  /** The manifest of the file at `path`, read as `format`; absent when it has none; not_checked above the size limit. */
  async verify (path: string, format: string): Promise<VerifyOutcome> {
    const mediaType = MEDIA_TYPES[format]
    if (mediaType === undefined) return { kind: 'unreadable', reason: `c2pa-rs reads no manifest from ${format} files` }
    const { size } = await stat(path)
    if (size > this.#maxBytes) {
      this.outcomes.not_checked++
      return { kind: 'not_checked', reason: `the file is larger than ${this.#maxBytes} bytes, the most the service validates` }
    }
    return await this.#run({ path, mediaType })
  }

  get threads (): number {
    return this.#pool.threads.length
  }

  /** Files waiting for a thread. */
  get queueSize (): number {
    return this.#pool.queueSize
  }

  async close (): Promise<void> {
    await this.#pool.close({ force: true })
  }

  async #run (task: VerifyTask): Promise<VerifyResult> {
    if (this.#pool.queueSize >= MAX_QUEUE) {
      this.outcomes.busy++
      throw new ExtractorBusyError()
    }
    await this.#threadReady()
    let result: VerifyResult
    try {
      result = await this.#pool.run(task, { signal: AbortSignal.timeout(this.#timeoutMs) })
    } catch (error) {
      if ((error as Error).name === 'AbortError') {
        this.outcomes.timeout++
        throw withCause(new ExtractionTimeoutError(), error)
      }
      // The thread died under the file (out of memory, a crash in the validator): the manifest cannot be read.
      result = { kind: 'unreadable', reason: (error as Error).message }
    }
    this.outcomes[result.kind]++
    return result
  }

  /**
   * With no thread, one is started and loads the validator before any file is handed to it, so that a file's limit
   * counts its validation, not the load; files that arrive meanwhile wait for the same thread.
   */
  async #threadReady (): Promise<void> {
    if (this.#loading === undefined && this.#pool.threads.length > 0) return
    this.#loading ??= loadValidator(this.#pool)
      .catch((error: unknown) => { throw withCause(new ExtractorUnavailableError(), error) })
      .finally(() => { this.#loading = undefined })
    try {
      await this.#loading
    } catch (error) {
      this.outcomes.unavailable++
      throw error
    }
  }
}

/** Has a thread of `pool` load the validator: it reads an empty file, and answers that it holds no manifest. */
async function loadValidator (pool: Piscina<VerifyTask, VerifyResult>): Promise<void> {
  await pool.run({ path: '/dev/null', mediaType: 'image/jpeg' }, { signal: AbortSignal.timeout(LOAD_TIMEOUT_MS) })
}

/** The certificates of a PEM bundle; throws when it holds none, or one that does not parse. */
export function parseTrustAnchors (pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []
  if (blocks.length === 0) throw new Error('no PEM certificate found')
  return blocks.map((block) => new X509Certificate(block))
}
