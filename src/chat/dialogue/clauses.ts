import type { MessageSlots } from './slots.ts'

/**
 * The clauses of a message that may make several requests ("my parcel is late and also I was charged twice"): split
 * at sentence ends and at the words that join a second request ("and also", "plus", "and can…"). Word by word, in
 * linear time.
 */
export function splitClauses (text: string): string[] {
  const clauses: string[] = []
  // The sentences and the marks that end them, in turn: a sentence that ends with a question mark keeps it on its
  // last clause ("Is the postage back free? And do you need a picture?" asks twice).
  const parts = text.split(SENTENCE_END)
  for (let part = 0; part < parts.length; part += 2) {
    const sentence = parts[part]!
    const asked = parts[part + 1]?.includes('?') === true
    const words = sentence.split(SPACE).filter((word) => word !== '')
    let start = 0
    for (let i = 1; i < words.length - 1; i++) {
      const word = bare(words[i]!)
      // The next word matters only after "and": read it then alone.
      const next = word === 'and' ? bare(words[i + 1]!) : undefined
      if ((next !== undefined && SECOND_REQUEST.has(next)) || word === 'also' || word === 'plus') {
        if (i > start) clauses.push(words.slice(start, i).join(' '))
        start = next === 'also' ? i + 2 : i + 1
        if (next === 'also') i++
      }
    }
    if (start < words.length) clauses.push(words.slice(start).join(' ') + (asked ? '?' : ''))
  }
  return clauses.filter((clause) => LETTERS.test(clause) && clause.split(' ').length >= MIN_CLAUSE_WORDS)
}

const SENTENCE_END = /([?!;\n]+|\.\s)/
const SPACE = /\s+/
const LETTERS = /[a-z]{2}/i
/** Words that start a second request after "and": "…and can I pay with Apple Pay". */
const SECOND_REQUEST = new Set(['also', 'can', 'could', 'how', 'what', 'when', 'where', 'is', 'are', 'do', 'does', 'will', 'would', 'i', 'my', 'im'])
/** Shorter pieces ("thanks", "hi there") are not requests of their own. */
const MIN_CLAUSE_WORDS = 3

function bare (word: string): string {
  return word.toLowerCase().replace(NOT_LETTER, '')
}

const NOT_LETTER = /[^a-z]/g

/**
 * Whether a clause asks for something to be done ("can I cancel my order", "could you send…", "please…", or the
 * wish cue: "I'd like to…"), not only asks about it.
 */
export function asksToDo (clause: string, slots: MessageSlots): boolean {
  return slots.cues.has('wish') || ASKS_TO_DO.test(clause)
}

const ASKS_TO_DO = /^\W*(?:(?:hi|hello|hey)\W+)?(?:(?:can|could|may) (?:i|you|we)|please)\b/i
