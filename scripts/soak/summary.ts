/** The soak's figures: per interval, per minute, per request kind, and the verdicts. */
import { quantile } from '../../test/support/stats.ts'
import { mb, ms, signedPercent } from './format.ts'
import type { SoakRun } from './phases.ts'
import type { Interval } from './recorder.ts'
import type { Sample } from './server-state.ts'
import { FD_GROWTH_LIMIT, KINDS, P99_GROWTH_LIMIT, P99_WINDOW_SECONDS, RSS_GROWTH_LIMIT, SAMPLE_SECONDS, WARMUP_SECONDS, type Kind } from './settings.ts'
import type { Traffic } from './traffic.ts'

export interface Verdict { name: string, pass: boolean, detail: string }

export type Summary = ReturnType<typeof summarise>

export function summarise ({ run, rate, capacity, traffic }: {
  run: SoakRun
  rate: number
  capacity: number
  traffic: Traffic
}): {
    capacity: number
    targetRate: number
    achievedRate: number
    scheduled: number
    completed: number
    ok: number
    errors: { total: number, byKind: Record<string, { count: number, kinds: Record<string, number>, example: string }> }
    latency: { p50Ms: number, p99Ms: number, maxMs: number }
    perKind: Record<string, { count: number, errors: number, p50Ms: number, p99Ms: number, firstWindowP99Ms: number, lastWindowP99Ms: number }>
    rssMB: { start: number, afterWarmup: number, warmupAtS: number, end: number, max: number, restEnd: number }
    fds: { start: number, end: number, sampledMin: number, sampledMax: number }
    exiftoolChildren: { min: number, max: number, names: string[] }
    scratchFilesAtRest: number
    p99: { windowSeconds: number, firstMs: number, lastMs: number }
    generatorCpuPercent: number
    pacingLagP99Ms: number
    /** Mean CPU of every other process on the machine during the soak, % of one core (what skews the figures). */
    otherCpuPercent: number
    openConversationsAtEnd: number
    verdicts: Verdict[]
  } {
  const { recorder, samples, durationS } = run
  const intervals = recorder.intervals
  const completed = intervals.reduce((sum, interval) => sum + interval.completed, 0)
  const ok = intervals.reduce((sum, interval) => sum + interval.ok, 0)
  const all = intervals.flatMap((interval) => interval.latencies)
  const warmupAtS = Math.min(WARMUP_SECONDS, durationS / 3)
  const running = samples.slice(1)
  const afterWarmup = running.find((reading) => reading.atS >= warmupAtS - 0.5) ?? running[0] ?? samples[0]!
  const end = samples.at(-1)!
  const windowS = Math.max(SAMPLE_SECONDS, Math.min(P99_WINDOW_SECONDS, Math.floor(durationS / 3 / SAMPLE_SECONDS) * SAMPLE_SECONDS))
  const firstWindow = intervals.filter((interval) => interval.startS < windowS)
  const lastWindow = intervals.filter((interval) => interval.startS >= durationS - windowS - 0.001)
  const windowP99 = (window: Interval[], kind?: Kind): number =>
    quantile(window.flatMap((interval) => kind === undefined ? interval.latencies : (interval.byKind.get(kind) ?? [])), 0.99)
  const firstP99 = windowP99(firstWindow)
  const lastP99 = windowP99(lastWindow)
  const errorsTotal = recorder.totalErrors
  const rssLimit = afterWarmup.rssMB * (1 + RSS_GROWTH_LIMIT)
  const verdicts: Verdict[] = [
    { name: 'no errors', pass: errorsTotal === 0, detail: `${errorsTotal} errors in ${run.launched} requests` },
    {
      name: `RSS end ≤ after warm-up +${RSS_GROWTH_LIMIT * 100}%`,
      pass: end.rssMB <= rssLimit,
      detail: `${mb(end.rssMB)} MB at the end vs ${mb(afterWarmup.rssMB)} MB at ${afterWarmup.atS.toFixed(0)} s (limit ${mb(rssLimit)} MB, ${signedPercent(end.rssMB / afterWarmup.rssMB - 1)})`
    },
    {
      name: `fds end ≤ start + ${FD_GROWTH_LIMIT} (at rest)`,
      pass: run.restEnd.fds <= run.restStart.fds + FD_GROWTH_LIMIT,
      detail: `${run.restStart.fds} before, ${run.restEnd.fds} after`
    },
    {
      name: `p99 last ${windowS} s ≤ ${P99_GROWTH_LIMIT}× first ${windowS} s`,
      pass: lastP99 <= P99_GROWTH_LIMIT * firstP99,
      detail: `${ms(firstP99)} ms first, ${ms(lastP99)} ms last (${(lastP99 / firstP99).toFixed(2)}×)`
    }
  ]
  const perKind: Record<string, { count: number, errors: number, p50Ms: number, p99Ms: number, firstWindowP99Ms: number, lastWindowP99Ms: number }> = {}
  for (const kind of KINDS) {
    const entry = recorder.byKind.get(kind)
    if (entry === undefined) continue
    perKind[kind] = {
      count: entry.count,
      errors: entry.errors,
      p50Ms: quantile(entry.latencies, 0.5),
      p99Ms: quantile(entry.latencies, 0.99),
      firstWindowP99Ms: windowP99(firstWindow, kind),
      lastWindowP99Ms: windowP99(lastWindow, kind)
    }
  }
  return {
    capacity,
    targetRate: rate,
    achievedRate: completed / durationS,
    scheduled: run.launched,
    completed,
    ok,
    errors: {
      total: errorsTotal,
      byKind: Object.fromEntries([...recorder.errors].map(([key, entry]) => [key, { count: entry.count, kinds: Object.fromEntries(entry.kinds), example: entry.example }]))
    },
    latency: { p50Ms: quantile(all, 0.5), p99Ms: quantile(all, 0.99), maxMs: quantile(all, 1) },
    perKind,
    rssMB: {
      start: samples[0]!.rssMB,
      afterWarmup: afterWarmup.rssMB,
      warmupAtS: afterWarmup.atS,
      end: end.rssMB,
      max: Math.max(...samples.map((reading) => reading.rssMB)),
      restEnd: run.restEnd.rssMB
    },
    fds: {
      start: run.restStart.fds,
      end: run.restEnd.fds,
      sampledMin: Math.min(...samples.map((reading) => reading.fds)),
      sampledMax: Math.max(...samples.map((reading) => reading.fds))
    },
    exiftoolChildren: {
      min: Math.min(...running.map((reading) => reading.children)),
      max: Math.max(...running.map((reading) => reading.children)),
      names: [...new Set(samples.flatMap((reading) => reading.childNames))]
    },
    scratchFilesAtRest: run.restEnd.scratchFiles,
    p99: { windowSeconds: windowS, firstMs: firstP99, lastMs: lastP99 },
    generatorCpuPercent: run.generatorCpuPercent,
    pacingLagP99Ms: quantile(intervals.flatMap((interval) => interval.lags), 0.99),
    otherCpuPercent: mean(intervals.map((interval) => intervalFigures(interval).otherCpuPercent ?? NaN)),
    openConversationsAtEnd: traffic.open,
    verdicts
  }
}

export function intervalFigures (interval: Interval): {
  startS: number
  seconds: number
  scheduled: number
  completed: number
  errors: number
  rate: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  maxInFlight: number
  lagP99Ms: number
  generatorCpuPercent: number
  rssMB?: number
  fds?: number
  children?: number
  scratchFiles?: number
  serverCpuPercent?: number
  exiftoolCpuPercent?: number
  machineCpuPercent?: number
  /** CPU of every other process on the machine, % of one core: the machine's busy time less server, ExifTool, generator. */
  otherCpuPercent?: number
} {
  const { latencies } = interval
  const reading = interval.sample
  return {
    startS: interval.startS,
    seconds: interval.seconds,
    scheduled: interval.scheduled,
    completed: interval.completed,
    errors: interval.errors,
    rate: interval.completed / interval.seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: quantile(latencies, 1),
    maxInFlight: interval.maxInFlight,
    lagP99Ms: quantile(interval.lags, 0.99),
    generatorCpuPercent: 100 * interval.generatorCpuMs / (interval.seconds * 1000),
    ...(reading === undefined
      ? {}
      : {
          rssMB: reading.rssMB,
          fds: reading.fds,
          children: reading.children,
          scratchFiles: reading.scratchFiles,
          serverCpuPercent: reading.serverCpuPercent,
          exiftoolCpuPercent: reading.exiftoolCpuPercent,
          machineCpuPercent: reading.machineCpuPercent,
          otherCpuPercent: reading.machineBusyCorePercent - reading.serverCpuPercent - reading.exiftoolCpuPercent -
            100 * interval.generatorCpuMs / (interval.seconds * 1000)
        })
  }
}

export function minuteRows (intervals: Interval[]): Array<Record<string, number | undefined>> {
  const minutes = new Map<number, Interval[]>()
  for (const interval of intervals) {
    const minute = Math.floor(interval.startS / 60)
    minutes.set(minute, [...(minutes.get(minute) ?? []), interval])
  }
  return [...minutes].map(([minute, group]) => {
    const latencies = group.flatMap((interval) => interval.latencies)
    const seconds = group.reduce((sum, interval) => sum + interval.seconds, 0)
    const last = group.at(-1)?.sample
    const withSample = group.filter((interval) => interval.sample !== undefined)
    const meanOf = (pick: (reading: Sample) => number): number =>
      withSample.reduce((sum, interval) => sum + pick(interval.sample!), 0) / Math.max(1, withSample.length)
    return {
      minute: minute + 1,
      seconds,
      requests: group.reduce((sum, interval) => sum + interval.completed, 0),
      rate: group.reduce((sum, interval) => sum + interval.completed, 0) / seconds,
      errors: group.reduce((sum, interval) => sum + interval.errors, 0),
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: latencies.length === 0 ? undefined : quantile(latencies, 1),
      rssMB: last?.rssMB,
      fds: last?.fds,
      children: last?.children,
      serverCpuPercent: meanOf((reading) => reading.serverCpuPercent),
      exiftoolCpuPercent: meanOf((reading) => reading.exiftoolCpuPercent),
      generatorCpuPercent: 100 * group.reduce((sum, interval) => sum + interval.generatorCpuMs, 0) / (seconds * 1000),
      machineCpuPercent: meanOf((reading) => reading.machineCpuPercent),
      otherCpuPercent: mean(group.map((interval) => intervalFigures(interval).otherCpuPercent ?? NaN))
    }
  })
}

/** The mean of the finite values; NaN when there are none. */
function mean (values: number[]): number {
  const finite = values.filter(Number.isFinite)
  return finite.length === 0 ? NaN : finite.reduce((a, b) => a + b, 0) / finite.length
}
