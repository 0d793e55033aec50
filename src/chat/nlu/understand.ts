import type { DomainPack } from '../domain-pack/schema.ts'
import { isIntentName, OUT_OF_SCOPE, type IntentName } from '../intents.ts'
import { extractEntities, recogniseEntities, type MessageEntities } from './entities.ts'
import type { IntentModel } from './intent-model.ts'

export interface Candidate {
  intent: IntentName
  probability: number
}

/** What one message says, read on its own: the dialogue policy decides what it means in the conversation. */
export interface Understanding {
  intent: IntentName
  /** The model's probability for `intent`; for out_of_scope given because nothing was likely enough, 1 − the best. */
  confidence: number
  /** The model's most probable intents, best first. */
  candidates: Candidate[]
  entities: MessageEntities
  /** Swearing, the pack's anger words, shouting in capitals, or "!!!". */
  angry: boolean
}

const CANDIDATES = 5
const ANGRY_PUNCTUATION = /[!?]{3,}/

/** Understanding of single messages: the intent model, the entity recogniser and the pack's understanding settings. */
export class Understander {
  readonly model: IntentModel
  readonly #threshold: number
  readonly #angerWords: RegExp

  constructor (model: IntentModel, settings: DomainPack['understanding']) {
    this.model = model
    this.#threshold = settings.confidence_threshold
    const words = settings.anger_words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    this.#angerWords = new RegExp(`\\b(?:${words.join('|') || '(?!)'})`, 'i')
  }

  understand (message: string): Understanding {
    const spans = recogniseEntities(message)
    const probabilities = this.model.probabilities(message, spans)
    const candidates = topCandidates(this.model.intents, probabilities)
    const best = candidates[0]!
    let intent = best.intent
    let confidence = best.probability
    if (confidence < this.#threshold && intent !== OUT_OF_SCOPE) {
      intent = OUT_OF_SCOPE
      confidence = 1 - confidence
    }
    return { intent, confidence: round(confidence), candidates, entities: extractEntities(message, spans), angry: this.#isAngry(message) }
  }

  #isAngry (message: string): boolean {
    const letters = message.replace(/[^a-zA-Z]/g, '')
    const shouting = letters.length >= 12 && letters === letters.toUpperCase()
    return shouting || ANGRY_PUNCTUATION.test(message) || this.#angerWords.test(message)
  }
}

function topCandidates (intents: readonly string[], probabilities: Float64Array): Candidate[] {
  const candidates: Candidate[] = []
  for (let i = 0; i < intents.length; i++) {
    const intent = intents[i]!
    candidates.push({ intent: isIntentName(intent) ? intent : OUT_OF_SCOPE, probability: probabilities[i]! })
  }
  return candidates.sort((a, b) => b.probability - a.probability).slice(0, CANDIDATES)
}

function round (value: number): number {
  return Math.round(value * 1000) / 1000
}
