import type { FeatureTable } from './feature-table.ts'
import { continueHash, EMPTY_MESSAGE, FEATURE_SEEDS, MAX_WORD_LENGTH, pairPrefix, wordFeatures } from './features.ts'
import { softmaxInPlace } from './logistic-regression.ts'

export interface ModelScore {
  /** Probability of each class, in the order of the model's classes. */
  probabilities: number[]
  /** How many of the words the model saw in training. */
  knownWords: number
}

/**
 * Words whose features are kept (the cache is cleared when full), so that a stream of random text cannot grow memory:
 * the corpus has about 8,000 words; 20,000 vectors of 40 classes are 6.4 MB.
 */
const WORD_CACHE_SIZE = 20_000

/** A word as scoring reads it. */
interface WordVector {
  stem: string
  /** Not a function word: takes part in pairs of content words. */
  content: boolean
  /** Its stem was seen in training. */
  stemKnown: boolean
  /** Its own features (stem and 4-grams) seen in training. */
  known: number
  /** Where the sum of those features' weight rows is in the slab; -1: in the scratch vector (an uncached word). */
  offset: number
  /** `pairPrefix`'s state after this stem, for the pairs it starts. */
  bigramPrefix: number
  pairPrefix: number
}

/**
 * Scores messages against a trained weight matrix: the softmax of the bias plus the weights of the message's features
 * (features.ts: each word's stem and 4-grams, neighbouring stems, pairs of content words), scaled by 1/√(features
 * seen in training), as the learner scored them.
 *
 * Each word's own features (stem and 4-grams) are summed into one vector of class scores, kept for WORD_CACHE_SIZE
 * words in one slab: a message then adds a vector per word and a row per word pair, instead of a row for each of its
 * features (a dozen per word), hashed and looked up every time. Sums in 64 bits; a message's scores match the
 * feature-by-feature sum to about 1e-15.
 */
export class Scorer {
  readonly #table: FeatureTable
  /** Feature rows × classes, row by row. */
  readonly #weights: Float32Array
  readonly #bias: Float32Array
  readonly #classes: number
  readonly #byWord = new Map<string, WordVector>()
  /** The vectors, `#classes` numbers each, grown as words come (up to WORD_CACHE_SIZE). */
  #slab: Float64Array
  /** The vector of a word not cached (longer than MAX_WORD_LENGTH, or a full cache), valid until the next one. */
  readonly #scratch: Float64Array
  /** One message's class scores: reused by every call (allocating it cost more than filling it). */
  readonly #scores: Float64Array
  /** The message being scored: its cached words' offsets in the slab, and its pair features' offsets in the weights. */
  #wordOffsets = new Int32Array(64)
  #rowOffsets = new Int32Array(128)
  #wordCount = 0
  #rowCount = 0

  constructor (table: FeatureTable, weights: Float32Array, bias: Float32Array) {
    this.#table = table
    this.#weights = weights
    this.#bias = bias
    this.#classes = bias.length
    this.#slab = new Float64Array(256 * this.#classes)
    this.#scratch = new Float64Array(this.#classes)
    this.#scores = new Float64Array(this.#classes)
  }

  score (words: readonly string[]): ModelScore {
    const scores = this.#scores
    scores.fill(0)
    this.#begin(words.length)
    let known = 0
    let knownWords = 0
    let previous: WordVector | undefined
    let neighbour: WordVector | undefined
    for (const text of words) {
      const word = this.#vector(text)
      if (word.stemKnown) knownWords++
      known += this.#addWord(scores, word)
      if (neighbour !== undefined) known += this.#addFeature(continueHash(neighbour.bigramPrefix, word.stem))
      neighbour = word
      if (word.content) {
        if (previous !== undefined) known += this.#addFeature(continueHash(previous.pairPrefix, word.stem))
        previous = word
      }
    }
    if (words.length === 0) known += this.#addFeature(EMPTY_MESSAGE)
    this.#sumInto(scores)
    const scale = known === 0 ? 0 : 1 / Math.sqrt(known)
    const bias = this.#bias
    for (let c = 0; c < scores.length; c++) scores[c] = bias[c]! + scores[c]! * scale
    softmaxInPlace(scores)
    // A plain array the caller owns: allocating a typed array per message cost more than filling one.
    const probabilities = new Array<number>(scores.length)
    for (let c = 0; c < scores.length; c++) probabilities[c] = scores[c]!
    return { probabilities, knownWords }
  }

  #vector (word: string): WordVector {
    const cached = this.#byWord.get(word)
    if (cached !== undefined) return cached
    // Longer "words" (noise, pasted hashes) are not kept: a stream of them must not hold their text in memory. The
    // cache is cleared between messages (`#begin`), never during one: a message's gathered vectors stay where they are.
    const kept = word.length <= MAX_WORD_LENGTH && this.#byWord.size < WORD_CACHE_SIZE
    const offset = kept ? this.#byWord.size * this.#classes : -1
    if (offset + this.#classes > this.#slab.length) this.#grow()
    const vector = offset < 0 ? this.#scratch : this.#slab
    const start = Math.max(0, offset)
    vector.fill(0, start, start + this.#classes)
    const { stem, content, hashes } = wordFeatures(word)
    let known = 0
    for (const hash of hashes) {
      const row = this.#table.get(hash)
      if (row < 0) continue
      known++
      for (let c = 0, at = row * this.#classes; c < this.#classes; c++, at++) vector[start + c]! += this.#weights[at]!
    }
    const entry: WordVector = {
      stem,
      content,
      stemKnown: this.#table.get(hashes[0]!) >= 0,
      known,
      offset,
      bigramPrefix: pairPrefix(FEATURE_SEEDS.bigram, stem),
      pairPrefix: pairPrefix(FEATURE_SEEDS.pair, stem)
    }
    if (kept) this.#byWord.set(word, entry)
    return entry
  }

  /**
   * Starts a message of `words` words. Its vectors and rows are gathered, then summed class by class (`#sumInto`):
   * the rows are scattered over a weight matrix of megabytes, and reading them side by side lets the processor fetch
   * them at once — twice as fast as adding one row after another.
   */
  #begin (words: number): void {
    if (this.#byWord.size + words > WORD_CACHE_SIZE) this.#byWord.clear()
    this.#wordCount = 0
    this.#rowCount = 0
    if (this.#wordOffsets.length < words) {
      this.#wordOffsets = new Int32Array(words * 2)
      this.#rowOffsets = new Int32Array(words * 4 + 2)
    }
  }

  /** Adds the word's vector to the message (an uncached word's to `scores` at once); its features seen in training. */
  #addWord (scores: Float64Array, word: WordVector): number {
    if (word.offset < 0) {
      for (let c = 0; c < this.#classes; c++) scores[c]! += this.#scratch[c]!
    } else {
      this.#wordOffsets[this.#wordCount++] = word.offset
    }
    return word.known
  }

  /** Adds the weight row of one feature to the message: 1 if it was seen in training, else 0. */
  #addFeature (hash: number): number {
    const row = this.#table.get(hash)
    if (row < 0) return 0
    this.#rowOffsets[this.#rowCount++] = row * this.#classes
    return 1
  }

  /** Adds the message's vectors and rows to `scores`, class by class. */
  #sumInto (scores: Float64Array): void {
    const slab = this.#slab
    const weights = this.#weights
    const wordOffsets = this.#wordOffsets
    const rowOffsets = this.#rowOffsets
    for (let c = 0; c < this.#classes; c++) {
      let sum = 0
      for (let k = 0; k < this.#wordCount; k++) sum += slab[wordOffsets[k]! + c]!
      for (let k = 0; k < this.#rowCount; k++) sum += weights[rowOffsets[k]! + c]!
      scores[c]! += sum
    }
  }

  #grow (): void {
    const grown = new Float64Array(Math.min(this.#slab.length * 2, WORD_CACHE_SIZE * this.#classes))
    grown.set(this.#slab)
    this.#slab = grown
  }
}
