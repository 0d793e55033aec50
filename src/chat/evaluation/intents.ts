import { readFileSync } from 'node:fs'
import { parse } from 'csv-parse/sync'
import { isSupportIntent, OUT_OF_SCOPE } from '../intents.ts'
import type { Understanding } from '../nlu/understand.ts'

/** One labelled message: `npm run eval` reads them from CSV files with `utterance` and `intent` columns. */
export interface LabelledMessage {
  utterance: string
  intent: string
}

export function readLabelledMessages (path: string): LabelledMessage[] {
  const records = parse(readFileSync(path), { columns: true, skip_empty_lines: true, bom: true, trim: true }) as Array<Record<string, string>>
  const first = records[0]
  if (first === undefined || !('utterance' in first) || !('intent' in first)) {
    throw new Error(`${path}: needs a header row with the columns utterance and intent`)
  }
  return records.map((record) => ({ utterance: record['utterance'] ?? '', intent: record['intent'] ?? '' }))
}

export interface IntentScores {
  /** Messages labelled with a support intent, and the share answered with it. */
  support: { count: number, accuracy: number, macroRecall: number }
  /** Messages labelled out_of_scope, and the share not answered as a support request. */
  outOfScope: { count: number, recall: number }
  /** Every message, every label. */
  all: { count: number, accuracy: number }
  perIntent: Array<{ intent: string, count: number, recall: number, precision: number }>
  confusions: Array<{ expected: string, predicted: string, count: number }>
}

/** The measures: accuracy and macro recall over the support intents, and out-of-scope recall. */
export function scoreIntents (messages: readonly LabelledMessage[], predictions: readonly string[]): IntentScores {
  const labels = [...new Set(messages.map((message) => message.intent))].sort()
  const perIntent = labels.map((intent) => {
    const expected = messages.flatMap((message, i) => message.intent === intent ? [i] : [])
    const correct = expected.filter((i) => predictions[i] === intent).length
    const predicted = predictions.filter((prediction) => prediction === intent).length
    return { intent, count: expected.length, recall: correct / expected.length, precision: predicted === 0 ? 0 : correct / predicted }
  })
  const support = messages.flatMap((message, i) => isSupportIntent(message.intent) ? [i] : [])
  const supportRecalls = perIntent.filter((row) => isSupportIntent(row.intent))
  const outOfScope = messages.flatMap((message, i) => message.intent === OUT_OF_SCOPE ? [i] : [])
  const confusions = new Map<string, number>()
  messages.forEach((message, i) => {
    if (predictions[i] !== message.intent) confusions.set(`${message.intent}\t${predictions[i]!}`, (confusions.get(`${message.intent}\t${predictions[i]!}`) ?? 0) + 1)
  })
  return {
    support: {
      count: support.length,
      accuracy: share(support.filter((i) => predictions[i] === messages[i]!.intent).length, support.length),
      macroRecall: share(supportRecalls.reduce((sum, row) => sum + row.recall, 0), supportRecalls.length)
    },
    outOfScope: { count: outOfScope.length, recall: share(outOfScope.filter((i) => !isSupportIntent(predictions[i]!)).length, outOfScope.length) },
    all: { count: messages.length, accuracy: share(messages.filter((message, i) => predictions[i] === message.intent).length, messages.length) },
    perIntent,
    confusions: [...confusions].map(([pair, count]) => {
      const [expected, predicted] = pair.split('\t') as [string, string]
      return { expected, predicted, count }
    }).sort((a, b) => b.count - a.count)
  }
}

/**
 * The intent answered if the rejector's operating point were `threshold` (understanding.rejection_threshold): how
 * `npm run eval` draws the trade-off between support accuracy and out-of-scope recall.
 */
export function predictionAt (understanding: Understanding, threshold: number, confidenceFloor: number): string {
  const best = understanding.candidates[0]
  if (best === undefined || best.intent === OUT_OF_SCOPE || understanding.inScope < threshold || best.probability < confidenceFloor) return OUT_OF_SCOPE
  return best.intent
}

function share (part: number, whole: number): number {
  return whole === 0 ? Number.NaN : part / whole
}
