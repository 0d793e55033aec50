import { median, spread, type Spread } from '../../test/support/stats.ts'

/** One side's measurement in one round: its headline value, and figures shown beside it (medians over rounds). */
export interface Sample {
  value: number
  extras?: Record<string, number>
}

/** A goal from the issue: `metric` is 'ratio' (against the peer), 'value', or one of the extras. */
export interface Target {
  metric: string
  op: '≥' | '≤'
  limit: number
}

export interface Side {
  name: string
  run: (seconds: number) => Promise<Sample>
  /** The side this one is compared with: the ratio is taken round by round, this side's value over the peer's. */
  peer?: string
  targets?: Target[]
}

export interface SideResult extends Spread {
  name: string
  rounds: number[]
  extras: Record<string, number>
  peer?: string
  ratio?: Spread & { rounds: number[] }
  targets: Array<Target & { actual: number, met: boolean }>
}

export interface Comparison {
  title: string
  unit: string
  note?: string
  sides: SideResult[]
}

export interface Schedule {
  rounds: number
  seconds: number
  /** Each side runs this long once before the first round, unmeasured; 0: no warm-up. */
  warmupSeconds: number
}

export function log (message: string): void {
  console.error(`bench: ${message}`)
}

/**
 * Runs the sides side by side: round 1 A, B, C; round 2 C, B, A; and so on, so that a drift of the machine (other
 * work, heat, a growing heap) reaches every side alike. Ratios are paired by round.
 */
export async function compare (title: string, unit: string, sides: Side[], schedule: Schedule, note?: string): Promise<Comparison> {
  const samples = new Map<string, Sample[]>(sides.map((side) => [side.name, []]))
  if (schedule.warmupSeconds > 0) for (const side of sides) await side.run(schedule.warmupSeconds)
  for (let round = 0; round < schedule.rounds; round++) {
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const sample = await side.run(schedule.seconds)
      samples.get(side.name)!.push(sample)
      log(`${title} · round ${round + 1}/${schedule.rounds} · ${side.name}: ${sample.value.toPrecision(4)} ${unit}`)
    }
  }
  return { title, unit, ...(note === undefined ? {} : { note }), sides: sides.map((side) => summarise(side, samples)) }
}

function summarise (side: Side, samples: Map<string, Sample[]>): SideResult {
  const own = samples.get(side.name)!
  const rounds = own.map((sample) => sample.value)
  const keys = [...new Set(own.flatMap((sample) => Object.keys(sample.extras ?? {})))]
  const extras = Object.fromEntries(keys.map((key) => [key, median(own.map((sample) => sample.extras?.[key] ?? NaN))]))
  const peer = side.peer === undefined ? undefined : samples.get(side.peer)
  if (side.peer !== undefined && peer === undefined) throw new Error(`${side.name}: no side named ${side.peer}`)
  const ratios = peer?.map((theirs, round) => rounds[round]! / theirs.value)
  const ratio = ratios === undefined ? undefined : { ...spread(ratios), rounds: ratios }
  const summary = spread(rounds)
  const actual = (metric: string): number => metric === 'ratio' ? ratio?.median ?? NaN : metric === 'value' ? summary.median : extras[metric] ?? NaN
  return {
    name: side.name,
    ...summary,
    rounds,
    extras,
    ...(side.peer === undefined ? {} : { peer: side.peer }),
    ...(ratio === undefined ? {} : { ratio }),
    targets: (side.targets ?? []).map((target) => {
      const value = actual(target.metric)
      return { ...target, actual: value, met: target.op === '≥' ? value >= target.limit : value <= target.limit }
    })
  }
}
