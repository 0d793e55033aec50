/** What the soak prints: a row per interval as it goes, then the tables per minute and per kind, errors, summary, verdicts. */
import { formatRow, mb, ms, percent, table } from './format.ts'
import type { SoakRun } from './phases.ts'
import type { Interval } from './recorder.ts'
import { KINDS, OTHER_CPU_WARNING_PERCENT, TARGET_FRACTION, WEIGHTS } from './settings.ts'
import { intervalFigures, minuteRows, type Summary } from './summary.ts'
import type { Traffic } from './traffic.ts'

const INTERVAL_COLUMNS = ['t (s)', 'req/s', 'errors', 'p50', 'p99', 'max', 'in-flight', 'lag p99', 'RSS MB', 'fds', 'children', 'scratch', 'server %', 'exiftool %', 'gen %', 'other %']

function intervalCells (interval: Interval): string[] {
  const figures = intervalFigures(interval)
  return [
    `${interval.startS}–${interval.startS + interval.seconds}`,
    figures.rate.toFixed(1),
    String(interval.errors),
    ms(figures.p50Ms),
    ms(figures.p99Ms),
    ms(figures.maxMs),
    String(interval.maxInFlight),
    ms(figures.lagP99Ms),
    figures.rssMB === undefined ? '' : mb(figures.rssMB),
    String(figures.fds ?? ''),
    String(figures.children ?? ''),
    String(figures.scratchFiles ?? ''),
    percent(figures.serverCpuPercent),
    percent(figures.exiftoolCpuPercent),
    percent(figures.generatorCpuPercent),
    percent(figures.otherCpuPercent)
  ]
}

const INTERVAL_WIDTHS = [9, 7, 6, 7, 7, 8, 9, 7, 7, 5, 8, 7, 8, 10, 5, 9]

export function printIntervalHeader (): void {
  console.log(formatRow(INTERVAL_COLUMNS, INTERVAL_WIDTHS))
}

export function printInterval (interval: Interval): void {
  console.log(formatRow(intervalCells(interval), INTERVAL_WIDTHS))
}

export function printReport (run: SoakRun, summary: Summary, traffic: Traffic): void {
  const out: string[] = ['', 'Per minute (latency in ms; RSS, fds and children at the minute\'s last sample; CPU in % of one core, other: every other process on the machine)']
  out.push(...table(
    ['minute', 'requests', 'req/s', 'errors', 'p50', 'p99', 'max', 'RSS MB', 'fds', 'children', 'server %', 'exiftool %', 'gen %', 'other %'],
    minuteRows(run.recorder.intervals).map((row) => [
      `${row['minute']}${row['seconds'] === 60 ? '' : ` (${row['seconds']} s)`}`,
      String(row['requests']), (row['rate'] ?? NaN).toFixed(1), String(row['errors']),
      ms(row['p50Ms'] ?? NaN), ms(row['p99Ms'] ?? NaN), ms(row['maxMs'] ?? NaN),
      mb(row['rssMB'] ?? NaN), String(row['fds'] ?? ''), String(row['children'] ?? ''),
      percent(row['serverCpuPercent']), percent(row['exiftoolCpuPercent']), percent(row['generatorCpuPercent']), percent(row['otherCpuPercent'])
    ])
  ))

  out.push('', `Per request kind (latency in ms; first/last: the p99 of the first and last ${summary.p99.windowSeconds} s)`)
  out.push(...table(
    ['kind', 'weight', 'requests', 'errors', 'p50', 'p99', 'p99 first', 'p99 last'],
    KINDS.map((kind) => {
      const entry = summary.perKind[kind]
      return [kind, String(WEIGHTS[kind]), String(entry?.count ?? 0), String(entry?.errors ?? 0),
        ms(entry?.p50Ms ?? NaN), ms(entry?.p99Ms ?? NaN), ms(entry?.firstWindowP99Ms ?? NaN), ms(entry?.lastWindowP99Ms ?? NaN)]
    })
  ))

  const errors = Object.entries(summary.errors.byKind)
  out.push('', errors.length === 0 ? 'Errors: none' : 'Errors (status and code, or network error; by request kind; first example)')
  if (errors.length > 0) {
    out.push(...table(['error', 'count', 'kinds', 'example'], errors.map(([key, entry]) => [
      key, String(entry.count), Object.entries(entry.kinds).map(([kind, count]) => `${kind} ${count}`).join(', '), entry.example.slice(0, 100)
    ])))
  }

  const stats = traffic.stats
  const verdictLines = summary.verdicts.map((verdict) => `  ${verdict.pass ? 'PASS' : 'FAIL'}  ${verdict.name}: ${verdict.detail}`)
  out.push(
    '',
    'Summary',
    `  capacity ${summary.capacity.toFixed(1)} req/s; target ${summary.targetRate.toFixed(1)} req/s (${(TARGET_FRACTION * 100).toFixed(0)}%), achieved ${summary.achievedRate.toFixed(1)} req/s over ${run.durationS} s`,
    `  requests: ${summary.scheduled} scheduled, ${summary.completed} completed, ${summary.ok} valid, ${summary.errors.total} errors` +
      (errors.length === 0 ? '' : ` (${errors.map(([key, entry]) => `${key}: ${entry.count}`).join(', ')})`),
    `  latency: p50 ${ms(summary.latency.p50Ms)} ms, p99 ${ms(summary.latency.p99Ms)} ms, max ${ms(summary.latency.maxMs)} ms; ` +
      `p99 first ${summary.p99.windowSeconds} s ${ms(summary.p99.firstMs)} ms, last ${summary.p99.windowSeconds} s ${ms(summary.p99.lastMs)} ms`,
    `  RSS: start ${mb(summary.rssMB.start)} MB, after warm-up (${summary.rssMB.warmupAtS.toFixed(0)} s) ${mb(summary.rssMB.afterWarmup)} MB, ` +
      `end ${mb(summary.rssMB.end)} MB, max ${mb(summary.rssMB.max)} MB; at rest after ${mb(summary.rssMB.restEnd)} MB`,
    `  fds at rest: start ${summary.fds.start}, end ${summary.fds.end} (under load ${summary.fds.sampledMin}–${summary.fds.sampledMax}, the generator's connections included)`,
    `  server children (ExifTool pool): ${summary.exiftoolChildren.min}–${summary.exiftoolChildren.max} alive (${summary.exiftoolChildren.names.join(', ')}); ` +
      `upload files left in scratch at rest: ${summary.scratchFilesAtRest}`,
    `  conversations: ${stats.started} started, ${stats.finished} finished, ${stats.dropped} dropped after an error, ${summary.openConversationsAtEnd} open at the end (max ${stats.maxOpen}); ` +
      `kinds turned: new→continue ${stats.newAsContinue}, continue→new ${stats.continueAsNew}, transcript→new ${stats.transcriptAsNew}`,
    `  load generator (this process, node:http): ${summary.generatorCpuPercent.toFixed(1)}% of one core on average; pacing lag p99 ${ms(summary.pacingLagP99Ms)} ms`,
    `  other processes on the machine: ${percent(summary.otherCpuPercent)}% of one core on average` +
      (summary.otherCpuPercent > OTHER_CPU_WARNING_PERCENT ? ' — WARNING: the machine was not quiet; latency and capacity figures are skewed' : ''),
    '',
    'Verdicts',
    ...verdictLines
  )
  console.log(out.join('\n'))
}
