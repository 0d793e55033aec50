import type { DomainAnswer } from '../domain-pack/schema.ts'
import type { IntentName } from '../intents.ts'
import { answerTerms, isContentStem, stemsOf } from './terms.ts'

/** The best match for a message, with the selector's probability for it: an answer, or a plain request (none). */
export interface RankedEntry {
  answer?: DomainAnswer
  confidence: number
}

/** An answer chosen for a message, with the selector's probability for it. */
export interface AnswerChoice extends RankedEntry {
  answer: DomainAnswer
}

/** BM25's usual constants: how fast a repeated term saturates, and how much a long document is discounted. */
const K1 = 1.2
const B = 0.75
/**
 * Scores become probabilities by a softmax at this temperature: chosen on held-out questions so that a confidence
 * threshold separates questions an answer fits from requests none does (docs/chat.md "Answer selection").
 */
const TEMPERATURE = 1.5

/**
 * What the selector chooses among: an answer, or a request asked plainly (`answer` undefined), whose own reply
 * answers.
 */
interface Entry {
  answer?: DomainAnswer
  intents: readonly IntentName[]
  examples: readonly string[]
}

/**
 * Answer selection: BM25 over the answers and the plain requests, each one document of its examples, read as stems
 * and pairs of stems. The scores of a message, turned into probabilities over every entry, are read once; the best
 * entry is then picked among those of the requests in question (the recognised intent, the conversation's active
 * request): an answer, or the plain request, which leaves the request's own reply to answer. Built from the pack in
 * milliseconds at start-up; chosen over a logistic model and over MiniSearch by measurement (docs/chat.md).
 */
export class AnswerSelector {
  readonly answers: readonly DomainAnswer[]
  readonly #entries: readonly Entry[]
  /** For each stem, the entries it occurs in and its BM25 weight there. */
  readonly #unigrams = new Map<string, Posting>()
  /** For each pair of neighbouring stems, by the first and then the second. */
  readonly #bigrams = new Map<string, Map<string, Posting>>()
  /** Counts the passes over a message's stems: a posting marked with the current one was added in it already. */
  #pass = 0
  readonly #byId: ReadonlyMap<string, DomainAnswer>
  readonly #membership: EntryMembership
  /** The entries whose answer supposes a case (`supposes`). */
  readonly #supposing: readonly number[]
  /** The entries whose answer names its subject (`names`), with the stems of those words. */
  readonly #named: ReadonlyArray<{ index: number, stems: ReadonlySet<string> }>

  constructor (answers: readonly DomainAnswer[], requests: Readonly<Partial<Record<IntentName, readonly string[]>>> = {}) {
    this.answers = answers
    this.#byId = new Map(answers.map((answer) => [answer.id, answer]))
    this.#entries = [
      ...answers.map((answer) => ({ answer, intents: answer.intents, examples: answer.examples })),
      ...Object.entries(requests).map(([intent, examples]) => ({ intents: [intent as IntentName], examples: examples ?? [] }))
    ]
    this.#membership = new EntryMembership(this.#entries)
    this.#supposing = this.#entries.flatMap((entry, index) => entry.answer?.supposes === undefined ? [] : [index])
    this.#named = this.#entries.flatMap((entry, index) => entry.answer?.names === undefined ? [] : [{ index, stems: new Set(entry.answer.names.flatMap((name) => stemsOf(name))) }])
    const documents = this.#entries.map((entry) => {
      const counts = new Map<string, number>()
      let length = 0
      for (const example of entry.examples) {
        for (const term of answerTerms(stemsOf(example))) {
          counts.set(term, (counts.get(term) ?? 0) + 1)
          length++
        }
      }
      return { counts, length }
    })
    const averageLength = documents.reduce((sum, document) => sum + document.length, 0) / Math.max(1, documents.length)
    const lists = new Map<string, Array<[number, number]>>()
    for (const [index, document] of documents.entries()) {
      for (const [term, count] of document.counts) {
        let list = lists.get(term)
        if (list === undefined) lists.set(term, list = [])
        list.push([index, count * (K1 + 1) / (count + K1 * (1 - B + B * document.length / averageLength))])
      }
    }
    for (const [term, list] of lists) {
      const idf = Math.log(1 + (documents.length - list.length + 0.5) / (list.length + 0.5))
      const posting: Posting = { entries: Int32Array.from(list, ([index]) => index), weights: Float64Array.from(list, ([, weight]) => weight * idf), addedIn: 0, asksTime: TIME_WORDS.has(term), asksPrice: PRICE_WORDS.has(term) }
      const space = term.indexOf(' ')
      if (space < 0) {
        this.#unigrams.set(term, posting)
      } else {
        const first = term.slice(0, space)
        let seconds = this.#bigrams.get(first)
        if (seconds === undefined) this.#bigrams.set(first, seconds = new Map())
        seconds.set(term.slice(space + 1), posting)
      }
    }
  }

  /** The answer with this id, if the pack has one. */
  byId (id: string): DomainAnswer | undefined {
    return this.#byId.get(id)
  }

  /**
   * How likely each entry is for a message (`stems` from stemsOf), to pick from by request: the terms are read as
   * answerTerms reads them, without building them. `focus`: the stems of the sentence that asks; `asksWhether`: the
   * message asks whether a case holds, so no answer supposing one is its.
   */
  rank (stems: readonly string[], focus?: readonly string[], asksWhether = false): AnswerRanking {
    // A plain array: a Float64Array this long would be given a buffer outside the heap, which costs more to make.
    const scores = new Array<number>(this.#entries.length).fill(0)
    const terms: Posting[] = []
    this.#score(scores, stems, terms)
    // The sentence that asks the question counts twice: "I typed it exactly. Can I use it with another code?"
    if (focus !== undefined) this.#score(scores, focus, terms)
    if (terms.length === 0) return new AnswerRanking(this.#entries, this.#membership, undefined, terms)
    // A message that asks whether a case holds ("has it already shipped?") supposes none: what happens then is not
    // its answer, whatever words it shares with it.
    if (asksWhether) for (const index of this.#supposing) scores[index] = 0
    // The answers whose subject the message does not name, though its words match them.
    let unnamed: number[] | undefined
    for (const { index, stems: named } of this.#named) {
      if (scores[index] !== 0 && !stems.some((stem) => named.has(stem))) (unnamed ??= []).push(index)
    }
    const unmatched = softmax(scores, TEMPERATURE)
    return new AnswerRanking(this.#entries, this.#membership, scores, terms, unnamed === undefined ? undefined : { entries: unnamed, unmatched })
  }

  /** Adds each term's postings once to `scores`; the words' (not the pairs') to `terms`. */
  #score (scores: number[], stems: readonly string[], terms: Posting[]): void {
    const pass = ++this.#pass
    let previous: string | undefined
    for (const stem of stems) {
      if (!isContentStem(stem)) continue
      const unigram = this.#unigrams.get(stem)
      if (unigram !== undefined && unigram.addedIn !== pass) {
        unigram.addedIn = pass
        terms.push(unigram)
        addPosting(scores, unigram)
      }
      const bigram = previous === undefined ? undefined : this.#bigrams.get(previous)?.get(stem)
      if (bigram !== undefined && bigram.addedIn !== pass) {
        bigram.addedIn = pass
        addPosting(scores, bigram)
      }
      previous = stem
    }
  }
}

/** One message's probabilities over the answers and plain requests. */
export class AnswerRanking {
  readonly #entries: readonly Entry[]
  readonly #membership: EntryMembership
  readonly #probabilities: readonly number[] | undefined
  /** The words of the message that matched (each once, or twice for the question asked). */
  readonly #terms: readonly Posting[]
  /** top()'s entry once found (null: not yet). */
  #top: RankedEntry | undefined | null = null

  /** The probabilities before the answers whose subject the message does not name were ranked down. */
  readonly #given: readonly number[] | undefined
  readonly #unnamed: { entries: readonly number[], unmatched: number } | undefined

  /**
   * `unnamed`: the answers whose subject (`names`) the message does not name: each is as likely as an entry no word
   * matched (`unmatched`), unless the conversation implies their subject (`implying()`).
   */
  constructor (entries: readonly Entry[], membership: EntryMembership, probabilities: readonly number[] | undefined, terms: readonly Posting[], unnamed?: { entries: readonly number[], unmatched: number }) {
    this.#entries = entries
    this.#membership = membership
    this.#terms = terms
    this.#given = probabilities
    this.#unnamed = unnamed
    if (probabilities === undefined || unnamed === undefined || unnamed.entries.length === 0) {
      this.#probabilities = probabilities
      return
    }
    // Each such answer's probability becomes an unmatched entry's, and the rest are scaled to sum to one again.
    const named = probabilities.slice()
    let removed = 0
    for (const index of unnamed.entries) {
      removed += named[index]! - unnamed.unmatched
      named[index] = unnamed.unmatched
    }
    const scale = 1 / (1 - removed)
    for (let i = 0; i < named.length; i++) named[i]! *= scale
    this.#probabilities = named
  }

  /**
   * The same message's ranking when the conversation names the subject the message leaves out (`subject`: the names
   * of the answer just given): "can I use it together with another one?" right after an answer about discount codes is
   * about codes. Answers of other subjects stay ranked down.
   */
  implying (subject: readonly string[]): AnswerRanking {
    const unnamed = this.#unnamed
    if (unnamed === undefined) return this
    const same = (names: readonly string[] | undefined): boolean => names !== undefined && names.length === subject.length && names.every((name, i) => name === subject[i])
    const entries = unnamed.entries.filter((index) => !same(this.#entries[index]!.answer?.names))
    return entries.length === unnamed.entries.length ? this : new AnswerRanking(this.#entries, this.#membership, this.#given, this.#terms, { entries, unmatched: unnamed.unmatched })
  }

  /**
   * Whether every word of the message that the selector knows is a word of an entry of `intents`, or only asks when
   * or how long (or, `asking` price, what it costs): the message names nothing of another matter ("how many days is it
   * supposed to take?" shares its words with refund times, or with none; "is that free" with delivery prices).
   */
  namesNothingBut (intents: ReadonlySet<IntentName>, other?: IntentName, asking: 'time' | 'price' = 'time'): boolean {
    const member = this.#membership.of(intents)
    // …and, when the message was read as `other`, nothing of that either ("how long to get my money back" names the
    // refund, though a double charge's answer speaks of money back too).
    const others = other === undefined ? undefined : this.#membership.of(new Set([other]))
    return this.#terms.every((posting) => (asking === 'time' ? posting.asksTime : posting.asksPrice) || (posting.entries.some((entry) => member[entry] === 1) &&
      (others === undefined || !posting.entries.some((entry) => others[entry] === 1))))
  }

  /** The most probable entry of `intents`, with its probability among theirs alone. */
  bestAmong (intents: ReadonlySet<IntentName>): RankedEntry | undefined {
    const probabilities = this.#probabilities
    if (probabilities === undefined) return undefined
    const member = this.#membership.of(intents)
    let best = -1
    let sum = 0
    for (let i = 0; i < this.#entries.length; i++) {
      if (member[i] !== 1) continue
      sum += probabilities[i]!
      if (best < 0 || probabilities[i]! > probabilities[best]!) best = i
    }
    if (best < 0) return undefined
    const { answer } = this.#entries[best]!
    const confidence = Math.round(probabilities[best]! / sum * 1000) / 1000
    return answer === undefined ? { confidence } : { answer, confidence }
  }

  /**
   * The most probable entry belonging to one of `intents`: an answer, or a plain request of theirs (no `answer`:
   * the request's own reply answers); none when the message shares no term with any.
   */
  best (intents: ReadonlySet<IntentName>): RankedEntry | undefined {
    const probabilities = this.#probabilities
    if (probabilities === undefined) return undefined
    const member = this.#membership.of(intents)
    let best = -1
    for (let i = 0; i < this.#entries.length; i++) {
      if (member[i] === 1 && (best < 0 || probabilities[i]! > probabilities[best]!)) best = i
    }
    return this.#choice(best)
  }

  /** The most probable answer of those `keep` keeps, with its probability among theirs alone. */
  bestWhere (keep: (answer: DomainAnswer) => boolean): RankedEntry | undefined {
    const probabilities = this.#probabilities
    if (probabilities === undefined) return undefined
    let best = -1
    let sum = 0
    for (let i = 0; i < this.#entries.length; i++) {
      const { answer } = this.#entries[i]!
      if (answer === undefined || !keep(answer)) continue
      sum += probabilities[i]!
      if (best < 0 || probabilities[i]! > probabilities[best]!) best = i
    }
    if (best < 0) return undefined
    return { answer: this.#entries[best]!.answer!, confidence: Math.round(probabilities[best]! / sum * 1000) / 1000 }
  }

  /** The most probable entry of all; found once, since the dialogue asks for it at several of its steps. */
  top (): RankedEntry | undefined {
    if (this.#top !== null) return this.#top
    const probabilities = this.#probabilities
    let best = 0
    if (probabilities !== undefined) for (let i = 1; i < this.#entries.length; i++) if (probabilities[i]! > probabilities[best]!) best = i
    this.#top = probabilities === undefined ? undefined : this.#choice(best)
    return this.#top
  }

  #choice (index: number): RankedEntry | undefined {
    if (index < 0) return undefined
    const { answer } = this.#entries[index]!
    const confidence = Math.round(this.#probabilities![index]! * 1000) / 1000
    return answer === undefined ? { confidence } : { answer, confidence }
  }
}

/**
 * Which entries belong to which requests, worked out once from the pack: a message asks about a few sets of requests,
 * each tested against every entry.
 */
class EntryMembership {
  /** For each request, 1 at each entry of it. */
  readonly #byIntent = new Map<IntentName, Uint8Array>()
  readonly #none: Uint8Array
  /** The union of several requests' entries: scratch space, valid until the next `of`. */
  readonly #union: Uint8Array

  constructor (entries: readonly Entry[]) {
    this.#none = new Uint8Array(entries.length)
    this.#union = new Uint8Array(entries.length)
    for (const [index, entry] of entries.entries()) {
      for (const intent of entry.intents) {
        let member = this.#byIntent.get(intent)
        if (member === undefined) this.#byIntent.set(intent, member = new Uint8Array(entries.length))
        member[index] = 1
      }
    }
  }

  /** 1 at each entry of one of `intents`, 0 elsewhere; read it before the next call. */
  of (intents: ReadonlySet<IntentName>): Uint8Array {
    if (intents.size === 1) {
      const [intent] = intents
      return this.#byIntent.get(intent!) ?? this.#none
    }
    const union = this.#union
    union.fill(0)
    for (const intent of intents) {
      const member = this.#byIntent.get(intent)
      if (member === undefined) continue
      for (let i = 0; i < member.length; i++) union[i]! |= member[i]!
    }
    return union
  }
}

interface Posting {
  entries: Int32Array
  weights: Float64Array
  /** The pass over a message's stems that last added it (AnswerSelector's `#pass`). */
  addedIn: number
  /** The term is one of TIME_WORDS. */
  asksTime: boolean
  /** The term is one of PRICE_WORDS. */
  asksPrice: boolean
}

/** Stems of the words a question opens or goes on with that name nothing ("ok how quick is that then"). */
const DISCOURSE_WORDS = ['ok', 'okai', 'alright', 'right', 'then', 'hmm', 'well']

/**
 * Stems of the English words that ask when or how long without naming what ("how many days does it normally take?"),
 * with the verbs such a question is built with: a question of time made of them and of the active request's words is
 * about that request.
 */
const TIME_WORDS: ReadonlySet<string> = new Set([
  'how', 'long', 'fast', 'quick', 'quickli', 'soon', 'mani', 'dai', 'busi', 'week', 'time', 'when', 'till', 'until',
  'take', 'suppos', 'meant', 'usual', 'normal', 'expect', 'gener', 'typic', 'wait', 'doe', 'do', 'did', 'should', 'will',
  'would', 'can', 'could', 'get', ...DISCOURSE_WORDS
])

/**
 * Stems of the English words that ask what something costs without naming what ("is that free?", "does it cost
 * anything?", "how much is it"): a question of price made of them and of the active request's words is about that
 * request.
 */
const PRICE_WORDS: ReadonlySet<string> = new Set([
  'free', 'cost', 'much', 'price', 'pai', 'charg', 'fee', 'anyth', 'extra', 'monei', 'how', 'doe', 'do', 'will', 'would',
  'have', 'need', 'must', 'get', 'that', 'it', 'thi', ...DISCOURSE_WORDS
])

function addPosting (scores: number[], posting: Posting): void {
  for (let i = 0; i < posting.entries.length; i++) scores[posting.entries[i]!]! += posting.weights[i]!
}

/**
 * Scores to probabilities, in place; the entries no term matched share one value, computed once, which is returned
 * (as a probability) for the answers ranked as if no term matched them.
 */
function softmax (scores: number[], temperature: number): number {
  let max = 0
  for (let i = 0; i < scores.length; i++) if (scores[i]! > max) max = scores[i]!
  const unmatched = Math.exp(-max / temperature)
  let sum = 0
  for (let i = 0; i < scores.length; i++) {
    scores[i] = scores[i] === 0 ? unmatched : Math.exp((scores[i]! - max) / temperature)
    sum += scores[i]!
  }
  for (let i = 0; i < scores.length; i++) scores[i]! /= sum
  return unmatched / sum
}
