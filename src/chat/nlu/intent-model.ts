import { stemmer } from 'stemmer'
import type { EntitySpan } from './entities.ts'
import { SpellingCorrector } from './spelling.ts'
import { wordsOf } from './text.ts'

export interface TrainingExample {
  text: string
  /** The class: an intent, or `intent/situation`. */
  label: string
}

export type Synonyms = Readonly<Record<string, readonly string[]>>

export interface IntentModelOptions {
  /** Domain words and phrases mapped to the one word the model learns ("money back" → "refund"). */
  synonyms?: Synonyms
  /** Correctly spelt English words: never "corrected" into a word of the corpus. */
  isEnglishWord?: (word: string) => boolean
  /** Passes over the corpus. */
  epochs?: number
  /** L2 penalty per update. */
  l2?: number
  /**
   * How far examples are reweighed so that every class counts the same: 0 not at all, 1 fully (an example of a class
   * with twice the mean count counts half), 0.5 halfway (by the square root).
   */
  balance?: number
  /** Weights smaller than this (in absolute value) are dropped after training. */
  prune?: number
  /**
   * Seeds of the example order: one model is trained per seed and their weights averaged, so that the model does
   * not depend on the luck of one order. The same seeds always train the same model.
   */
  seeds?: readonly number[]
}

export interface ModelScore {
  /** Probability of each class, in the order of `classes`. */
  probabilities: number[]
  /** How many of the words the model saw in training. */
  knownWords: number
}

/** Words too common to say anything on their own; they still count as single words, not in word pairs. */
const FUNCTION_WORDS = new Set([
  'a', 'an', 'the', 'i', 'me', 'my', 'mine', 'we', 'our', 'us', 'you', 'your', 'it', 'its', 'is', 'am', 'are', 'was',
  'be', 'been', 'to', 'of', 'for', 'on', 'in', 'at', 'by', 'with', 'and', 'or', 'so', 'just', 'please', 'this',
  'that', 'there', 'some', 'any', 'would', 'could', 'will', 'shall', 'should', 'hey', 'hi', 'hello', 'ok', 'oh',
  'um', 'uh', 'like', 'really', 'very', 'also', 'yes', 'do', 'does', 'did', 'have', 'has', 'had', 'get', 'got',
  'need', 'want', 'help', 'know', 'tell', 'let', 'then', 'now', 'im'
])

const FEATURE_SEEDS = { word: 0x01, pair: 0x02, gram: 0x03, bias: 0x04, bigram: 0x05 } as const
/** The one feature of a message without words. */
const EMPTY_MESSAGE = hashSlice(FEATURE_SEEDS.bias, '', 0, 0)
const CHAR_GRAM = 4
/** Longer "words" (noise, pasted hashes) are one feature each, not stemmed, split into grams or cached. */
const MAX_WORD_LENGTH = 32
const MIN_GRADIENT = 1e-3
/**
 * Words whose features are kept (each cache is cleared when full), so that a stream of random text cannot grow memory:
 * the corpus has about 8,000 words; 20,000 vectors of 40 classes are 6.4 MB.
 */
const WORD_CACHE_SIZE = 20_000
/** Placeholders of entities ("xordernumx") are words of their own: no character grams. */
const PLACEHOLDER = /^x[a-z]+x$/

/**
 * The embedded intent classifier: multinomial logistic regression over stemmed words, pairs of content words and
 * character 4-grams (which carry misspellings and unseen word forms), hashed, after spelling correction and the
 * pack's synonyms. Trains from the domain pack's examples in seconds; classifies a message in microseconds.
 */
export class IntentModel {
  /** The classes, sorted: intents and `intent/situation`s. */
  readonly classes: readonly string[]
  readonly #reader: WordReader
  readonly #table: FeatureTable
  /** Feature rows × classes, row by row; the weights pruned after training are 0. */
  readonly #weights: Float32Array
  readonly #bias: Float32Array
  readonly #wordVectors: WordVectors
  /** One message's class scores: scratch space reused by every call (allocating it cost more than filling it). */
  readonly #scores: Float64Array

  private constructor (classes: readonly string[], reader: WordReader, table: FeatureTable, weights: Float32Array, bias: Float32Array) {
    this.classes = classes
    this.#reader = reader
    this.#table = table
    this.#weights = weights
    this.#bias = bias
    this.#wordVectors = new WordVectors(table, weights, classes.length)
    this.#scores = new Float64Array(classes.length)
  }

  static train (examples: readonly TrainingExample[], options: IntentModelOptions = {}): IntentModel {
    const classes = [...new Set(examples.map((example) => example.label))].sort()
    const reader = WordReader.fromCorpus(examples.map((example) => example.text), options)
    const extractor = new FeatureExtractor()
    const featureIndex = new Map<number, number>()
    const rows = examples.map((example) => {
      const hashes = extractor.features(reader.words(example.text))
      const indexes = new Int32Array(hashes.length)
      for (let i = 0; i < hashes.length; i++) {
        let index = featureIndex.get(hashes[i]!)
        if (index === undefined) {
          index = featureIndex.size
          featureIndex.set(hashes[i]!, index)
        }
        indexes[i] = index
      }
      return { indexes, label: classes.indexOf(example.label), weight: 1 }
    })
    // A class with many examples (out_of_scope has thousands) would otherwise pull every doubtful message to itself.
    const counts = new Map<number, number>()
    for (const row of rows) counts.set(row.label, (counts.get(row.label) ?? 0) + 1)
    const mean = rows.length / counts.size
    const balance = options.balance ?? 0
    for (const row of rows) row.weight = (mean / counts.get(row.label)!) ** balance
    const weights = new Float32Array(featureIndex.size * classes.length)
    const bias = new Float32Array(classes.length)
    const seeds = options.seeds ?? [1]
    for (const seed of seeds) {
      const fitted = fit(rows, featureIndex.size, classes.length, { ...options, seed })
      for (let i = 0; i < weights.length; i++) weights[i]! += fitted.weights[i]! / seeds.length
      for (let c = 0; c < bias.length; c++) bias[c]! += fitted.bias[c]! / seeds.length
    }
    pruneWeights(weights, options.prune ?? PRUNE)
    return new IntentModel(classes, reader, FeatureTable.from(featureIndex), weights, bias)
  }

  /** The words the model reads in a text: normalised, spelling corrected, synonyms mapped. */
  words (text: string, spans?: readonly EntitySpan[]): string[] {
    return this.#reader.words(text, spans)
  }

  /**
   * Class probabilities for words from `words()`: the softmax of the bias plus the weights of the message's features
   * (each word's stem and 4-grams, neighbouring stems, pairs of content words), scaled by 1/√(features seen in
   * training).
   */
  score (words: readonly string[]): ModelScore {
    const scores = this.#scores
    scores.fill(0)
    const vectors = this.#wordVectors
    vectors.begin(words.length)
    let known = 0
    let knownWords = 0
    let previous: WordVector | undefined
    let neighbour: WordVector | undefined
    for (const text of words) {
      const word = vectors.get(text)
      if (word.stemKnown) knownWords++
      known += vectors.addWord(scores, word)
      if (neighbour !== undefined) known += vectors.addFeature(continueHash(neighbour.bigramPrefix, word.stem))
      neighbour = word
      if (word.content) {
        if (previous !== undefined) known += vectors.addFeature(continueHash(previous.pairPrefix, word.stem))
        previous = word
      }
    }
    if (words.length === 0) known += vectors.addFeature(EMPTY_MESSAGE)
    vectors.sumInto(scores)
    const scale = known === 0 ? 0 : 1 / Math.sqrt(known)
    const bias = this.#bias
    for (let c = 0; c < scores.length; c++) scores[c] = bias[c]! + scores[c]! * scale
    softmaxInPlace(scores)
    // A plain array the caller owns: allocating a typed array per message cost more than filling one.
    const probabilities = new Array<number>(scores.length)
    for (let c = 0; c < scores.length; c++) probabilities[c] = scores[c]!
    return { probabilities, knownWords }
  }

  /** The model as bytes, for the on-disk cache; `fromBytes` restores it exactly. */
  toBytes (): Uint8Array {
    const sparse = SparseWeights.of(this.#weights, this.classes.length)
    const header = JSON.stringify({
      format: MODEL_FORMAT,
      classes: this.classes,
      vocabulary: [...this.#reader.vocabulary],
      synonyms: this.#reader.synonyms,
      features: this.#table.size,
      weights: sparse.values.length
    })
    const { starts, columns, values } = sparse
    return packBytes(header, [this.#table.keys(), this.#table.rows(), starts, columns, values, this.#bias])
  }

  static fromBytes (bytes: Uint8Array, options: Pick<IntentModelOptions, 'isEnglishWord'> = {}): IntentModel {
    const { header, arrays } = unpackBytes(bytes)
    const data = JSON.parse(header) as { format: number, classes: string[], vocabulary: Array<[string, number]>, synonyms: Synonyms, features: number, weights: number }
    if (data.format !== MODEL_FORMAT) throw new Error(`model format ${data.format}, expected ${MODEL_FORMAT}`)
    const [keys, rows, starts, columns, values, bias] = arrays as [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array]
    const reader = new WordReader(new Map(data.vocabulary), data.synonyms, options.isEnglishWord)
    const table = FeatureTable.fromArrays(new Uint32Array(keys.buffer, keys.byteOffset, data.features), new Int32Array(rows.buffer, rows.byteOffset, data.features))
    const weights = new SparseWeights(
      new Int32Array(starts.buffer, starts.byteOffset, data.features + 1),
      new Uint8Array(columns.buffer, columns.byteOffset, data.weights),
      new Float32Array(values.buffer, values.byteOffset, data.weights)
    )
    // Copies: a view would keep the whole file's buffer in memory.
    return new IntentModel(data.classes, reader, table, weights.toDense(data.classes.length), new Float32Array(bias.buffer, bias.byteOffset, data.classes.length).slice())
  }
}

/** Bumped whenever features or the byte layout change: a cached model of another format is trained again. */
const MODEL_FORMAT = 4
/** Weights smaller than this are dropped after training: they hardly move a score, and most of a row is such. */
const PRUNE = 0.01

/** Sets the weights smaller than `threshold` (in absolute value) to 0: they hardly move a score. */
function pruneWeights (weights: Float32Array, threshold: number): void {
  for (let i = 0; i < weights.length; i++) if (Math.abs(weights[i]!) < threshold) weights[i] = 0
}

/**
 * The weight matrix by rows (features), keeping only each row's weights that are not 0 (compressed sparse rows): the
 * model's form on disk. In memory the model keeps it dense: adding a row whole, zeros included, measured faster than
 * following its columns.
 */
class SparseWeights {
  /** Row r's weights are at starts[r] to starts[r + 1] - 1. */
  readonly starts: Int32Array
  /** The class of each kept weight. */
  readonly columns: Uint8Array
  readonly values: Float32Array

  constructor (starts: Int32Array, columns: Uint8Array, values: Float32Array) {
    this.starts = starts
    this.columns = columns
    this.values = values
  }

  static of (dense: Float32Array, classes: number): SparseWeights {
    if (classes > 256) throw new Error('at most 256 classes')
    const rows = dense.length / classes
    const starts = new Int32Array(rows + 1)
    let kept = 0
    for (let i = 0; i < dense.length; i++) if (dense[i] !== 0) kept++
    const columns = new Uint8Array(kept)
    const values = new Float32Array(kept)
    let at = 0
    for (let row = 0; row < rows; row++) {
      starts[row] = at
      for (let c = 0; c < classes; c++) {
        const weight = dense[row * classes + c]!
        if (weight !== 0) {
          columns[at] = c
          values[at++] = weight
        }
      }
    }
    starts[rows] = at
    return new SparseWeights(starts, columns, values)
  }

  toDense (classes: number): Float32Array {
    const rows = this.starts.length - 1
    const dense = new Float32Array(rows * classes)
    for (let row = 0; row < rows; row++) {
      for (let k = this.starts[row]!; k < this.starts[row + 1]!; k++) dense[row * classes + this.columns[k]!] = this.values[k]!
    }
    return dense
  }
}

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
  /** `hashPair`'s state after this stem, for the pairs it starts. */
  bigramPrefix: number
  pairPrefix: number
}

/**
 * Each word's own features (stem and 4-grams) summed into one vector of class scores, kept for WORD_CACHE_SIZE words
 * in one slab: a message then adds a vector per word and a row per word pair, instead of a row for each of its
 * features (a dozen per word), hashed and looked up every time. Sums in 64 bits; a message's scores match the
 * feature-by-feature sum to about 1e-15.
 */
class WordVectors {
  readonly #table: FeatureTable
  readonly #weights: Float32Array
  readonly #classes: number
  readonly #byWord = new Map<string, WordVector>()
  /** The vectors, `#classes` numbers each, grown as words come (up to WORD_CACHE_SIZE). */
  #slab: Float64Array
  /** The vector of a word not cached (longer than MAX_WORD_LENGTH, or a full cache), valid until the next one. */
  readonly #scratch: Float64Array
  /** The message being scored: its cached words' offsets in the slab, and its pair features' offsets in the weights. */
  #wordOffsets = new Int32Array(64)
  #rowOffsets = new Int32Array(128)
  #wordCount = 0
  #rowCount = 0

  constructor (table: FeatureTable, weights: Float32Array, classes: number) {
    this.#table = table
    this.#weights = weights
    this.#classes = classes
    this.#slab = new Float64Array(256 * classes)
    this.#scratch = new Float64Array(classes)
  }

  get (word: string): WordVector {
    const cached = this.#byWord.get(word)
    if (cached !== undefined) return cached
    // Longer "words" (noise, pasted hashes) are not kept: a stream of them must not hold their text in memory. The
    // cache is cleared between messages (`begin`), never during one: a message's gathered vectors stay where they are.
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
   * Starts a message of `words` words. Its vectors and rows are gathered, then summed class by class (`sumInto`):
   * the rows are scattered over a weight matrix of megabytes, and reading them side by side lets the processor fetch
   * them at once — twice as fast as adding one row after another.
   */
  begin (words: number): void {
    if (this.#byWord.size + words > WORD_CACHE_SIZE) this.#byWord.clear()
    this.#wordCount = 0
    this.#rowCount = 0
    if (this.#wordOffsets.length < words) {
      this.#wordOffsets = new Int32Array(words * 2)
      this.#rowOffsets = new Int32Array(words * 4 + 2)
    }
  }

  /** Adds the word's vector to the message (an uncached word's to `scores` at once); its features seen in training. */
  addWord (scores: Float64Array, word: WordVector): number {
    if (word.offset < 0) {
      for (let c = 0; c < this.#classes; c++) scores[c]! += this.#scratch[c]!
    } else {
      this.#wordOffsets[this.#wordCount++] = word.offset
    }
    return word.known
  }

  /** Adds the weight row of one feature to the message: 1 if it was seen in training, else 0. */
  addFeature (hash: number): number {
    const row = this.#table.get(hash)
    if (row < 0) return 0
    this.#rowOffsets[this.#rowCount++] = row * this.#classes
    return 1
  }

  /** Adds the message's vectors and rows to `scores`, class by class. */
  sumInto (scores: Float64Array): void {
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

/** Text → the words the model reads: normalised (text.ts), spelling corrected against the corpus, synonyms mapped. */
class WordReader {
  readonly vocabulary: ReadonlyMap<string, number>
  readonly synonyms: Synonyms
  readonly #corrector: SpellingCorrector
  readonly #phrases: ReadonlyMap<string, readonly SynonymPhrase[]>

  constructor (vocabulary: ReadonlyMap<string, number>, synonyms: Synonyms, isEnglishWord?: (word: string) => boolean) {
    this.vocabulary = vocabulary
    this.synonyms = synonyms
    this.#corrector = new SpellingCorrector(vocabulary, isEnglishWord)
    this.#phrases = compileSynonyms(synonyms)
  }

  /** The corpus's words and how often each occurs, synonyms' words included. */
  static fromCorpus (texts: readonly string[], options: IntentModelOptions): WordReader {
    const frequency = new Map<string, number>()
    const count = (word: string): void => { frequency.set(word, (frequency.get(word) ?? 0) + 1) }
    for (const text of texts) for (const word of wordsOf(text)) count(word)
    for (const [canonical, variants] of Object.entries(options.synonyms ?? {})) {
      for (const word of [canonical, ...variants].flatMap((phrase) => phrase.split(' '))) count(word)
    }
    return new WordReader(frequency, options.synonyms ?? {}, options.isEnglishWord)
  }

  words (text: string, spans?: readonly EntitySpan[]): string[] {
    const corrected: string[] = []
    for (const token of wordsOf(text, spans)) this.#corrector.appendCorrected(token, corrected)
    return this.#applySynonyms(corrected)
  }

  /** The words with each synonym phrase replaced by its canonical word; the same array when there is none (most). */
  #applySynonyms (words: string[]): string[] {
    let mapped: string[] | undefined
    for (let at = 0; at < words.length;) {
      const match = this.#phraseAt(words, at)
      if (match === undefined) {
        mapped?.push(words[at]!)
        at += 1
      } else {
        mapped ??= words.slice(0, at)
        mapped.push(match.canonical)
        at += match.words.length
      }
    }
    return mapped ?? words
  }

  /** The longest synonym phrase starting at `at`, if any. */
  #phraseAt (words: readonly string[], at: number): SynonymPhrase | undefined {
    const phrases = this.#phrases.get(words[at]!)
    if (phrases === undefined) return undefined
    for (const phrase of phrases) {
      let matches = true
      for (let offset = 0; offset < phrase.words.length && matches; offset++) matches = words[at + offset] === phrase.words[offset]
      if (matches) return phrase
    }
    return undefined
  }
}

interface SynonymPhrase {
  words: readonly string[]
  canonical: string
}

/** Synonym phrases indexed by their first word, longest first so that "money back" wins over "money". */
function compileSynonyms (synonyms: Synonyms): Map<string, SynonymPhrase[]> {
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

interface WordFeatures {
  stem: string
  /** Not a function word: takes part in word pairs. */
  content: boolean
  hashes: Uint32Array
}

/**
 * Words → feature hashes: each word's stem and character 4-grams, pairs of neighbouring stems ("where is", "is my":
 * how the request is put), and pairs of content words with function words between them skipped ("order … shipped").
 */
class FeatureExtractor {
  readonly #words = new Map<string, WordFeatures>()

  /** Hashes of the features (a feature seen twice counts twice). */
  features (words: readonly string[]): number[] {
    const features: number[] = []
    this.each(words, (feature) => { features.push(feature) })
    return features
  }

  /** Calls `visit` with each feature's hash, in order; `stem` marks a word's own stem (whether the word is known). */
  each (words: readonly string[], visit: (feature: number, stem: boolean) => void): void {
    let previous: string | undefined
    let neighbour: string | undefined
    for (let w = 0; w < words.length; w++) {
      const { stem, content, hashes } = this.#word(words[w]!)
      visit(hashes[0]!, true)
      for (let h = 1; h < hashes.length; h++) visit(hashes[h]!, false)
      if (neighbour !== undefined) visit(hashPair(FEATURE_SEEDS.bigram, neighbour, stem), false)
      neighbour = stem
      if (content) {
        if (previous !== undefined) visit(hashPair(FEATURE_SEEDS.pair, previous, stem), false)
        previous = stem
      }
    }
    if (words.length === 0) visit(EMPTY_MESSAGE, false)
  }

  /** A word's own features, computed once per word. */
  #word (word: string): WordFeatures {
    if (word.length > MAX_WORD_LENGTH) return wordFeatures(word)
    let features = this.#words.get(word)
    if (features === undefined) {
      features = wordFeatures(word)
      // Bounded: a stream of random text must not grow memory without limit.
      if (this.#words.size >= WORD_CACHE_SIZE) this.#words.clear()
      this.#words.set(word, features)
    }
    return features
  }
}

/** A word's own features: its stem and character 4-grams; a longer "word" (noise, a pasted hash) is one feature. */
function wordFeatures (word: string): WordFeatures {
  if (word.length > MAX_WORD_LENGTH) return { stem: word, content: true, hashes: Uint32Array.of(hashSlice(FEATURE_SEEDS.word, word, 0, word.length)) }
  const stem = stemmer(word)
  const hashes = [hashSlice(FEATURE_SEEDS.word, stem, 0, stem.length)]
  const content = !FUNCTION_WORDS.has(word)
  if (content && word.length >= CHAR_GRAM && !PLACEHOLDER.test(word)) {
    const padded = ` ${word} `
    for (let at = 0; at + CHAR_GRAM <= padded.length; at++) {
      hashes.push(hashSlice(FEATURE_SEEDS.gram, padded, at, at + CHAR_GRAM))
    }
  }
  return { stem, content, hashes: Uint32Array.from(hashes) }
}

/** Feature hash → row of the weight matrix, as an open-addressing table: no allocation per look-up. */
class FeatureTable {
  readonly size: number
  /** Slot s holds its key at 2s and its row at 2s + 1 (-1: empty): one memory access per probe. */
  readonly #slots: Int32Array
  readonly #mask: number

  private constructor (size: number, slots: Int32Array) {
    this.size = size
    this.#slots = slots
    this.#mask = slots.length / 2 - 1
  }

  static from (index: ReadonlyMap<number, number>): FeatureTable {
    const keys = new Uint32Array(index.size)
    const rows = new Int32Array(index.size)
    let i = 0
    for (const [key, row] of index) {
      keys[i] = key
      rows[i++] = row
    }
    return FeatureTable.fromArrays(keys, rows)
  }

  static fromArrays (keys: Uint32Array, rows: Int32Array): FeatureTable {
    let capacity = 16
    while (capacity < keys.length * 2) capacity *= 2
    const slots = new Int32Array(capacity * 2)
    for (let s = 1; s < slots.length; s += 2) slots[s] = -1
    const mask = capacity - 1
    for (let i = 0; i < keys.length; i++) {
      let slot = keys[i]! & mask
      while (slots[2 * slot + 1]! >= 0) slot = (slot + 1) & mask
      slots[2 * slot] = keys[i]! | 0
      slots[2 * slot + 1] = rows[i]!
    }
    return new FeatureTable(keys.length, slots)
  }

  /** The row of `key`, or -1. */
  get (key: number): number {
    const signed = key | 0
    let slot = key & this.#mask
    for (;;) {
      const row = this.#slots[2 * slot + 1]!
      if (row < 0 || this.#slots[2 * slot] === signed) return row
      slot = (slot + 1) & this.#mask
    }
  }

  keys (): Uint32Array {
    return Uint32Array.from(this.#occupied(), (slot) => this.#slots[2 * slot]! >>> 0)
  }

  rows (): Int32Array {
    return Int32Array.from(this.#occupied(), (slot) => this.#slots[2 * slot + 1]!)
  }

  #occupied (): number[] {
    const occupied: number[] = []
    for (let slot = 0; slot <= this.#mask; slot++) if (this.#slots[2 * slot + 1]! >= 0) occupied.push(slot)
    return occupied
  }
}

interface Row {
  indexes: Int32Array
  label: number
  /** How much the example counts: classes with many examples count less each (`balance`). */
  weight: number
}

/** Multinomial logistic regression by stochastic gradient descent with AdaGrad step sizes, one seed. */
function fit (rows: readonly Row[], features: number, classes: number, options: IntentModelOptions & { seed: number }): { weights: Float32Array, bias: Float32Array } {
  const epochs = options.epochs ?? 7
  const l2 = options.l2 ?? 1e-5
  const rate = 0.5
  const weights = new Float32Array(features * classes)
  const bias = new Float32Array(classes)
  const squared = new Float32Array(weights.length).fill(1e-8)
  const biasSquared = new Float32Array(classes).fill(1e-8)
  const random = mulberry32(options.seed)
  const order = rows.map((_, i) => i)
  const scores = new Float64Array(classes)
  const gradients = new Float64Array(classes)
  const activeClasses = new Int32Array(classes)
  for (let epoch = 0; epoch < epochs; epoch++) {
    shuffle(order, random)
    for (const i of order) {
      const { indexes, label, weight } = rows[i]!
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
        const gradient = (scores[c]! - (c === label ? 1 : 0)) * weight
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
  return { weights, bias }
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

/** FNV-1a over two words, separated, starting from a per-kind seed. */
function hashPair (seed: number, first: string, second: string): number {
  return continueHash(pairPrefix(seed, first), second)
}

/** `hashPair`'s state after the first word and the separator: the same for every pair the word starts. */
function pairPrefix (seed: number, first: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let i = 0; i < first.length; i++) h = Math.imul(h ^ first.charCodeAt(i), 0x01000193)
  return Math.imul(h ^ 0x1f, 0x01000193)
}

function continueHash (state: number, second: string): number {
  let h = state
  for (let i = 0; i < second.length; i++) h = Math.imul(h ^ second.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** FNV-1a over text[start, end), starting from a per-kind seed. */
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

/** A JSON header and typed arrays in one buffer: [header length][header][each array's byte length and bytes, 8-aligned]. */
function packBytes (header: string, arrays: ReadonlyArray<ArrayBufferView>): Uint8Array {
  const headerBytes = Buffer.from(header, 'utf8')
  const align = (n: number): number => Math.ceil(n / 8) * 8
  let size = align(4 + headerBytes.length)
  for (const array of arrays) size += 8 + align(array.byteLength)
  const bytes = new Uint8Array(size)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, headerBytes.length, true)
  bytes.set(headerBytes, 4)
  let at = align(4 + headerBytes.length)
  for (const array of arrays) {
    view.setUint32(at, array.byteLength, true)
    bytes.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), at + 8)
    at += 8 + align(array.byteLength)
  }
  return bytes
}

function unpackBytes (bytes: Uint8Array): { header: string, arrays: Uint8Array[] } {
  // A copy that starts at offset 0 (a Buffer's slice() would share its pool), so that every array starts at an
  // offset its element size divides.
  const copy = new Uint8Array(bytes.byteLength)
  copy.set(bytes)
  const buffer = copy.buffer
  const view = new DataView(buffer)
  const align = (n: number): number => Math.ceil(n / 8) * 8
  const headerLength = view.getUint32(0, true)
  const header = Buffer.from(buffer, 4, headerLength).toString('utf8')
  const arrays: Uint8Array[] = []
  for (let at = align(4 + headerLength); at < buffer.byteLength;) {
    const length = view.getUint32(at, true)
    arrays.push(new Uint8Array(buffer, at + 8, length))
    at += 8 + align(length)
  }
  return { header, arrays }
}
