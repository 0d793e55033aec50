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

  /** The known word(s) `word` most likely stands for, or `word` itself. */
  correct (word: string): readonly string[] {
    if (word.length < 4 || this.#frequency.has(word) || /\d/.test(word)) return [word]
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
      if (candidate !== undefined && Math.abs(candidate.length - word.length) <= 1 &&
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

function deletions (word: string): string[] {
  const variants: string[] = []
  for (let at = 0; at < word.length; at++) variants.push(word.slice(0, at) + word.slice(at + 1))
  return variants
}
