import type { EntitySpan } from './entities.ts'
import { SpellingCorrector } from './spelling.ts'
import { wordsOf } from './text.ts'

/** Domain words and phrases mapped to the one word the model learns ("money back" → "refund"). */
export type Synonyms = Readonly<Record<string, readonly string[]>>

/**
 * Text → the words the model reads: normalised (text.ts), spelling corrected against the corpus's words, the pack's
 * synonyms mapped. Training and classification read through the same reader, so a message always becomes the words
 * its examples became.
 */
export class WordReader {
  /** The corpus's words and how often each occurs: what the spelling corrector corrects towards. */
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

  /** The reader of a corpus: its words and how often each occurs, synonyms' words included. */
  static fromCorpus (texts: readonly string[], synonyms: Synonyms = {}, isEnglishWord?: (word: string) => boolean): WordReader {
    const frequency = new Map<string, number>()
    const count = (word: string): void => { frequency.set(word, (frequency.get(word) ?? 0) + 1) }
    for (const text of texts) for (const word of wordsOf(text)) count(word)
    for (const [canonical, variants] of Object.entries(synonyms)) {
      for (const word of [canonical, ...variants].flatMap((phrase) => phrase.split(' '))) count(word)
    }
    return new WordReader(frequency, synonyms, isEnglishWord)
  }

  /** The words of `text`; `spans` are its entities when the caller has already found them. */
  words (text: string, spans?: readonly EntitySpan[]): string[] {
    return this.wordsOfTokens(wordsOf(text, spans))
  }

  /** The words of a text whose tokens (wordsOf) the caller has already read; `tokens` is left as it is. */
  wordsOfTokens (tokens: readonly string[]): string[] {
    const corrected: string[] = []
    for (const token of tokens) this.#corrector.appendCorrected(token, corrected)
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
