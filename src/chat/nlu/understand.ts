import type { DomainPack } from '../domain-pack/schema.ts'
import { OUT_OF_SCOPE, SOCIAL_INTENTS, type IntentName } from '../intents.ts'
import { extractEntities, recogniseEntities, type MessageEntities } from './entities.ts'
import type { IntentModel } from './intent-model.ts'
import { ClassIndex, type Candidate, type Reading } from './reading.ts'
import type { Rejector } from './rejection.ts'
import { ENTITY_TOKENS } from './text.ts'
import type { TrainedUnderstanding } from './training.ts'

export type { Candidate } from './reading.ts'

/**
 * How the message stands: a request the desk serves (`understood`), one it recognises as outside what it does
 * (`out_of_scope`: a recipe, the weather), or one it could not make out (`not_understood`).
 */
export type UnderstandingStatus = 'understood' | 'out_of_scope' | 'not_understood'

/** What one message says, read on its own: the dialogue policy decides what it means in the conversation. */
export interface Understanding {
  /** The intent read; out_of_scope unless `status` is understood. */
  intent: IntentName
  /** A situation of that intent the message describes (a broken item, a late parcel), if any. */
  situation?: string
  status: UnderstandingStatus
  /** The model's probability for `intent`; for a message not understood, 1 − the best. */
  confidence: number
  /** The rejector's calibrated probability that the message is one the desk serves. */
  inScope: number
  /** Share of the message's words the model knows (0–1); below MIN_COVERAGE nothing in it is understood. */
  coverage: number
  /** The model's most probable intents, best first, each with its situations' probability added in. */
  candidates: Candidate[]
  entities: MessageEntities
  /** The message only gives a value (an order number, a date, an e-mail), as an answer does: "it's A-12", "last week". */
  valueOnly: boolean
  /** Swearing, the pack's anger words, shouting in capitals, or "!!!". */
  angry: boolean
  /**
   * Swearing (the pack's swear words, or censored: "f***ing"), shouting in capitals, or "!!!": anger a complaint is
   * handed to a person for. The anger words alone ("this is ridiculous") are not.
   */
  furious: boolean
}

const ANGRY_PUNCTUATION = /[!?]{3,}/
/** Swearing with its letters starred out: "f***ing", "s**t". */
const CENSORED = /\b[a-z]\*{2,}[a-z]*/i
/** Share of a message's words the model must know before it claims to understand anything. */
export const MIN_COVERAGE = 0.5
const SOCIAL: ReadonlySet<string> = new Set(SOCIAL_INTENTS)
const VALUE_TOKENS = new Set<string>([ENTITY_TOKENS.order_number, ENTITY_TOKENS.date, ENTITY_TOKENS.email])
/**
 * Words around a value in an answer: "my order number is …", "I bought it …", "what about order …", "no wait, it's
 * …", "sorry, I meant …", "the other one is …", "… if that helps".
 */
const ANSWER_WORDS = new Set([
  'it', 'its', 's', 'is', 'was', 'were', 'the', 'a', 'an', 'my', 'our', 'mine', 'number', 'order', 'no', 'nr', 'num',
  'id', 'ref', 'reference', 'here', 'sure', 'yes', 'yeah', 'yep', 'ok', 'thanks', 'thank', 'you', 'please', 'and',
  'also', 'what', 'about', 'how', 'for', 'on', 'in', 'at', 'from', 'i', 'we', 'bought', 'buy', 'purchased', 'ordered',
  'got', 'get', 'paid', 'made', 'make', 'placed', 'did', 'them', 'this', 'that', 'one', 'other', 'another', 'second',
  'first', 'date', 'email', 'mail', 'address', 'around', 'roughly', 'maybe', 'think', 'guess', 'believe', 'of', 'same',
  'sorry', 'meant', 'mean', 'actually', 'wait', 'oh', 'oops', 'correction', 'xnumx', 'if', 'help', 'helps', 'case',
  'need', 'needed', 'useful', 'just'
])
/** A courtesy beside a request is a short message; a long one is read whole. */
const MAX_CLAUSES = 8
/** Clause boundaries: sentence punctuation, commas and joining words ("thanks! and where is…"). */
const CLAUSES = /[.!?;,:\n]+|\s(?:and|but|also|plus|btw)\s/i

/**
 * Understanding of single messages: the entity recogniser, the intent model and the rejector, with the pack's
 * understanding settings.
 */
export class Understander {
  readonly model: IntentModel
  readonly #rejector: Rejector
  readonly #classes: ClassIndex
  readonly #rejectionThreshold: number
  readonly #confidenceFloor: number
  readonly #angerWords: RegExp
  readonly #swearWords: RegExp

  constructor (trained: TrainedUnderstanding, settings: DomainPack['understanding']) {
    this.model = trained.model
    this.#rejector = trained.rejector
    this.#classes = new ClassIndex(trained.model.classes)
    this.#rejectionThreshold = settings.rejection_threshold
    this.#confidenceFloor = settings.confidence_threshold
    this.#angerWords = wholeWords(settings.anger_words)
    this.#swearWords = wholeWords(settings.swear_words)
  }

  /**
   * What `message` says; `today` (YYYY-MM-DD, UTC) resolves dates such as "yesterday" and "the 8th". `tokens`: the
   * message's words as wordsOf reads them with no entities, when the caller has them already (readWords); they are
   * the model's tokens too unless the message has entities.
   */
  understand (message: string, today?: string, tokens?: readonly string[]): Understanding {
    const spans = recogniseEntities(message, today)
    const words = tokens !== undefined && spans.length === 0 ? this.model.wordsOfTokens(tokens) : this.model.words(message, spans)
    let reading = this.#read(words)
    // A courtesy with a request ("thanks! and where is my parcel?") is the request.
    if (SOCIAL.has(reading.intent)) reading = this.#requestBesideCourtesy(message, today) ?? reading
    const { intent, situation, candidates, confidence, signals } = reading
    const inScope = this.#rejector.inScopeProbability(signals)
    const status = this.#status(reading, inScope)
    const furious = this.#isFurious(message)
    const understanding: Understanding = {
      intent: status === 'understood' ? intent : OUT_OF_SCOPE,
      status,
      confidence: round(status === 'not_understood' ? 1 - confidence : confidence),
      inScope,
      coverage: signals.coverage,
      candidates,
      entities: extractEntities(message, spans),
      valueOnly: isValueOnly(words),
      angry: furious || this.#angerWords.test(message),
      furious
    }
    if (status === 'understood' && situation !== undefined) understanding.situation = situation
    return understanding
  }

  /**
   * A message most of whose words the model never saw is not understood, whatever it scores (keyboard mash, another
   * language): real messages, misspelt ones included, hardly ever are. Otherwise, in scope by the rejector and
   * confident enough: understood; in scope but no intent likely enough: not understood; out of scope by the
   * rejector or the model: recognised as off-topic.
   */
  #status (reading: Reading, inScope: number): UnderstandingStatus {
    if (reading.signals.coverage < MIN_COVERAGE) return 'not_understood'
    if (reading.intent !== OUT_OF_SCOPE && inScope >= this.#rejectionThreshold) {
      return reading.confidence >= this.#confidenceFloor ? 'understood' : 'not_understood'
    }
    return 'out_of_scope'
  }

  #read (words: readonly string[]): Reading {
    return this.#classes.read(this.model.score(words), words.length)
  }

  /** The best reading of the message without its courtesy clauses, when that is a request. */
  #requestBesideCourtesy (message: string, today?: string): Reading | undefined {
    const clauses = message.split(CLAUSES).filter((clause) => /[a-z]/i.test(clause))
    if (clauses.length < 2 || clauses.length > MAX_CLAUSES) return undefined
    const requests = clauses.filter((clause) => !SOCIAL.has(this.#read(this.model.words(clause, recogniseEntities(clause, today))).intent))
    if (requests.length === 0) return undefined
    const rest = requests.join('. ')
    const reading = this.#read(this.model.words(rest, recogniseEntities(rest, today)))
    return reading.intent === OUT_OF_SCOPE || reading.confidence < this.#confidenceFloor ? undefined : reading
  }

  #isFurious (message: string): boolean {
    return isShouting(message) || ANGRY_PUNCTUATION.test(message) || CENSORED.test(message) || this.#swearWords.test(message)
  }
}

/** Any of `words` as a whole word ("hell" is one, "hello" is not), case-insensitive. */
function wholeWords (words: readonly string[]): RegExp {
  const escaped = words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`\\b(?:${escaped.join('|') || '(?!)'})\\b`, 'i')
}

/** At least twelve letters, none of them lower case. */
function isShouting (message: string): boolean {
  if (/[a-z]/.test(message)) return false
  let letters = 0
  for (let i = 0; i < message.length && letters < 12; i++) {
    const code = message.charCodeAt(i)
    if (code >= 65 && code <= 90) letters++
  }
  return letters >= 12
}

function isValueOnly (words: readonly string[]): boolean {
  let values = 0
  for (const word of words) {
    if (VALUE_TOKENS.has(word)) values++
    else if (!ANSWER_WORDS.has(word)) return false
  }
  return values > 0
}

function round (value: number): number {
  return Math.round(value * 1000) / 1000
}
