import { stemmer } from 'stemmer'
import { wordsOf } from '../nlu/text.ts'

/**
 * A message as the dialogue reads it besides the intent model: the stem of each word, normalised as the intent model
 * normalises text ("didn't" → "did not", "u" → "you"). The answer selector and the slot phrases both read these.
 */
export function stemsOf (text: string): string[] {
  return readWords(text).stems
}

/** The words of a text, normalised, and their stems, one for one. */
export function readWords (text: string): { words: string[], stems: string[] } {
  // No entity spans: a number or a date says nothing about which answer or slot is meant, and finding dates costs
  // more than everything else here.
  const words = wordsOf(text, [])
  const stems = new Array<string>(words.length)
  for (let i = 0; i < words.length; i++) stems[i] = stemOf(words[i]!)
  return { words, stems }
}

/**
 * What the answer selector reads: the stems without the words that say nothing about which answer is meant and
 * without numbers, and each pair of neighbouring stems ("how long" is not "how much").
 */
export function answerTerms (stems: readonly string[]): string[] {
  const kept = stems.filter(isContentStem)
  const terms = kept.slice()
  for (let i = 1; i < kept.length; i++) terms.push(`${kept[i - 1]!} ${kept[i]!}`)
  return terms
}

/** Whether a stem says something about which answer is meant: neither an ignored word nor a number. */
export function isContentStem (stem: string): boolean {
  return !IGNORED.has(stem) && !HAS_DIGIT.test(stem)
}

/** How many of the stems say something: neither ignored words nor numbers. */
export function contentWordCount (stems: readonly string[]): number {
  let count = 0
  for (const stem of stems) if (isContentStem(stem)) count++
  return count
}

const IGNORED = new Set([
  'a', 'an', 'the', 'i', 'me', 'my', 'mine', 'it', 'its', 'to', 'of', 'and', 'you', 'your', 'for', 'on', 'in', 'at',
  'thi', 'that', 'these', 'those', 'is', 'am', 'ar', 'wa', 'were', 'be', 'been', 'we', 'us', 'our', 'with', 'pleas',
  'so', 'just', 'hi', 'hello', 'hei', 'there', 'um', 'uh', 'like', 'realli', 'veri', 'gui', 'lol', 'oh', 'thei', 'them', 'their'
])
const HAS_DIGIT = /\d/
/** Longer "words" (pasted hashes, noise) are kept as they are, not stemmed or cached. */
const MAX_WORD_LENGTH = 32
/** Stems kept: the answers' words and what customers write most; cleared when full, so that noise cannot grow it. */
const STEM_CACHE_SIZE = 20_000
const stems = new Map<string, string>()

function stemOf (word: string): string {
  if (word.length > MAX_WORD_LENGTH) return word
  let stem = stems.get(word)
  if (stem === undefined) {
    if (stems.size >= STEM_CACHE_SIZE) stems.clear()
    stem = stemmer(word)
    stems.set(word, stem)
  }
  return stem
}
