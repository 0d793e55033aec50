import { mkdir, writeFile } from 'node:fs/promises'
import type { Machine } from './machine.ts'
import type { Options, PartName } from './options.ts'
import type { Comparison, SideResult, Target } from './rounds.ts'
import { median } from '../../test/support/stats.ts'

export interface PartResult {
  title: string
  /** Markdown paragraphs: what is measured, how, and what to make of it. */
  notes: string[]
  comparisons: Comparison[]
}

export interface RunResult {
  /** How the run was asked for: `npm run bench` and its arguments, with any BENCH_* variables set. */
  command: string
  startedAt: string
  minutes: number
  options: Options
  machine: Machine
  parts: Partial<Record<PartName, PartResult>>
  /** Requests that failed, and parts that could not run: either makes the bench exit non-zero. */
  failures: string[]
}

const EXTRAS: Record<string, string> = {
  p50Ms: 'p50 ms',
  p90Ms: 'p90 ms',
  p99Ms: 'p99 ms',
  p99Us: 'p99 µs',
  peakMB: 'Node peak RSS MB',
  idleMB: 'idle RSS MB',
  afterMB: 'RSS after MB',
  afterRatio: 'after ÷ idle',
  exiftoolMB: 'ExifTool RSS MB',
  rps: 'req/s',
  cpu: 'server CPU',
  loadgen: 'autocannon CPU'
}

function num (value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value)) return '—'
  const size = Math.abs(value)
  return value.toFixed(size >= 100 ? 0 : size >= 10 ? 1 : size >= 1 ? 2 : 3)
}

function cell (key: string, value: number | undefined): string {
  return (key === 'cpu' || key === 'loadgen') && value !== undefined && Number.isFinite(value) ? `${value.toFixed(0)}%` : num(value)
}

function range (spread: { median: number, min: number, max: number }): string {
  return `${num(spread.median)} (${num(spread.min)}–${num(spread.max)})`
}

/** Ratios to two decimals (three below 0.1). */
function times (value: number): string {
  return `${value.toFixed(value < 0.1 ? 3 : 2)}×`
}

function targetText (target: Target & { met: boolean }, unit: string): string {
  const limit = target.metric === 'ratio' ? `${target.limit}×` : target.metric === 'value' ? `${target.limit} ${unit}` : String(target.limit)
  const what = target.metric === 'ratio' || target.metric === 'value' ? '' : `${EXTRAS[target.metric] ?? target.metric} `
  return `${what}${target.op} ${limit} ${target.met ? 'met' : '**missed**'}`
}

/** One comparison as a Markdown table: each side's median and range over rounds, its extras, its ratio and targets. */
export function comparisonTable (comparison: Comparison): string {
  const { sides, unit } = comparison
  const extras = Object.keys(EXTRAS).filter((key) => sides.some((side) => key in side.extras))
  const ratios = sides.some((side) => side.ratio !== undefined)
  const targets = sides.some((side) => side.targets.length > 0)
  const header = ['', `${unit}, median (min–max)`, ...extras.map((key) => EXTRAS[key]!), ...ratios ? ['ratio, median (min–max)'] : [], ...targets ? ['target'] : []]
  const row = (side: SideResult): string[] => [
    side.name,
    range(side),
    ...extras.map((key) => cell(key, side.extras[key])),
    ...ratios ? [side.ratio === undefined ? '' : `${times(side.ratio.median)} (${times(side.ratio.min)}–${times(side.ratio.max)}) vs ${side.peer}`] : [],
    ...targets ? [side.targets.map((target) => targetText(target, unit)).join('; ')] : []
  ]
  const line = (cells: string[]): string => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...sides.map((side) => line(row(side)))].join('\n')
}

function partSection (part: PartResult): string {
  const body = part.comparisons.map((comparison) =>
    [`### ${comparison.title}`, ...comparison.note === undefined ? [] : [comparison.note], comparisonTable(comparison)].join('\n\n'))
  return [`## ${part.title}`, ...part.notes, ...body].join('\n\n')
}

function sidesOf (run: RunResult): Array<{ comparison: Comparison, side: SideResult }> {
  return Object.values(run.parts).flatMap((part) => part.comparisons.flatMap((comparison) => comparison.sides.map((side) => ({ comparison, side }))))
}

/** What autocannon (in the bench process, beside the server on the same cores) cost, per part, measured. */
function loadGeneratorText (run: RunResult): string {
  const lines = Object.entries(run.parts).flatMap(([name, part]) => {
    const sides = part.comparisons.flatMap((comparison) => comparison.sides).filter((side) => 'loadgen' in side.extras)
    if (sides.length === 0) return []
    const loadgen = sides.map((side) => side.extras['loadgen']!)
    const server = sides.map((side) => side.extras['cpu']!)
    const percent = (value: number): string => cell('cpu', value)
    return [`| ${name} | ${percent(median(loadgen))} (${percent(Math.min(...loadgen))}–${percent(Math.max(...loadgen))}) | ${percent(median(server))} |`]
  })
  if (lines.length === 0) return ''
  return [
    '## What the load generator costs',
    `autocannon runs in the bench process, on the same ${run.machine.cores} cores as the server (${run.machine.cores * 100}% in all). Its CPU was measured ` +
      'over every HTTP run (the bench process\'s own CPU time; /proc for the server and its ExifTool children), in % of one core, ' +
      'medians over the runs of each part. What it uses the server cannot: the in-process peers (the raw pool, exifr) have no load generator.',
    '| part | autocannon CPU, median (min–max) | server CPU, median |\n| --- | --- | --- |\n' + lines.join('\n')
  ].join('\n\n')
}

function escapeXml (text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** Horizontal bars of every ratio that has a target: median, min–max whisker, and the target as a line. */
export function ratioChart (run: RunResult): string {
  const bars = sidesOf(run).flatMap(({ comparison, side }) => {
    const target = side.targets.find((candidate) => candidate.metric === 'ratio')
    return side.ratio === undefined || target === undefined ? [] : [{ label: `${comparison.title}: ${side.name} ÷ ${side.peer}`, ratio: side.ratio, target }]
  })
  const scale = Math.min(3, Math.ceil(Math.max(1.25, ...bars.map((bar) => Math.max(bar.ratio.max, bar.target.limit))) * 4) / 4)
  // About 6.5 px per character of 12 px sans-serif.
  const [left, width, rowHeight, top] = [20 + 6.5 * Math.max(40, ...bars.map((bar) => bar.label.length)), 360, 24, 46]
  const x = (value: number): number => left + Math.min(Math.max(value, 0), scale) / scale * width
  const height = top + bars.length * rowHeight + 30
  const ticks = Array.from({ length: Math.round(scale * 4) + 1 }, (_, index) => index / 4)
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 110}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="10" y="20" font-size="14" font-weight="bold">Ratios against their peers (median, min–max over rounds); | = target — ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC</text>`,
    ...ticks.map((tick) => `<line x1="${x(tick)}" y1="${top - 8}" x2="${x(tick)}" y2="${height - 24}" stroke="${tick === 1 ? '#999' : '#e4e4e4'}"/>` +
      (tick * 2 === Math.round(tick * 2) ? `<text x="${x(tick)}" y="${height - 10}" text-anchor="middle" fill="#555">${tick}×</text>` : '')),
    ...bars.flatMap((bar, index) => {
      const y = top + index * rowHeight
      const colour = bar.target.met ? '#2e7d32' : '#c62828'
      return [
        `<text x="${left - 8}" y="${y + 12}" text-anchor="end">${escapeXml(bar.label)}</text>`,
        `<rect x="${left}" y="${y + 2}" width="${x(bar.ratio.median) - left}" height="14" fill="${colour}" opacity="0.8"/>`,
        `<line x1="${x(bar.ratio.min)}" y1="${y + 9}" x2="${x(bar.ratio.max)}" y2="${y + 9}" stroke="#222"/>`,
        `<line x1="${x(bar.target.limit)}" y1="${y - 1}" x2="${x(bar.target.limit)}" y2="${y + 19}" stroke="#000" stroke-width="2.5"/>`,
        `<text x="${left + width + 6}" y="${y + 13}">${times(bar.ratio.median)} ${bar.target.op} ${bar.target.limit}</text>`
      ]
    }),
    '</svg>'
  ]
  return svg.join('\n') + '\n'
}

function benchmarksMarkdown (run: RunResult): string {
  const { machine, options } = run
  const checks = sidesOf(run).flatMap(({ comparison, side }) => side.targets.map((target) =>
    `| ${comparison.title}: ${side.name} | ${targetText(target, comparison.unit).replace(/ (met|\*\*missed\*\*)$/, '')} | ` +
    `${target.metric === 'ratio' ? times(target.actual) : `${num(target.actual)}${target.metric === 'value' ? ` ${comparison.unit}` : ''}`} | ${target.met ? 'met' : '**missed**'} |`))
  return [
    '# Benchmarks',
    `Generated by \`npm run bench\` (bench/run.ts) on ${run.startedAt.slice(0, 16).replace('T', ' ')} UTC in ${num(run.minutes)} minutes, ` +
      `${options.rounds} rounds of ${options.seconds} s per side${options.quick ? ' (**--quick**: a smoke run, not figures to quote)' : ''}, ` +
      `with \`${run.command}\`. Do not edit by hand: run it again. A run writes every figure to bench/results/ (not kept in ` +
      'the repository); this file keeps the latest full run. The bench is bench/*.bench.ts; the harness it shares with the ' +
      'tests and the scripts (servers, child processes, /proc readers, images) is test/support/.',
    `| machine | |\n| --- | --- |\n| CPU | ${machine.cpu}, ${machine.cores} cores |\n| RAM | ${machine.ramGB} GB |\n| OS | ${machine.os} |\n` +
      `| Node | ${machine.node} |\n| ExifTool | ${machine.exiftool} (exiftool-vendored ${machine.exiftoolVendored}) |\n| autocannon | ${machine.autocannon} |\n` +
      `| code | ${machine.commit}${machine.uncommitted > 0 ? ` with ${machine.uncommitted} uncommitted files (work in progress beside the run)` : ''} |\n` +
      `| load average at start | ${num(machine.loadAverage)} |`,
    '## How to read these tables',
    'The service runs as `npm start` runs it (`node src/server.ts`, its log lines to /dev/null), with its production defaults ' +
      'but for the API key and no rate limits; the peers run in child processes of their own. Load comes from autocannon in the ' +
      'bench process; CPU and RSS of the measured process and its children are sampled from /proc.',
    'Each comparison runs its sides side by side, interleaved: round 1 runs A then B, round 2 B then A, and so on, so a ' +
      'drift of the machine reaches both. A side\'s figure is the median over rounds, with the lowest and highest round in brackets; ' +
      'a ratio is this side over its peer, taken round by round (median and range of those). Latencies and CPU are medians over the rounds. ' +
      'CPU is in % of one core, for the measured process and its children (the ExifTool pool). Targets are the issue\'s; a miss is reported, ' +
      'not an error (the bench exits non-zero only when a request fails).',
    '## Targets',
    '| what | target | measured | |\n| --- | --- | --- | --- |\n' + checks.join('\n'),
    loadGeneratorText(run),
    ...Object.values(run.parts).map(partSection),
    '## Running it',
    '`npm run bench` runs everything (8–10 minutes on 2 cores) and rewrites this file; `npm run bench -- --quick` is a ' +
      'smoke run of 2–3 minutes (results in bench/results/, this file untouched). Parts: `npm run bench:metadata`, `bench:chat`, ' +
      '`bench:memory`, `bench:startup`, `bench:provenance`, or `npm run bench -- classification`. Flags (or BENCH_* variables): ' +
      '`--rounds N`, `--seconds S` (per side per round), `--images DIR` (add your own images to the metadata corpus), `--markdown` ' +
      '(rewrite this file from a partial or quick run).'
  ].filter((block) => block !== '').join('\n\n') + '\n'
}

/**
 * bench/results/<date-time>.json and .svg (a chart of the ratios against their targets), which the repository does not
 * keep; BENCHMARKS.md too when `markdown`. Returns the JSON's path.
 */
export async function writeReports (run: RunResult, markdown: boolean): Promise<string> {
  const stamp = run.startedAt.replace(/[:.]/g, '-')
  await mkdir(new URL('../results/', import.meta.url), { recursive: true })
  const json = new URL(`../results/${stamp}.json`, import.meta.url)
  await writeFile(json, JSON.stringify(run, (_key, value: unknown) => typeof value === 'number' && !Number.isInteger(value) ? Number(value.toPrecision(5)) : value, 2) + '\n')
  await writeFile(new URL(`../results/${stamp}.svg`, import.meta.url), ratioChart(run))
  if (markdown) await writeFile(new URL('../../BENCHMARKS.md', import.meta.url), benchmarksMarkdown(run))
  return json.pathname
}

export function printPart (part: PartResult): void {
  console.log(`\n## ${part.title}\n\n${part.comparisons.map((comparison) => `### ${comparison.title}\n\n${comparisonTable(comparison)}`).join('\n\n')}`)
}
