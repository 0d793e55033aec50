/**
 * The soak's two phases: the capacity probe (closed loop) and the soak itself (open loop at a fixed rate), both over
 * scripts/soak/client.ts, the server sampled from /proc.
 */
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { quantile } from '../../test/support/stats.ts'
import { newAgent, send } from './client.ts'
import { Recorder, type Interval } from './recorder.ts'
import { sample, type Sample, type SoakServer } from './server-state.ts'
import { IN_FLIGHT_CAP, PROBE_CONCURRENCY, PROBE_SECONDS, PROBE_WARMUP_SECONDS, SAMPLE_SECONDS, TICK_MS } from './settings.ts'
import type { Traffic } from './traffic.ts'

export interface ProbeResult {
  seconds: number
  concurrency: number
  completed: number
  valid: number
  capacity: number
  p50Ms: number
  p99Ms: number
  errors: Record<string, number>
  generatorCpuPercent: number
  serverCpuPercent: number
  exiftoolCpuPercent: number
  otherCpuPercent: number
}

/** Closed loop: PROBE_CONCURRENCY requests always in flight, warm-up then the measured window. */
export async function probe (server: SoakServer, traffic: Traffic): Promise<ProbeResult> {
  const { port } = server
  const agent = newAgent()
  const warmupEnd = performance.now() + PROBE_WARMUP_SECONDS * 1000
  const before = delay(PROBE_WARMUP_SECONDS * 1000).then(() => sample(server, 0, undefined))
  const end = warmupEnd + PROBE_SECONDS * 1000
  let completed = 0
  let valid = 0
  const latencies: number[] = []
  const errors: Record<string, number> = {}
  let cpuAtWarmupEnd: NodeJS.CpuUsage | undefined
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const outcome = await send(agent, port, traffic.next())
      const now = performance.now()
      if (now < warmupEnd) continue
      cpuAtWarmupEnd ??= process.cpuUsage()
      if (now >= end) break
      completed++
      latencies.push(outcome.latencyMs)
      if (outcome.ok) valid++
      else errors[outcome.error ?? 'unknown'] = (errors[outcome.error ?? 'unknown'] ?? 0) + 1
    }
  }
  await Promise.all(Array.from({ length: PROBE_CONCURRENCY }, worker))
  const cpu = process.cpuUsage(cpuAtWarmupEnd)
  const after = await sample(server, 0, (await before).counters)
  agent.destroy()
  const generatorCpuPercent = 100 * (cpu.user + cpu.system) / 1000 / ((after.atS - (await before).atS) * 1000)
  return {
    seconds: PROBE_SECONDS,
    concurrency: PROBE_CONCURRENCY,
    completed,
    valid,
    capacity: valid / PROBE_SECONDS,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    errors,
    generatorCpuPercent,
    serverCpuPercent: after.serverCpuPercent,
    exiftoolCpuPercent: after.exiftoolCpuPercent,
    otherCpuPercent: after.machineBusyCorePercent - after.serverCpuPercent - after.exiftoolCpuPercent - generatorCpuPercent
  }
}

export interface SoakRun {
  recorder: Recorder
  samples: Sample[]
  launched: number
  durationS: number
  generatorCpuPercent: number
  /** Samples at rest (no client connection) before and after. */
  restStart: Sample
  restEnd: Sample
}

/** Open loop at `rate` requests per second for `durationS`, sampling the server every SAMPLE_SECONDS. */
export async function soak (server: SoakServer, traffic: Traffic, rate: number, durationS: number, onInterval: (interval: Interval) => void): Promise<SoakRun> {
  const restStart = await sample(server, performance.now(), undefined)
  const agent = newAgent()
  const t0 = performance.now()
  const recorder = new Recorder(t0, durationS)
  const durationMs = durationS * 1000
  const periodMs = 1000 / rate
  const samples: Sample[] = []
  const pending = new Set<Promise<void>>()
  let launched = 0
  const cpuStart = process.cpuUsage()
  let cpuAtInterval = cpuStart
  samples.push(await sample(server, t0, undefined))

  const fire = (lagMs: number): void => {
    const planned = traffic.next()
    if (recorder.inFlight >= IN_FLIGHT_CAP) {
      planned.release(false)
      recorder.skipped(planned.kind)
      return
    }
    recorder.started(lagMs)
    const promise: Promise<void> = send(agent, server.port, planned)
      .then((outcome) => { recorder.completed(outcome) })
      .finally(() => { pending.delete(promise) })
    pending.add(promise)
  }

  // Interval i (0-based) ends with sample i + 1: at (i + 1) × SAMPLE_SECONDS, the last one at the end of the run.
  const intervalCount = recorder.intervals.length
  let lastInterval: Interval | undefined
  await new Promise<void>((resolve) => {
    let nextSample = 1
    let sampling = Promise.resolve()
    const takeSample = (): void => {
      const interval = recorder.intervals[nextSample - 1]!
      const isLast = nextSample === intervalCount
      nextSample++
      const cpu = process.cpuUsage(cpuAtInterval)
      cpuAtInterval = process.cpuUsage()
      interval.generatorCpuMs = (cpu.user + cpu.system) / 1000
      sampling = sampling.then(async () => {
        const reading = await sample(server, t0, samples.at(-1)?.counters)
        samples.push(reading)
        interval.sample = reading
        // The last row is printed once the requests still in flight have finished (they count in it).
        if (isLast) lastInterval = interval
        else onInterval(interval)
      }).catch((error: unknown) => { console.error('soak: sampling failed:', error) })
    }
    const tick = setInterval(() => {
      const now = performance.now()
      const elapsed = now - t0
      const due = Math.min(Math.floor(elapsed / periodMs) + 1, Math.ceil(durationMs / periodMs))
      while (launched < due) {
        const lag = now - (t0 + launched * periodMs)
        launched++
        fire(lag)
      }
      const samplesDue = Math.min(intervalCount, Math.floor(elapsed / (SAMPLE_SECONDS * 1000)) + 1)
      for (let index = nextSample; index < samplesDue; index++) takeSample()
      if (elapsed >= durationMs) {
        clearInterval(tick)
        takeSample()
        sampling.then(() => { resolve() }, () => { resolve() })
      }
    }, TICK_MS)
  })
  const generatorCpu = process.cpuUsage(cpuStart)
  const generatorCpuPercent = 100 * (generatorCpu.user + generatorCpu.system) / 1000 / durationMs
  // Requests still in flight finish (or time out) before the rest reading; they count in the last interval.
  await Promise.all([...pending])
  if (lastInterval !== undefined) onInterval(lastInterval)
  agent.destroy()
  await delay(2000)
  const restEnd = await sample(server, t0, undefined)
  return { recorder, samples, launched, durationS, generatorCpuPercent, restStart, restEnd }
}
