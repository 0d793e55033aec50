/**
 * npm run eval -- <file.csv>…: how well the assistant understands labelled messages and answers held-out questions
 * (docs/chat.md, "Evaluation"). A CSV with `utterance` and `intent` columns is labelled messages; one with `question`
 * and `answer` columns (an answer id) is held-out questions — without any on the command line, test/fixtures'
 * answers-*.csv are. Other columns are ignored. The model is trained from the domain pack (DOMAIN_PACK, or the
 * default pack) exactly as the service trains it.
 *
 *   --spread N   also train N other seed sets and report the spread of the figures (slow: one training each)
 */
import { readdirSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { DEFAULT_DOMAIN_PACK, loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { isQuestionFile, readLabelledQuestions, scoreAnswers } from '../src/chat/evaluation/answers.ts'
import { predictionAt, readLabelledMessages, scoreIntents, type LabelledMessage } from '../src/chat/evaluation/intents.ts'
import { evaluationChat } from '../src/chat/evaluation/stories.ts'
import { loadEnglishWords } from '../src/chat/nlu/english.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../src/chat/nlu/model-cache.ts'
import { DEFAULT_SEEDS, trainUnderstanding } from '../src/chat/nlu/training.ts'
import { Understander } from '../src/chat/nlu/understand.ts'
import { timeClassification } from '../test/support/classification-timing.ts'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { spread: { type: 'string' } } })
if (positionals.length === 0) {
  process.stderr.write('usage: npm run eval -- <file.csv>… [--spread N]   (columns: utterance, intent; or question, answer)\n')
  process.exit(2)
}
const questionFiles = positionals.filter((file) => isQuestionFile(file))
const files = positionals.filter((file) => !questionFiles.includes(file))
if (questionFiles.length === 0) {
  const fixtures = new URL('../test/fixtures/', import.meta.url)
  questionFiles.push(...readdirSync(fixtures).filter((file) => /^answers-.*\.csv$/.test(file)).sort().map((file) => new URL(file, fixtures).pathname))
}

const messages: LabelledMessage[] = files.flatMap((file) => readLabelledMessages(file))
const domainPack = process.env['DOMAIN_PACK'] ?? DEFAULT_DOMAIN_PACK
const pack = loadDomainPack(domainPack)
const trainingStart = performance.now()
const { trained, source } = trainedForPack(pack, DEFAULT_MODEL_CACHE)
const understander = new Understander(trained, pack.understanding)
const trainingMs = performance.now() - trainingStart

const today = new Date().toISOString().slice(0, 10)
const understandings = messages.map((message) => understander.understand(message.utterance, today))
const scores = scoreIntents(messages, understandings.map((understanding) => understanding.intent))
const timing = timeClassification((message) => understander.understand(message, today), messages.map((message) => message.utterance))
const chat = evaluationChat(pack, trained)
const readTiming = timeClassification((message) => chat.read(message, today), messages.map((message) => message.utterance))

const percent = (value: number): string => Number.isNaN(value) ? '—' : `${(value * 100).toFixed(1)}%`
const out: string[] = []
out.push(`domain pack        ${domainPack} (${understander.model.classes.length} classes, seeds ${DEFAULT_SEEDS.join(',')}, ${source === 'cache' ? 'read from the model cache' : 'trained'} in ${trainingMs.toFixed(0)} ms)`)
out.push(`evaluated          ${files.join(', ')}: ${messages.length} messages`)
out.push(`support intents    accuracy ${percent(scores.support.accuracy)}, macro recall ${percent(scores.support.macroRecall)} (${scores.support.count} messages)`)
out.push(`out of scope       recall ${percent(scores.outOfScope.recall)} (${scores.outOfScope.count} messages)`)
out.push(`all labels         accuracy ${percent(scores.all.accuracy)}`)
out.push(`µs per message     ${timing.median.toFixed(1)} median, ${timing.p99.toFixed(1)} p99 (understanding: entities, model, rejector)`)
out.push(`                   ${readTiming.median.toFixed(1)} median, ${readTiming.p99.toFixed(1)} p99 (with the answer selector, slots and clauses)`)
for (const file of questionFiles) {
  const questions = readLabelledQuestions(file)
  const scores = scoreAnswers(questions, chat, pack, today)
  out.push('', `answer selection   ${file}: ${scores.count} questions, each the first message of a conversation`)
  out.push(`  answered right   ${percent(scores.accuracy)} (no answer given: ${percent(scores.unanswered)})`)
  out.push(`  within request   ${percent(scores.withinRequest)} (the selector among the answers of the expected answer's requests)`)
  if (scores.unknown.length > 0) out.push(`  unknown ids      ${scores.unknown.join(', ')} (the pack has no such answer)`)
  for (const { expected, given, count } of scores.confusions.slice(0, 10)) out.push(`  ${String(count).padStart(4)}  ${expected} → ${given}`)
}

const threshold = pack.understanding.rejection_threshold
out.push('', 'out-of-scope trade-off (understanding.rejection_threshold; * the pack\'s)')
out.push(`${'threshold'.padStart(10)} ${'support acc.'.padStart(13)} ${'macro recall'.padStart(13)} ${'oos recall'.padStart(11)}`)
for (const point of [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, threshold].filter((value, i, all) => all.indexOf(value) === i).sort()) {
  const at = scoreIntents(messages, understandings.map((understanding) => predictionAt(understanding, point, pack.understanding.confidence_threshold)))
  out.push(`${`${point === threshold ? '*' : ''}${point.toFixed(2)}`.padStart(10)} ${percent(at.support.accuracy).padStart(13)} ${percent(at.support.macroRecall).padStart(13)} ${percent(at.outOfScope.recall).padStart(11)}`)
}

out.push('', `${'intent'.padEnd(26)} ${'n'.padStart(5)} ${'recall'.padStart(7)} ${'precision'.padStart(9)}`)
for (const row of scores.perIntent) {
  out.push(`${row.intent.padEnd(26)} ${String(row.count).padStart(5)} ${percent(row.recall).padStart(7)} ${percent(row.precision).padStart(9)}`)
}
out.push('', 'top confusions (expected → predicted)')
for (const { expected, predicted, count } of scores.confusions.slice(0, 15)) out.push(`${String(count).padStart(5)}  ${expected} → ${predicted}`)

if (values.spread !== undefined) {
  const english = loadEnglishWords()
  const runs = Number(values.spread)
  out.push('', `spread over seeds (${runs} trainings each)`)
  for (const [name, seedsOf] of [['one seed', (run: number) => [run + 11]], [`${DEFAULT_SEEDS.length} seeds averaged`, (run: number) => DEFAULT_SEEDS.map((seed) => seed + 10 * (run + 1))]] as const) {
    const figures: Array<ReturnType<typeof scoreIntents>> = []
    for (let run = 0; run < runs; run++) {
      const other = new Understander(trainUnderstanding(pack, { isEnglishWord: english.has, seeds: seedsOf(run) }), pack.understanding)
      figures.push(scoreIntents(messages, messages.map((message) => other.understand(message.utterance, today).intent)))
    }
    const range = (pick: (scores: ReturnType<typeof scoreIntents>) => number): string => {
      const all = figures.map(pick)
      return `${percent(Math.min(...all))}–${percent(Math.max(...all))} (spread ${((Math.max(...all) - Math.min(...all)) * 100).toFixed(1)} points)`
    }
    out.push(`  ${name.padEnd(18)} support accuracy ${range((s) => s.support.accuracy)}; macro recall ${range((s) => s.support.macroRecall)}; oos recall ${range((s) => s.outOfScope.recall)}`)
  }
}
process.stdout.write(`${out.join('\n')}\n`)
