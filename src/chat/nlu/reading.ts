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
  /** The intents the classes name, each once. */
  readonly #intents: IntentName[] = []
  /** For each class, the index of its intent in `#intents`. */
  readonly #classIntent: Int32Array
  readonly #situations: Array<string | undefined>
  readonly #outOfScope: number

  constructor (classes: readonly string[]) {
    this.#classIntent = Int32Array.from(classes, (label) => {
      const name = label.split('/')[0]!
      const intent = isIntentName(name) ? name : OUT_OF_SCOPE
      if (!this.#intents.includes(intent)) this.#intents.push(intent)
      return this.#intents.indexOf(intent)
    })
    this.#situations = classes.map((label) => label.split('/')[1])
    this.#outOfScope = this.#intents.indexOf(OUT_OF_SCOPE)
  }

  read (score: ModelScore, words: number): Reading {
    const { probabilities, knownWords } = score
    const sums = new Float64Array(this.#intents.length)
    for (let c = 0; c < probabilities.length; c++) sums[this.#classIntent[c]!]! += probabilities[c]!
    // The best few by selection: the intents are few, and most of them are never looked at.
    const ranked: number[] = []
    for (let k = 0; k < CANDIDATES && k < sums.length; k++) {
      let best = -1
      for (let i = 0; i < sums.length; i++) if (!ranked.includes(i) && (best < 0 || sums[i]! > sums[best]!)) best = i
      ranked.push(best)
    }
    const top = ranked[0]!
    let situation: string | undefined
    let situationProbability = -1
    for (let c = 0; c < probabilities.length; c++) {
      if (this.#classIntent[c] === top && probabilities[c]! > situationProbability) {
        situationProbability = probabilities[c]!
        situation = this.#situations[c]
      }
    }
    const inScope = ranked.filter((i) => i !== this.#outOfScope)
    const best = inScope[0] === undefined ? 0 : sums[inScope[0]]!
    const signals: RejectionSignals = {
      outOfScope: this.#outOfScope < 0 ? 0 : sums[this.#outOfScope]!,
      best,
      margin: best - (inScope[1] === undefined ? 0 : sums[inScope[1]]!),
      coverage: words === 0 ? 0 : knownWords / words,
      words
    }
    return {
      intent: this.#intents[top]!,
      ...(situation === undefined ? {} : { situation }),
      confidence: sums[top]!,
      candidates: ranked.map((i) => ({ intent: this.#intents[i]!, probability: sums[i]! })),
      signals
    }
  }
}
