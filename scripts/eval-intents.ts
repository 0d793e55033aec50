/**
 * npm run eval -- <file.csv>: how well the embedded intent model recognises labelled messages.
 * The CSV needs a header row with `utterance` and `intent` columns; other columns are ignored. The model is trained
 * from the domain pack (DOMAIN_PACK, or the default pack) exactly as the service trains it at start-up.
 */
import { readFileSync } from 'node:fs'
import { parse } from 'csv-parse/sync'
import { DEFAULT_DOMAIN_PACK, loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { trainIntentModel } from '../src/chat/nlu/training.ts'
import { Understander } from '../src/chat/nlu/understand.ts'
import { timeClassification } from './classification-timing.ts'

interface Row {
  utterance: string
  intent: string
}

const file = process.argv[2]
if (file === undefined) {
  process.stderr.write('usage: npm run eval -- <file.csv>   (columns: utterance, intent)\n')
  process.exit(2)
}

const rows = readRows(file)
const domainPack = process.env['DOMAIN_PACK'] ?? DEFAULT_DOMAIN_PACK
const pack = loadDomainPack(domainPack)
const trainingStart = performance.now()
const understander = new Understander(trainIntentModel(pack), pack.understanding)
const trainingMs = performance.now() - trainingStart

const predictions = rows.map((row) => understander.understand(row.utterance).intent as string)
const microseconds = timeClassification((message) => understander.understand(message), rows.map((row) => row.utterance))

const labels = [...new Set(rows.map((row) => row.intent))].sort()
const perIntent = labels.map((intent) => {
  const expected = rows.flatMap((row, i) => row.intent === intent ? [i] : [])
  const correct = expected.filter((i) => predictions[i] === intent).length
  const predicted = predictions.filter((prediction) => prediction === intent).length
  return { intent, count: expected.length, recall: correct / expected.length, precision: predicted === 0 ? 0 : correct / predicted }
})
const correct = rows.filter((row, i) => predictions[i] === row.intent).length
const confusions = new Map<string, number>()
rows.forEach((row, i) => {
  if (predictions[i] !== row.intent) {
    const key = `${row.intent} → ${predictions[i]!}`
    confusions.set(key, (confusions.get(key) ?? 0) + 1)
  }
})

const percent = (value: number): string => `${(value * 100).toFixed(1)}%`
const out: string[] = []
out.push(`domain pack      ${domainPack} (${understander.model.intents.length} intents, trained in ${trainingMs.toFixed(0)} ms)`)
out.push(`evaluated        ${file}: ${rows.length} messages, ${labels.length} intents`)
out.push(`accuracy         ${percent(correct / rows.length)}`)
out.push(`macro recall     ${percent(perIntent.reduce((sum, row) => sum + row.recall, 0) / perIntent.length)}`)
out.push(`µs per message   ${microseconds.median.toFixed(1)} median, ${microseconds.p99.toFixed(1)} p99`)
out.push('')
out.push(`${'intent'.padEnd(26)} ${'n'.padStart(5)} ${'recall'.padStart(7)} ${'precision'.padStart(9)}`)
for (const row of perIntent) {
  out.push(`${row.intent.padEnd(26)} ${String(row.count).padStart(5)} ${percent(row.recall).padStart(7)} ${percent(row.precision).padStart(9)}`)
}
out.push('')
out.push('top confusions (expected → predicted)')
for (const [pair, count] of [...confusions].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
  out.push(`${String(count).padStart(5)}  ${pair}`)
}
process.stdout.write(`${out.join('\n')}\n`)

function readRows (path: string): Row[] {
  const records = parse(readFileSync(path), { columns: true, skip_empty_lines: true, bom: true, trim: true }) as Array<Record<string, string>>
  const first = records[0]
  if (first === undefined || !('utterance' in first) || !('intent' in first)) {
    process.stderr.write(`${path}: needs a header row with the columns utterance and intent\n`)
    process.exit(2)
  }
  return records.map((record) => ({ utterance: record['utterance'] ?? '', intent: record['intent'] ?? '' }))
}
