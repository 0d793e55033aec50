/**
 * The featurizer: the words of a message (word-reader.ts) → hashed features. Each word's stem and character 4-grams
 * (which carry misspellings and unseen word forms), pairs of neighbouring stems ("where is", "is my": how the request
 * is put), and pairs of content words with function words between them skipped ("order … shipped").
 */
import { stemmer } from 'stemmer'

/** Words too common to say anything on their own; they still count as single words, not in word pairs. */
const FUNCTION_WORDS = new Set([
  'a', 'an', 'the', 'i', 'me', 'my', 'mine', 'we', 'our', 'us', 'you', 'your', 'it', 'its', 'is', 'am', 'are', 'was',
  'be', 'been', 'to', 'of', 'for', 'on', 'in', 'at', 'by', 'with', 'and', 'or', 'so', 'just', 'please', 'this',
  'that', 'there', 'some', 'any', 'would', 'could', 'will', 'shall', 'should', 'hey', 'hi', 'hello', 'ok', 'oh',
  'um', 'uh', 'like', 'really', 'very', 'also', 'yes', 'do', 'does', 'did', 'have', 'has', 'had', 'get', 'got',
  'need', 'want', 'help', 'know', 'tell', 'let', 'then', 'now', 'im'
])

/** Each kind of feature hashes from its own seed: the stem "order" and the 4-gram " ord" never collide by design. */
export const FEATURE_SEEDS = { word: 0x01, pair: 0x02, gram: 0x03, bias: 0x04, bigram: 0x05 } as const
/** The one feature of a message without words. */
export const EMPTY_MESSAGE = hashSlice(FEATURE_SEEDS.bias, '', 0, 0)
const CHAR_GRAM = 4
/** Longer "words" (noise, pasted hashes) are one feature each, not stemmed, split into grams or cached. */
export const MAX_WORD_LENGTH = 32
/** Placeholders of entities ("xordernumx") are words of their own: no character grams. */
const PLACEHOLDER = /^x[a-z]+x$/
/** Words whose features the extractor keeps (cleared when full), so that a stream of random text cannot grow memory. */
const WORD_CACHE_SIZE = 20_000

/** A word's own features. */
export interface WordFeatures {
  stem: string
  /** Not a function word: takes part in pairs of content words. */
  content: boolean
  /** The stem's hash first, then the 4-grams'. */
  hashes: Uint32Array
}

/** A word's own features: its stem and character 4-grams; a longer "word" (noise, a pasted hash) is one feature. */
export function wordFeatures (word: string): WordFeatures {
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

/**
 * Words → feature hashes, for training. Scoring (scorer.ts) walks the same features in the same order without
 * listing them: a change here is a change there.
 */
export class FeatureExtractor {
  readonly #words = new Map<string, WordFeatures>()

  /** Hashes of the features (a feature seen twice counts twice). */
  features (words: readonly string[]): number[] {
    const features: number[] = []
    let previous: string | undefined
    let neighbour: string | undefined
    for (let w = 0; w < words.length; w++) {
      const { stem, content, hashes } = this.#word(words[w]!)
      for (let h = 0; h < hashes.length; h++) features.push(hashes[h]!)
      if (neighbour !== undefined) features.push(hashPair(FEATURE_SEEDS.bigram, neighbour, stem))
      neighbour = stem
      if (content) {
        if (previous !== undefined) features.push(hashPair(FEATURE_SEEDS.pair, previous, stem))
        previous = stem
      }
    }
    if (words.length === 0) features.push(EMPTY_MESSAGE)
    return features
  }

  /** A word's own features, computed once per word. */
  #word (word: string): WordFeatures {
    if (word.length > MAX_WORD_LENGTH) return wordFeatures(word)
    let features = this.#words.get(word)
    if (features === undefined) {
      features = wordFeatures(word)
      if (this.#words.size >= WORD_CACHE_SIZE) this.#words.clear()
      this.#words.set(word, features)
    }
    return features
  }
}

/** FNV-1a over two words, separated, starting from a per-kind seed. */
function hashPair (seed: number, first: string, second: string): number {
  return continueHash(pairPrefix(seed, first), second)
}

/** `hashPair`'s state after the first word and the separator: the same for every pair the word starts. */
export function pairPrefix (seed: number, first: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0
  for (let i = 0; i < first.length; i++) h = Math.imul(h ^ first.charCodeAt(i), 0x01000193)
  return Math.imul(h ^ 0x1f, 0x01000193)
}

/** A pair's hash from its first word's `pairPrefix` and the second word. */
export function continueHash (state: number, second: string): number {
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
