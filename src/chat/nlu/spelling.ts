import { squeezeRepeats } from './text.ts'

/**
 * Corrects words the training corpus never used, unless they are correctly spelt English (a real word the corpus lacks
 * is not a misspelling of a shop word: "tyre" is not "type", "salad" is not "sale"): one edit away from a known word (symmetric deletes, which also
 * cover a swap of neighbouring letters), or two known words written together ("trackmy" → "track my").
 * Letters repeated for emphasis are reduced first ("pleeease"). The most frequent candidate wins; words of fewer than
 * four letters are left alone, and so are words longer than any real one (the work per word stays bounded).
 */
/** Longer words are not corrected: no English word is, and candidates cost time in the word's length. */
const MAX_CORRECTED_LENGTH = 24
/** A word this long may be two edits from the word it stands for; a shorter one only one ("grent" is not "agent"). */
const LONG_WORD = 8
const DIGIT = /\d/

export class SpellingCorrector {
  readonly #frequency: ReadonlyMap<string, number>
  readonly #isEnglishWord: (word: string) => boolean
  /** Each known word, and each of its one-letter deletions, mapped to the most frequent known word it comes from. */
  readonly #byDeletion = new Map<string, string>()
  readonly #cache = new Map<string, readonly string[]>()

  constructor (frequency: ReadonlyMap<string, number>, isEnglishWord: (word: string) => boolean = () => false) {
    this.#frequency = frequency
    this.#isEnglishWord = isEnglishWord
    for (const word of frequency.keys()) {
      if (word.length < 4) continue
      for (const variant of [word, ...deletions(word)]) this.#remember(variant, word)
    }
  }

  /**
   * Appends the known word(s) `word` most likely stands for, or `word` itself, to `words`: nothing is allocated for
   * a word that needs no correction (most of them).
   */
  appendCorrected (word: string, words: string[]): void {
    if (this.#needsNoCorrection(word)) {
      words.push(word)
    } else {
      for (const corrected of this.#corrected(word)) words.push(corrected)
    }
  }

  #needsNoCorrection (word: string): boolean {
    return word.length < 4 || this.#frequency.has(word) || DIGIT.test(word)
  }

  #corrected (word: string): readonly string[] {
    const cached = this.#cache.get(word)
    if (cached !== undefined) return cached
    const squeezed = squeezeRepeats(word)
    if (squeezed.length > MAX_CORRECTED_LENGTH) return [squeezed]
    const corrected = this.#frequency.has(squeezed) || this.#isEnglishWord(squeezed) || this.#isEnglishWord(word)
      ? [squeezed]
      : this.#closest(squeezed) ?? this.#split(squeezed) ?? [squeezed]
    // Bounded in count and size: unseen words are few, but a stream of random text must not grow memory without limit.
    if (word.length <= 2 * MAX_CORRECTED_LENGTH) {
      if (this.#cache.size >= 20_000) this.#cache.clear()
      this.#cache.set(word, corrected)
    }
    return corrected
  }

  #remember (variant: string, word: string): void {
    const current = this.#byDeletion.get(variant)
    if (current === undefined || this.#count(word) > this.#count(current)) this.#byDeletion.set(variant, word)
  }

  #closest (word: string): string[] | undefined {
    let best: string | undefined
    for (const variant of [word, ...deletions(word)]) {
      const candidate = this.#byDeletion.get(variant)
      if (candidate !== undefined && editDistance(word, candidate) <= (word.length < LONG_WORD ? 1 : 2) &&
        (best === undefined || this.#count(candidate) > this.#count(best))) best = candidate
    }
    return best === undefined ? undefined : [best]
  }

  #split (word: string): string[] | undefined {
    let best: string[] | undefined
    let bestScore = 0
    for (let at = 2; at <= word.length - 2; at++) {
      const left = word.slice(0, at)
      const right = word.slice(at)
      const score = Math.min(this.#count(left), this.#count(right))
      if (score > bestScore) {
        best = [left, right]
        bestScore = score
      }
    }
    return best
  }

  #count (word: string): number {
    return this.#frequency.get(word) ?? 0
  }
}

/**
 * Edits between two words (insertions, deletions, substitutions, swaps of neighbours), by the optimal string
 * alignment table: the words are at most MAX_CORRECTED_LENGTH letters, so the table is small.
 */
function editDistance (a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1)
      rows[i]![j] = best
    }
  }
  return rows[a.length]![b.length]!
}

function deletions (word: string): string[] {
  const variants: string[] = []
  for (let at = 0; at < word.length; at++) variants.push(word.slice(0, at) + word.slice(at + 1))
  return variants
}
