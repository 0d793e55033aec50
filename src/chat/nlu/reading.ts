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
  /** Each intent's probability: scratch space reused by every reading (allocating it cost more than the reading). */
  readonly #sums: Float64Array

  constructor (classes: readonly string[]) {
    this.#classIntent = Int32Array.from(classes, (label) => {
      const name = label.split('/')[0]!
      const intent = isIntentName(name) ? name : OUT_OF_SCOPE
      if (!this.#intents.includes(intent)) this.#intents.push(intent)
      return this.#intents.indexOf(intent)
    })
    this.#situations = classes.map((label) => label.split('/')[1])
    this.#outOfScope = this.#intents.indexOf(OUT_OF_SCOPE)
    this.#sums = new Float64Array(this.#intents.length)
  }

  read (score: ModelScore, words: number): Reading {
    const { probabilities, knownWords } = score
    const intents = this.#intents.length
    const sums = this.#sums
    sums.fill(0)
    for (let c = 0; c < probabilities.length; c++) sums[this.#classIntent[c]!]! += probabilities[c]!
    // The best few, best first (the lower index first among equals), in one pass: most intents are never looked at.
    const ranked: number[] = []
    for (let i = 0; i < intents; i++) {
      const probability = sums[i]!
      let at = ranked.length
      if (at < CANDIDATES) {
        ranked.push(i)
      } else {
        if (!(probability > sums[ranked[at - 1]!]!)) continue
        at-- // the last one drops out
      }
      for (; at > 0 && probability > sums[ranked[at - 1]!]!; at--) ranked[at] = ranked[at - 1]!
      ranked[at] = i
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
    // The two best intents in scope (among the ranked few).
    let first = -1
    let second = -1
    for (const i of ranked) {
      if (i === this.#outOfScope) continue
      if (first < 0) first = i
      else if (second < 0) second = i
    }
    const best = first < 0 ? 0 : sums[first]!
    const signals: RejectionSignals = {
      outOfScope: this.#outOfScope < 0 ? 0 : sums[this.#outOfScope]!,
      best,
      margin: best - (second < 0 ? 0 : sums[second]!),
      coverage: words === 0 ? 0 : knownWords / words,
      words
    }
    const candidates: Candidate[] = []
    for (const i of ranked) candidates.push({ intent: this.#intents[i]!, probability: sums[i]! })
    const reading: Reading = { intent: this.#intents[top]!, confidence: sums[top]!, candidates, signals }
    if (situation !== undefined) reading.situation = situation
    return reading
  }
}
