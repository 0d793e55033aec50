/** What the soak saw, per interval of SAMPLE_SECONDS and per request kind: counts, latencies, errors, pacing lag. */
import { performance } from 'node:perf_hooks'
import type { Outcome } from './client.ts'
import type { Sample } from './server-state.ts'
import { IN_FLIGHT_CAP, SAMPLE_SECONDS, type Kind } from './settings.ts'

/** What one interval of the run saw: the requests completed in it, then the server's state at its end. */
export interface Interval {
  index: number
  startS: number
  seconds: number
  scheduled: number
  completed: number
  ok: number
  errors: number
  latencies: number[]
  byKind: Map<Kind, number[]>
  maxInFlight: number
  /** Start time minus scheduled time, ms. */
  lags: number[]
  generatorCpuMs: number
  sample?: Sample
}

export class Recorder {
  readonly intervals: Interval[] = []
  readonly errors = new Map<string, { count: number, kinds: Map<Kind, number>, example: string }>()
  readonly byKind = new Map<Kind, { count: number, errors: number, latencies: number[] }>()
  inFlight = 0
  readonly #t0: number
  readonly #count: number

  constructor (t0: number, durationS: number) {
    this.#t0 = t0
    this.#count = Math.max(1, Math.ceil(durationS / SAMPLE_SECONDS))
    for (let index = 0; index < this.#count; index++) {
      const startS = index * SAMPLE_SECONDS
      this.intervals.push({
        index,
        startS,
        seconds: Math.min(SAMPLE_SECONDS, durationS - startS),
        scheduled: 0,
        completed: 0,
        ok: 0,
        errors: 0,
        latencies: [],
        byKind: new Map(),
        maxInFlight: 0,
        lags: [],
        generatorCpuMs: 0
      })
    }
  }

  intervalAt (now: number): Interval {
    const index = Math.min(this.#count - 1, Math.max(0, Math.floor((now - this.#t0) / (SAMPLE_SECONDS * 1000))))
    return this.intervals[index]!
  }

  started (lagMs: number): void {
    this.inFlight++
    const interval = this.intervalAt(performance.now())
    interval.scheduled++
    interval.lags.push(lagMs)
    interval.maxInFlight = Math.max(interval.maxInFlight, this.inFlight)
  }

  skipped (kind: Kind): void {
    const interval = this.intervalAt(performance.now())
    interval.scheduled++
    this.#error(interval, { kind, ok: false, error: 'SKIPPED_AT_CAP', detail: `${IN_FLIGHT_CAP} requests already in flight`, latencyMs: 0 })
  }

  completed (outcome: Outcome): void {
    this.inFlight--
    const interval = this.intervalAt(performance.now())
    interval.completed++
    interval.latencies.push(outcome.latencyMs)
    let kindLatencies = interval.byKind.get(outcome.kind)
    if (kindLatencies === undefined) interval.byKind.set(outcome.kind, kindLatencies = [])
    kindLatencies.push(outcome.latencyMs)
    const kind = this.#kind(outcome.kind)
    kind.count++
    kind.latencies.push(outcome.latencyMs)
    if (outcome.ok) interval.ok++
    else this.#error(interval, outcome)
  }

  #kind (kind: Kind): { count: number, errors: number, latencies: number[] } {
    let entry = this.byKind.get(kind)
    if (entry === undefined) this.byKind.set(kind, entry = { count: 0, errors: 0, latencies: [] })
    return entry
  }

  #error (interval: Interval, outcome: Outcome): void {
    interval.errors++
    this.#kind(outcome.kind).errors++
    const key = outcome.error ?? 'unknown'
    let entry = this.errors.get(key)
    if (entry === undefined) this.errors.set(key, entry = { count: 0, kinds: new Map(), example: outcome.detail ?? '' })
    entry.count++
    entry.kinds.set(outcome.kind, (entry.kinds.get(outcome.kind) ?? 0) + 1)
  }

  get totalErrors (): number {
    let total = 0
    for (const entry of this.errors.values()) total += entry.count
    return total
  }
}
