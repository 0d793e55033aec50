import { describe, expect, it } from 'vitest'
import { IdleCollector } from '../../src/idle-collection.ts'

// The collector's decisions, driven sample by sample with the event loop's utilization and the resident memory it
// would read; collecting is counted, not done. test/integration/memory.test.ts shows a real server giving memory back.

const MB = 2 ** 20

/** A collector over a scripted process: `busy` and `rssMB` are what the next sample reads. */
function scripted (options: { quietMs?: number, growthMB?: number } = {}) {
  const process = { busy: false, rssMB: 200, collected: [] as number[] }
  const collector = new IdleCollector({
    quietMs: options.quietMs ?? 1000,
    checkMs: 250,
    growthBytes: (options.growthMB ?? 32) * MB,
    readUtilization: () => process.busy ? 0.8 : 0.01,
    readRss: () => process.rssMB * MB,
    collect: () => {
      process.collected.push(process.rssMB)
      // What a memory-reducing collection gives back, some of it only by the next sample (helper threads).
      process.rssMB -= 40
    },
    onCollected: ({ rssBytes }) => { expect(rssBytes / MB).toBe(process.rssMB + 40) }
  })
  /** `count` samples; how many of them collected. */
  const samples = (count: number): number => Array.from({ length: count }, () => collector.check()).filter(Boolean).length
  return { process, collector, samples }
}

describe('IdleCollector', () => {
  it('collects once the event loop has been quiet for quietMs, the first time whatever start-up left', () => {
    const { process, collector, samples } = scripted()
    expect(samples(3)).toBe(0)
    expect(samples(1)).toBe(1)
    expect(process.collected).toEqual([200])
    expect(collector.collections).toBe(1)
    expect(collector.pauseMs).toBeGreaterThanOrEqual(0)
  })

  it('never collects while the event loop is busy, and a busy sample starts the quiet spell again', () => {
    const { process, samples } = scripted()
    process.busy = true
    expect(samples(20)).toBe(0)
    process.busy = false
    expect(samples(3)).toBe(0)
    process.busy = true
    expect(samples(1)).toBe(0)
    process.busy = false
    expect(samples(3)).toBe(0)
    expect(samples(1)).toBe(1)
  })

  it('collects again only once memory has grown by growthBytes over where the last collection left it', () => {
    const { process, samples } = scripted()
    expect(samples(4)).toBe(1)
    // 160 MB now. A trickle of requests, each quiet spell after it: no pause while memory stays within 32 MB of it.
    for (const rssMB of [170, 185, 191]) {
      process.busy = true
      process.rssMB = rssMB
      expect(samples(2)).toBe(0)
      process.busy = false
      expect(samples(8)).toBe(0)
    }
    // A burst.
    process.busy = true
    process.rssMB = 300
    expect(samples(10)).toBe(0)
    process.busy = false
    expect(samples(8)).toBe(1)
    expect(process.collected).toEqual([200, 300])
  })

  it('measures where a collection left memory at the sample after it, when the helper threads have given back theirs', () => {
    const { process, samples } = scripted()
    expect(samples(4)).toBe(1)
    // Read as 160 MB right after the pause; by the next sample 130 MB: growth counts from 130.
    process.rssMB = 130
    expect(samples(1)).toBe(0)
    process.rssMB = 163
    expect(samples(8)).toBe(1)
    expect(process.collected).toEqual([200, 163])
  })

  it('samples on a timer of its own between start and stop, which does not keep the process alive', async () => {
    let collections = 0
    let rssMB = 500
    // Memory that grows at every read: every quiet spell collects.
    const collector = new IdleCollector({ quietMs: 20, checkMs: 5, readUtilization: () => 0, readRss: () => (rssMB += 40) * MB, collect: () => { collections++ } })
    collector.start()
    await new Promise((resolve) => setTimeout(resolve, 100))
    collector.stop()
    const stopped = collections
    expect(stopped).toBeGreaterThanOrEqual(2)
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(collections).toBe(stopped)
  })
})
