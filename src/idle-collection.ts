/**
 * Gives memory back once a burst is over. V8 keeps the heap pages a burst freed in a pool of its own and returns them
 * only in a memory-reducing collection, which its memory reducer starts when it judges the allocation rate low; it
 * judges that rate from collections, and once requests stop there are none, so after a burst the process stays
 * 100 MB and more above where it idled (still so 25 s later, the longest it was watched). The collector watches the
 * event loop instead: when it has been (almost) idle for `quietMs` and the process's resident memory has grown by
 * `growthBytes` since the last collection, it runs one memory-reducing collection, which returns the pooled pages and
 * start-up's garbage.
 *
 * The pause (90–190 ms measured here, with the chat model in the heap) only ever falls in a quiet spell, and the
 * growth rule keeps a trickle of requests from paying for one each: after a collection, the next needs the memory to
 * grow again.
 */

export interface IdleCollectorOptions {
  /** How long the event loop must stay idle before a collection. */
  quietMs: number
  /** The memory-reducing collection: V8's `gc` with the last-resort flavour. */
  collect: () => void
  /** Growth of resident memory since the last collection that is worth a pause (default 32 MiB). */
  growthBytes?: number
  /** How often the event loop is sampled (default 250 ms). */
  checkMs?: number
  /** Told of each collection: resident memory before it and the pause. */
  onCollected?: (collection: { rssBytes: number, pauseMs: number }) => void
  /** Resident memory in bytes; the process's own by default. */
  readRss?: () => number
  /** The event loop's utilization (0–1) since the previous call; the process's own by default. */
  readUtilization?: () => number
}

/** Busier than this, a sample does not count as quiet (a health probe or a metrics scrape take well under 1%). */
const QUIET_UTILIZATION = 0.05

const DEFAULT_GROWTH_BYTES = 32 * 2 ** 20
const DEFAULT_CHECK_MS = 250

/** The process's event-loop utilization since the previous call. */
function utilizationSinceLastCall (): () => number {
  let last = performance.eventLoopUtilization()
  return () => {
    const now = performance.eventLoopUtilization()
    const { utilization } = performance.eventLoopUtilization(now, last)
    last = now
    return utilization
  }
}

export class IdleCollector {
  readonly #options: Required<Omit<IdleCollectorOptions, 'onCollected'>> & Pick<IdleCollectorOptions, 'onCollected'>
  #quietForMs = 0
  /**
   * Resident memory after the last collection; zero until the first, so that the first quiet spell after start-up
   * returns what building the app left behind.
   */
  #settledRss = 0
  #settling = false
  #timer: NodeJS.Timeout | undefined
  /** Collections run, and their pauses in all. */
  collections = 0
  pauseMs = 0

  constructor (options: IdleCollectorOptions) {
    this.#options = {
      growthBytes: DEFAULT_GROWTH_BYTES,
      checkMs: DEFAULT_CHECK_MS,
      readRss: () => process.memoryUsage.rss(),
      readUtilization: utilizationSinceLastCall(),
      ...options
    }
  }

  /** Samples every `checkMs` until `stop()`; the timer does not keep the process alive. */
  start (): void {
    this.stop()
    this.#options.readUtilization()
    this.#timer = setInterval(() => { this.check() }, this.#options.checkMs).unref()
  }

  stop (): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** One sample (the timer's; tests call it directly): true when it ran a collection. */
  check (): boolean {
    const { readUtilization, readRss, checkMs, quietMs, growthBytes } = this.#options
    if (this.#settling) {
      // V8 unmaps some of the pages on a helper thread after the pause: the level is read again one sample later.
      this.#settledRss = Math.min(this.#settledRss, readRss())
      this.#settling = false
    }
    if (readUtilization() > QUIET_UTILIZATION) {
      this.#quietForMs = 0
      return false
    }
    this.#quietForMs += checkMs
    if (this.#quietForMs < quietMs) return false
    const rssBytes = readRss()
    if (rssBytes < this.#settledRss + growthBytes) return false
    const started = performance.now()
    this.#options.collect()
    const pauseMs = performance.now() - started
    this.collections++
    this.pauseMs += pauseMs
    this.#settledRss = readRss()
    this.#settling = true
    this.#quietForMs = 0
    this.#options.onCollected?.({ rssBytes, pauseMs })
    return true
  }
}
