/** Per-message classification time, as `npm run eval` and `npm run bench:chat` report it. */
export interface ClassificationTiming {
  /** Microseconds. */
  median: number
  p99: number
}

const WARM_UP_CALLS = 10_000

/**
 * Each message timed on its own, after warming up (at least 10,000 calls, so that a small file is timed as compiled
 * as a large one); the median and 99th percentile over `passes` passes.
 */
export function timeClassification (classify: (message: string) => unknown, messages: readonly string[], passes = 3): ClassificationTiming {
  // Nothing to time (only answer files given): the warm-up below would never end.
  if (messages.length === 0) return { median: Number.NaN, p99: Number.NaN }
  for (let calls = 0; calls < Math.max(WARM_UP_CALLS, messages.length);) for (const message of messages) { classify(message); calls++ }
  const samples: number[] = []
  for (let pass = 0; pass < passes; pass++) {
    for (const message of messages) {
      const start = process.hrtime.bigint()
      classify(message)
      samples.push(Number(process.hrtime.bigint() - start) / 1000)
    }
  }
  samples.sort((a, b) => a - b)
  return { median: samples[Math.floor(samples.length / 2)]!, p99: samples[Math.floor(samples.length * 0.99)]! }
}
