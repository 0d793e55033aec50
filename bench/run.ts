/**
 * `npm run bench [-- part… --quick --rounds N --seconds S --images DIR --markdown]`: runs the parts, prints each as
 * Markdown, writes bench/results/<date-time>.json and .svg, and after a full run BENCHMARKS.md. Exits non-zero when a
 * request failed or a part could not run; a missed target is reported, not an error.
 */
import chat from './chat.bench.ts'
import classification from './classification.bench.ts'
import memory from './memory.bench.ts'
import metadata from './metadata.bench.ts'
import provenance from './provenance.bench.ts'
import startup from './startup.bench.ts'
import { failures } from './support/load.ts'
import { describeMachine } from './support/machine.ts'
import { PARTS, readOptions, type Options, type PartName } from './support/options.ts'
import { printPart, writeReports, type PartResult, type RunResult } from './support/report.ts'
import { log } from './support/rounds.ts'

const RUNNERS: Record<PartName, (options: Options) => Promise<PartResult>> = { metadata, chat, classification, memory, startup, provenance }

const options = readOptions()
const started = new Date()
const variables = Object.entries(process.env).filter(([name]) => name.startsWith('BENCH_')).map(([name, value]) => `${name}=${value} `)
const args = process.argv.slice(2)
const command = `${variables.join('')}npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`
// Whatever hangs, the bench ends (and what it started with it: see test/support/processes.ts).
setTimeout(() => { log('over its time budget; stopping'); process.exit(1) }, (options.quick ? 15 : 45) * 60_000).unref()

const run: RunResult = { command, startedAt: started.toISOString(), minutes: 0, options, machine: await describeMachine(), parts: {}, failures }
log(`${run.machine.cpu}, ${run.machine.cores} cores, Node ${run.machine.node}, ExifTool ${run.machine.exiftool}; parts: ${options.parts.join(', ')}`)
for (const name of options.parts) {
  const partStarted = performance.now()
  try {
    run.parts[name] = await RUNNERS[name](options)
    printPart(run.parts[name])
  } catch (error) {
    failures.push(`${name}: ${(error as Error).stack ?? String(error)}`)
  }
  log(`${name}: ${((performance.now() - partStarted) / 1000).toFixed(0)} s`)
}
run.minutes = (Date.now() - started.getTime()) / 60_000
const complete = options.parts.length === PARTS.length && !options.quick
const path = await writeReports(run, complete || options.markdown)
log(`results in ${path}${complete || options.markdown ? ', BENCHMARKS.md rewritten' : ''}; ${run.minutes.toFixed(1)} minutes`)
for (const failure of failures) log(`FAILED ${failure}`)
process.exitCode = failures.length > 0 ? 1 : 0
