import { parseArgs } from 'node:util'

export const PARTS = ['metadata', 'chat', 'classification', 'memory', 'startup', 'provenance'] as const
export type PartName = typeof PARTS[number]

export interface Options {
  parts: PartName[]
  quick: boolean
  /** Rounds of each comparison; sides alternate order from one round to the next. */
  rounds: number
  /** Seconds of load per side per round (HTTP and in-process readers alike). */
  seconds: number
  /** Load before the first round, per side, not measured. */
  warmupSeconds: number
  /** Memory runs: seconds of load, then of idle before the "after" reading. */
  memorySeconds: number
  idleSeconds: number
  /** A folder of the user's images, added to the metadata corpus. */
  images: string | undefined
  /** Rewrite BENCHMARKS.md even from a quick or partial run. */
  markdown: boolean
}

const USAGE = `npm run bench [-- [part…] [--quick] [--rounds N] [--seconds S] [--images DIR] [--markdown]]
  parts: ${PARTS.join(', ')} (all by default)
  env: BENCH_QUICK=1, BENCH_ROUNDS, BENCH_SECONDS, BENCH_IMAGES`

/** Flags first, then the BENCH_* environment, then the defaults (full: about 12 minutes on 2 cores; quick: 3–4). */
export function readOptions (argv = process.argv.slice(2)): Options {
  const env = process.env
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: env['BENCH_QUICK'] === '1' },
      rounds: { type: 'string', default: env['BENCH_ROUNDS'] },
      seconds: { type: 'string', default: env['BENCH_SECONDS'] },
      images: { type: 'string', default: env['BENCH_IMAGES'] },
      markdown: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false }
    }
  })
  if (values.help) {
    console.log(USAGE)
    process.exit(0)
  }
  const unknown = positionals.filter((part) => !(PARTS as readonly string[]).includes(part))
  if (unknown.length > 0) throw new Error(`unknown part ${unknown.join(', ')}\n${USAGE}`)
  const quick = values.quick
  const rounds = number('rounds', values.rounds, quick ? 2 : 3, 1, 50)
  const seconds = number('seconds', values.seconds, quick ? 1 : 3, 0.5, 120)
  return {
    parts: positionals.length === 0 ? [...PARTS] : PARTS.filter((part) => positionals.includes(part)),
    quick,
    rounds,
    seconds,
    warmupSeconds: quick ? 0.5 : Math.min(1, seconds),
    memorySeconds: quick ? 2 : 2 * seconds,
    idleSeconds: quick ? 2 : 10,
    images: values.images,
    markdown: values.markdown
  }
}

function number (name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`--${name} must be a number from ${min} to ${max}`)
  return value
}
