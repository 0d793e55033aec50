import { OUT_OF_SCOPE, isIntentName, type IntentName } from '../intents.ts'
import type { ModelScore } from './intent-model.ts'
import type { RejectionSignals } from './rejection.ts'

export interface Candidate {
  intent: IntentName
  probability: number
}

/** The intent model's scores for a message, summed up per intent. */
export interface Reading {
  /** The most probable intent, its situation classes added in. */
  intent: IntentName
  /** The intent's most probable situation, when that beats the intent's own class. */
  situation?: string
  confidence: number
  /** The most probable intents, best first. */
  candidates: Candidate[]
  signals: RejectionSignals
}

const CANDIDATES = 6

/** The model's classes (`intent` and `intent/situation`) as intents and situations. */
export class ClassIndex {
  readonly #intents: IntentName[]
  readonly #situations: Array<string | undefined>

  constructor (classes: readonly string[]) {
    this.#intents = classes.map((label) => {
      const intent = label.split('/')[0]!
      return isIntentName(intent) ? intent : OUT_OF_SCOPE
    })
    this.#situations = classes.map((label) => label.split('/')[1])
  }

  read (score: ModelScore, words: number): Reading {
    const { probabilities, knownWords } = score
    const byIntent = new Map<IntentName, number>()
    for (let c = 0; c < probabilities.length; c++) {
      const intent = this.#intents[c]!
      byIntent.set(intent, (byIntent.get(intent) ?? 0) + probabilities[c]!)
    }
    const ranked = [...byIntent].map(([intent, probability]) => ({ intent, probability })).sort((a, b) => b.probability - a.probability)
    const best = ranked[0]!
    let situation: string | undefined
    let situationProbability = -1
    for (let c = 0; c < probabilities.length; c++) {
      if (this.#intents[c] === best.intent && probabilities[c]! > situationProbability) {
        situationProbability = probabilities[c]!
        situation = this.#situations[c]
      }
    }
    const inScope = ranked.find((candidate) => candidate.intent !== OUT_OF_SCOPE)
    const next = ranked.find((candidate) => candidate !== inScope && candidate.intent !== OUT_OF_SCOPE)
    const signals: RejectionSignals = {
      outOfScope: byIntent.get(OUT_OF_SCOPE) ?? 0,
      best: inScope?.probability ?? 0,
      margin: (inScope?.probability ?? 0) - (next?.probability ?? 0),
      coverage: words === 0 ? 0 : knownWords / words,
      words
    }
    return { intent: best.intent, ...(situation === undefined ? {} : { situation }), confidence: best.probability, candidates: ranked.slice(0, CANDIDATES), signals }
  }
}
