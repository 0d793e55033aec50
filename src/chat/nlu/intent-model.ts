import { stemmer } from 'stemmer'
import { SpellingCorrector } from './spelling.ts'
import type { EntitySpan } from './entities.ts'
import { wordsOf } from './text.ts'

export interface TrainingExample {
  text: string
  intent: string
}

export interface IntentModelOptions {
  /** Domain words and phrases mapped to the one word the model learns ("money back" → "refund"). */
  synonyms?: Readonly<Record<string, readonly string[]>>
  /** Passes over the corpus. */
  epochs?: number
  /** L2 penalty per update. */
  l2?: number
  /** Seed of the example order, so that a corpus always trains the same model. */
  seed?: number
}

export interface IntentScore {
  intent: string
  /** Softmax probability of the best intent. */
  confidence: number
}

/** Words too common to say anything on their own; they still count as single words, not in word pairs. */
const FUNCTION_WORDS = new Set([
  'a', 'an', 'the', 'i', 'me', 'my', 'mine', 'we', 'our', 'us', 'you', 'your', 'it', 'its', 'is', 'am', 'are', 'was',
  'be', 'been', 'to', 'of', 'for', 'on', 'in', 'at', 'by', 'with', 'and', 'or', 'so', 'just', 'please', 'this',
  'that', 'there', 'some', 'any', 'would', 'could', 'will', 'shall', 'should', 'hey', 'hi', 'hello', 'ok', 'oh',
  'um', 'uh', 'like', 'really', 'very', 'also', 'yes', 'do', 'does', 'did', 'have', 'has', 'had', 'get', 'got',
  'need', 'want', 'help', 'know', 'tell', 'let', 'then', 'now', 'im'
])

const FEATURE_SEEDS = { word: 0x01, pair: 0x02, gram: 0x03, bias: 0x04 } as const
const CHAR_GRAM = 4
/** Longer "words" (noise, pasted hashes) are one feature each, not stemmed, split into grams or cached. */
const MAX_WORD_LENGTH = 32
const MIN_GRADIENT = 1e-3

/**
 * The embedded intent classifier: multinomial logistic regression over stemmed words, pairs of content words and
 * character 4-grams (which carry misspellings and unseen word forms), hashed. Trains from the domain pack's examples
 * at start-up in a fraction of a second; classifies a message in microseconds.
 */
export class IntentModel {
  readonly intents: readonly string[]
  readonly #corrector: SpellingCorrector
  readonly #synonyms: ReadonlyMap<string, readonly SynonymPhrase[]>
  readonly #words = new Map<string, WordFeatures>()
  readonly #featureIndex: FeatureTable
  readonly #weights: Float32Array
  readonly #bias: Float32Array

  private constructor (
    intents: readonly string[],
    corrector: SpellingCorrector,
    synonyms: ReadonlyMap<string, readonly SynonymPhrase[]>,
    featureIndex: FeatureTable,
    weights: Float32Array,
    bias: Float32Array
  ) {
    this.intents = intents
    this.#corrector = corrector
    this.#synonyms = synonyms
    this.#featureIndex = featureIndex
    this.#weights = weights
    this.#bias = bias
  }

  static train (examples: readonly TrainingExample[], options: IntentModelOptions = {}): IntentModel {
    const intents = [...new Set(examples.map((example) => example.intent))].sort()
    const synonyms = compileSynonyms(options.synonyms ?? {})
    const frequency = new Map<string, number>()
    for (const example of examples) {
      for (const word of wordsOf(example.text)) frequency.set(word, (frequency.get(word) ?? 0) + 1)
    }
    for (const [canonical, variants] of Object.entries(options.synonyms ?? {})) {
      for (const word of [canonical, ...variants].flatMap((phrase) => phrase.split(' '))) {
        frequency.set(word, (frequency.get(word) ?? 0) + 1)
      }
    }
    const corrector = new SpellingCorrector(frequency)

    // Features of every example, as compact indexes.
    const featureIndex = new Map<number, number>()
    const empty = new IntentModel(intents, corrector, synonyms, new FeatureTable(new Map()), new Float32Array(0), new Float32Array(0))
    const rows = examples.map((example) => {
      const indexes: number[] = []
      for (const hash of empty.#features(example.text)) {
        let index = featureIndex.get(hash)
        if (index === undefined) {
          index = featureIndex.size
          featureIndex.set(hash, index)
        }
        indexes.push(index)
      }
      return { indexes: Int32Array.from(indexes), label: intents.indexOf(example.intent) }
    })

    const classes = intents.length
    const weights = new Float32Array(featureIndex.size * classes)
    const bias = new Float32Array(classes)
    fit(rows, weights, bias, classes, options)
    return new IntentModel(intents, corrector, synonyms, new FeatureTable(featureIndex), weights, bias)
  }

  /** The most probable intent and its probability. */
  classify (text: string, spans?: readonly EntitySpan[]): IntentScore {
    const probabilities = this.probabilities(text, spans)
    let best = 0
    for (let i = 1; i < probabilities.length; i++) if (probabilities[i]! > probabilities[best]!) best = i
    return { intent: this.intents[best]!, confidence: probabilities[best]! }
  }

  /** Probability of each intent, in the order of `intents`. */
  probabilities (text: string, spans?: readonly EntitySpan[]): Float64Array {
    const classes = this.intents.length
    const weights = this.#weights
    const table = this.#featureIndex
    const scores = Float64Array.from(this.#bias)
    const features = this.#features(text, spans)
    let known = 0
    for (let f = 0; f < features.length; f++) {
      const row = table.get(features[f]!)
      features[f] = row
      if (row >= 0) known++
    }
    const scale = known === 0 ? 0 : 1 / Math.sqrt(known)
    for (let f = 0; f < features.length; f++) {
      const row = features[f]!
      if (row < 0) continue
      const offset = row * classes
      for (let c = 0; c < classes; c++) scores[c]! += weights[offset + c]! * scale
    }
    return softmax(scores)
  }

  /** The words the model sees for a text, spelling corrected and synonyms mapped, before stemming. */
  words (text: string, spans?: readonly EntitySpan[]): string[] {
    const corrected: string[] = []
    for (const token of wordsOf(text, spans)) {
      for (const word of this.#corrector.correct(token)) corrected.push(word)
    }
    return this.#applySynonyms(corrected)
  }

  /** Hashes of the text's features (a feature seen twice counts twice). */
  #features (text: string, spans?: readonly EntitySpan[]): number[] {
    const features: number[] = []
    const words = this.words(text, spans)
    let previous: string | undefined
    for (const word of words) {
      const { stem, content, hashes } = this.#word(word)
      for (let h = 0; h < hashes.length; h++) features.push(hashes[h]!)
      if (content) {
        if (previous !== undefined) features.push(hash(FEATURE_SEEDS.pair, previous, stem))
        previous = stem
      }
    }
    if (words.length === 0) features.push(hash(FEATURE_SEEDS.bias, ''))
    return features
  }

  /** A word's own features (its stem and character 4-grams), computed once per word. */
  #word (word: string): WordFeatures {
    if (word.length > MAX_WORD_LENGTH) return { stem: word, content: true, hashes: Uint32Array.of(hash(FEATURE_SEEDS.word, word)) }
    let features = this.#words.get(word)
    if (features === undefined) {
      const stem = stemmer(word)
      const hashes = [hash(FEATURE_SEEDS.word, stem)]
      const content = !FUNCTION_WORDS.has(word)
      if (content && word.length >= CHAR_GRAM && !word.startsWith('x')) {
        const padded = ` ${word} `
        for (let at = 0; at + CHAR_GRAM <= padded.length; at++) {
          hashes.push(hashSlice(FEATURE_SEEDS.gram, padded, at, at + CHAR_GRAM))
        }
      }
      features = { stem, content, hashes: Uint32Array.from(hashes) }
      // Bounded: a stream of random text must not grow memory without limit.
      if (this.#words.size >= 50_000) this.#words.clear()
      this.#words.set(word, features)
    }
    return features
  }

  #applySynonyms (words: string[]): string[] {
    if (this.#synonyms.size === 0) return words
    const mapped: string[] = []
    for (let at = 0; at < words.length;) {
      const match = this.#synonyms.get(words[at]!)?.find((phrase) =>
        phrase.words.every((part, offset) => words[at + offset] === part))
      if (match === undefined) {
        mapped.push(words[at]!)
        at += 1
      } else {
        mapped.push(match.canonical)
        at += match.words.length
      }
    }
    return mapped
  }
}

interface WordFeatures {
  stem: string
  /** Not a function word: takes part in word pairs. */
  content: boolean
  hashes: Uint32Array
}

interface SynonymPhrase {
  words: readonly string[]
  canonical: string
}

/** Synonym phrases indexed by their first word, longest first so that "money back" wins over "money". */
function compileSynonyms (synonyms: Readonly<Record<string, readonly string[]>>): Map<string, SynonymPhrase[]> {
  const byFirstWord = new Map<string, SynonymPhrase[]>()
  for (const [canonical, variants] of Object.entries(synonyms)) {
    for (const variant of variants) {
      const words = wordsOf(variant)
      if (words.length === 0) continue
      const list = byFirstWord.get(words[0]!) ?? []
      list.push({ words, canonical })
      list.sort((a, b) => b.words.length - a.words.length)
      byFirstWord.set(words[0]!, list)
    }
  }
  return byFirstWord
}

/** Feature hash → row of the weight matrix, as an open-addressing table: no allocation per look-up. */
class FeatureTable {
  readonly #keys: Uint32Array
  readonly #rows: Int32Array
  readonly #mask: number

  constructor (index: ReadonlyMap<number, number>) {
    let size = 16
    while (size < index.size * 2) size *= 2
    this.#keys = new Uint32Array(size)
    this.#rows = new Int32Array(size).fill(-1)
    this.#mask = size - 1
    for (const [key, row] of index) {
      let slot = key & this.#mask
      while (this.#rows[slot]! >= 0) slot = (slot + 1) & this.#mask
      this.#keys[slot] = key
      this.#rows[slot] = row
    }
  }

  /** The row of `key`, or -1. */
  get (key: number): number {
    let slot = key & this.#mask
    for (;;) {
      const row = this.#rows[slot]!
      if (row < 0 || this.#keys[slot] === key) return row
      slot = (slot + 1) & this.#mask
    }
  }
}

interface Row {
  indexes: Int32Array
  label: number
}

/** Multinomial logistic regression by stochastic gradient descent with AdaGrad step sizes. */
function fit (rows: Row[], weights: Float32Array, bias: Float32Array, classes: number, options: IntentModelOptions): void {
  const epochs = options.epochs ?? 7
  const l2 = options.l2 ?? 1e-5
  const rate = 0.5
  const squared = new Float32Array(weights.length).fill(1e-8)
  const biasSquared = new Float32Array(classes).fill(1e-8)
  const random = mulberry32(options.seed ?? 1)
  const order = rows.map((_, i) => i)
  const scores = new Float64Array(classes)
  const gradients = new Float64Array(classes)
  const activeClasses = new Int32Array(classes)
  for (let epoch = 0; epoch < epochs; epoch++) {
    shuffle(order, random)
    for (const i of order) {
      const { indexes, label } = rows[i]!
      const scale = indexes.length === 0 ? 0 : 1 / Math.sqrt(indexes.length)
      scores.set(bias)
      for (const index of indexes) {
        const row = index * classes
        for (let c = 0; c < classes; c++) scores[c]! += weights[row + c]! * scale
      }
      softmaxInPlace(scores)
      // Classes the example already rules out would move the weights too little to matter; skipping them is most
      // of the speed of training.
      let active = 0
      for (let c = 0; c < classes; c++) {
        const gradient = scores[c]! - (c === label ? 1 : 0)
        biasSquared[c]! += gradient * gradient
        bias[c]! -= rate * gradient / Math.sqrt(biasSquared[c]!)
        if (gradient <= -MIN_GRADIENT || gradient >= MIN_GRADIENT) {
          activeClasses[active] = c
          gradients[active] = gradient * scale
          active++
        }
      }
      for (const index of indexes) {
        const row = index * classes
        for (let a = 0; a < active; a++) {
          const at = row + activeClasses[a]!
          const g = gradients[a]! + l2 * weights[at]!
          squared[at]! += g * g
          weights[at]! -= rate * g / Math.sqrt(squared[at]!)
        }
      }
    }
  }
}

function softmax (scores: Float64Array): Float64Array {
  const out = Float64Array.from(scores)
  softmaxInPlace(out)
  return out
}

function softmaxInPlace (scores: Float64Array): void {
  let max = -Infinity
  for (let c = 0; c < scores.length; c++) if (scores[c]! > max) max = scores[c]!
  let sum = 0
  for (let c = 0; c < scores.length; c++) {
    scores[c] = Math.exp(scores[c]! - max)
    sum += scores[c]!
  }
  for (let c = 0; c < scores.length; c++) scores[c]! /= sum
}

/** FNV-1a over the parts, separated, starting from a per-kind seed. */
function hash (seed: number, ...parts: string[]): number {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let p = 0; p < parts.length; p++) {
    if (p > 0) h = Math.imul(h ^ 0x1f, 0x01000193)
    const part = parts[p]!
    for (let i = 0; i < part.length; i++) h = Math.imul(h ^ part.charCodeAt(i), 0x01000193)
  }
  return h >>> 0
}

function hashSlice (seed: number, text: string, start: number, end: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

function mulberry32 (seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function shuffle<T> (items: T[], random: () => number): void {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    const swap = items[i]!
    items[i] = items[j]!
    items[j] = swap
  }
}
