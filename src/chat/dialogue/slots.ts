import { contentWordCount, readWords, stemsOf } from '../answers/terms.ts'
import { deliveryOptionFact } from '../domain-pack/policy-facts.ts'
import type { DomainSlots } from '../domain-pack/schema.ts'
import type { SupportIntent } from '../intents.ts'

/** What a message does in the conversation, by the pack's cue phrases (`slots.yaml`). */
export type Cue = keyof DomainSlots['cues']

/** The slots one message fills and the cues it carries, read from its words. */
export interface MessageSlots {
  /** What happened to the item or parcel: a value of `item_situation` (`broke_in_use`, `wrong_item`…). */
  situation?: string
  /** `prefers_exchange` or `prefers_refund`. */
  preference?: string
  /** How the account stands: `no_account`, `compromised`. */
  account?: string
  /** The payment methods of the pack's list that the message names, in its order ("PayPal or amex?"). */
  paymentMethods?: readonly string[]
  /** The delivery options of the pack's list that the message names, as the facts about them (`delivery_options.express`). */
  deliveryOptions?: readonly string[]
  /** What the message tells has become of the order, a case answers suppose (`shipped`), unless it asks whether. */
  case?: string
  /** The message asks whether something happened, and only that ("has it shipped yet?"). */
  asksWhether?: true
  cues: ReadonlySet<Cue>
  /** Where each cue is first found (its stem's index): of two questions in one message, the first says what it is. */
  cueAt?: Partial<Record<Cue, number>>
  /** The message asks something or asks for something: a question mark, or a word of the `request` cue. */
  asks: boolean
  /** How many words it has that say something (not "the", "my", "is", numbers…). */
  contentWords: number
}

/**
 * The dialogue's slots between messages: small values, so that a conversation stays small. The order number,
 * purchase date and e-mail are the conversation's facts (`order_id`, `purchase_date`, `email`); the active request is
 * its topic, and the request waiting for an order number its `pendingIntent`.
 */
export interface Slots {
  /** What happened to the item or parcel of the active request. */
  situation?: string
  /** Refund or exchange. */
  preference?: string
  /** How the customer's account stands. */
  account?: string
  /** What the assistant asked and waits for: what the customer needs (after a statement), or whether they want a person. */
  pending?: PendingQuestion
  /** Requests the customer made in the same message as another, to come to next: at most MAX_QUEUED. */
  queued?: SupportIntent[]
  /** What the last replies said (an answer id, or an intent and its reply situation), newest last: at most MAX_RECENT. */
  recent?: string[]
  /** The last reply handed the conversation to a person. */
  handedOff?: boolean
}

export type PendingQuestion = 'request' | 'offer_person'

export const MAX_QUEUED = 2
/** Cues matched on words: stems lose the tense, and "I order" is no purchase yet. */
const WORD_CUES: ReadonlySet<string> = new Set(['purchase'])
/** Words that only colour what they stand in ("really", "simply"), as stems: skipped when phrases are matched. */
const FILLERS: ReadonlySet<string> = new Set(['realli', 'veri', 'honestli', 'total', 'complet', 'simpli'])
/** Words that deny what follows them ("it's not broken", "no damage"), as stems. */
const NEGATIONS: ReadonlySet<string> = new Set(['not', 'no', 'never', 'noth', 'nor', 'without'])
/** How many stems before a situation phrase a negation denies it: "it isn't even broken". */
const NEGATION_REACH = 2
/** Replies remembered so that none is repeated within three turns. */
export const MAX_RECENT = 3

interface Phrase {
  /** The phrase's stems, or for the cues matched word for word, its words. */
  stems: readonly string[]
  slot: 'item_situation' | 'preference' | 'account' | 'case' | 'payment_method' | 'delivery_option' | 'cue'
  value: string
  /** Its value's place in the slot: the first value that matches wins. */
  rank: number
}

/**
 * Reads the pack's slot phrases in a message: each phrase is a run of word stems, found in one pass over the
 * message's stems (phrases indexed by their first stem).
 */
export class SlotReader {
  readonly #byFirstStem = new Map<string, Phrase[]>()
  /** Cues whose tense matters ("bought", not "buy"), matched on words rather than stems. */
  readonly #byFirstWord = new Map<string, Phrase[]>()

  constructor (slots: DomainSlots, paymentMethods: readonly string[] = [], deliveryOptions: readonly string[] = []) {
    const add = (slot: Phrase['slot'], values: Record<string, readonly string[]>): void => {
      for (const [rank, [value, phrases]] of Object.entries(values).entries()) {
        const byWord = WORD_CUES.has(value)
        const index = byWord ? this.#byFirstWord : this.#byFirstStem
        for (const phrase of phrases) {
          const stems = byWord ? readWords(phrase).words : stemsOf(phrase)
          if (stems.length === 0) continue
          let list = index.get(stems[0]!)
          if (list === undefined) index.set(stems[0]!, list = [])
          list.push({ stems, slot, value, rank })
        }
      }
    }
    add('item_situation', slots.item_situation)
    add('preference', slots.preference)
    add('account', slots.account)
    add('case', slots.cases)
    add('cue', slots.cues)
    add('payment_method', Object.fromEntries(paymentMethods.map((method) => [method, [method, ...slots.payment_method_names[method] ?? []]])))
    add('delivery_option', Object.fromEntries(deliveryOptions.map((option) => [deliveryOptionFact(option), [option, ...slots.delivery_option_names[option] ?? []]])))
  }

  /** The slots and cues of a message whose words and stems (readWords) are given, and whose text is `text`. */
  read (allStems: readonly string[], text: string, words?: readonly string[]): MessageSlots {
    // "doesn't really suit" is "doesn't suit": a phrase matches across the words that only colour it.
    const stems = allStems.some((stem) => FILLERS.has(stem)) ? allStems.filter((stem) => !FILLERS.has(stem)) : allStems
    const best: Partial<Record<Phrase['slot'], Phrase>> = {}
    const cues = new Set<Cue>()
    const cueAt: Partial<Record<Cue, number>> = {}
    const methods: string[] = []
    const options: string[] = []
    const found = (phrase: Phrase, at: number): void => {
      if (phrase.slot === 'payment_method') {
        if (!methods.includes(phrase.value)) methods.push(phrase.value)
      } else if (phrase.slot === 'delivery_option') {
        if (!options.includes(phrase.value)) options.push(phrase.value)
      } else if (phrase.slot === 'cue') {
        cues.add(phrase.value as Cue)
        cueAt[phrase.value as Cue] = Math.min(at, cueAt[phrase.value as Cue] ?? at)
      } else {
        const current = best[phrase.slot]
        if (current === undefined || phrase.rank < current.rank) best[phrase.slot] = phrase
      }
    }
    for (let i = 0; i < (words?.length ?? 0); i++) {
      for (const phrase of this.#byFirstWord.get(words![i]!) ?? []) if (matchesAt(words!, i, phrase.stems)) found(phrase, i)
    }
    for (let i = 0; i < stems.length; i++) {
      const phrases = this.#byFirstStem.get(stems[i]!)
      if (phrases === undefined) continue
      for (const phrase of phrases) {
        if (!matchesAt(stems, i, phrase.stems)) continue
        // What happened to the item or the order, denied ("its not broken or anything, I just hate the colour",
        // "it hasn't shipped yet"), did not happen.
        if ((phrase.slot === 'item_situation' || phrase.slot === 'case') && deniedAt(stems, i)) continue
        // "Thanks for all the help" asks for none.
        if (phrase.value === 'request' && stems[i] === 'help' && thankedFor(stems, i)) continue
        found(phrase, i)
      }
    }
    const whether = asksWhether(text)
    const slots: MessageSlots = { cues, cueAt, asks: text.includes('?') || cues.has('request') || opensQuestion(text), contentWords: contentWordCount(stems) }
    if (whether) slots.asksWhether = true
    if (best.item_situation !== undefined) slots.situation = best.item_situation.value
    if (best.preference !== undefined) slots.preference = best.preference.value
    if (best.account !== undefined) slots.account = best.account.value
    if (best.case !== undefined && !whether) slots.case = best.case.value
    if (methods.length > 0) slots.paymentMethods = methods
    if (options.length > 0) slots.deliveryOptions = options
    return slots
  }
}

/**
 * Whether a message asks without a question mark: it opens as a question does, after a word that acknowledges too
 * ("ok and is shipping free then"), or asks after "so", or ends "or not".
 */
function opensQuestion (text: string): boolean {
  return QUESTION_OPENING.test(text) || (ACKNOWLEDGING_OPENING.test(text) && QUESTION_OPENING.test(text.replace(ACKNOWLEDGING_OPENING, ''))) ||
    QUESTION_AFTER_SO.test(text) || endsOrNot(text)
}

/** "…is the delivery free or not": a question, whatever it opens with (the ending found without a regex's scan). */
function endsOrNot (text: string): boolean {
  let end = text.length
  while (end > 0 && ' \t\n.!'.includes(text[end - 1]!)) end--
  return OR_NOT.test(text.slice(Math.max(0, end - OR_NOT_LENGTH), end))
}
const ACKNOWLEDGING_OPENING = /^\s*(?:ok|okay|oh|right|well|hmm)[\s,]+/i
/** A question asked after what it follows from, without its mark: "they're only $45 so is the delivery free". */
const QUESTION_AFTER_SO = /\bso (?:is|are|does|do|can|will|would)\b/i
const OR_NOT = /\bor not$/i
const OR_NOT_LENGTH = ' or not'.length

/** A question without its question mark: "is that free", "how long does it take", "and is standard free". */
export const QUESTION_OPENING = /^\s*(?:(?:and|but|so|also|or) +)?(?:is|are|does|do|did|can|could|will|would|should|how|what|when|where|why|which)\b/i

function deniedAt (stems: readonly string[], at: number): boolean {
  for (let j = Math.max(0, at - NEGATION_REACH); j < at; j++) if (NEGATIONS.has(stems[j]!)) return true
  return false
}

/** Whether "for" stands within three stems before `at`, after a thanks: "thank you so much for the help". */
function thankedFor (stems: readonly string[], at: number): boolean {
  const start = Math.max(0, at - 3)
  return stems.slice(start, at).includes('for') && stems.slice(0, at).some((stem) => stem === 'thank')
}

function matchesAt (stems: readonly string[], at: number, phrase: readonly string[]): boolean {
  if (at + phrase.length > stems.length) return false
  for (let j = 1; j < phrase.length; j++) if (stems[at + j] !== phrase[j]) return false
  return true
}

/**
 * A question opening with whether something happened ("has it shipped yet?", "did my order go out?"), after LEAD_WORD.
 * (Not "is it…": "is it too late to change the address? it says dispatched" asks the rule in that case.)
 */
const WHETHER_OPENING = /^(?:has|have|did)\s+(?:it|my|the|this|that|they|order)\b/i
/** A word a question may open with before it asks ("ok", "and"). */
const LEAD_WORD = /^(?:and|but|so|ok|okay|also)[\s,]+/i

/**
 * Whether a message asks whether a case holds, and only that: it opens so and asks no second question ("has it
 * shipped? if it has, can I still cancel?" asks what happens then, too).
 */
export function asksWhether (message: string): boolean {
  const text = message.trimStart()
  return WHETHER_OPENING.test(text.replace(LEAD_WORD, '')) && message.indexOf('?') === message.lastIndexOf('?')
}
