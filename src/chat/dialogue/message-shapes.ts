import { contentWordCount, stemsOf } from '../answers/terms.ts'
import { isSupportIntent } from '../intents.ts'
import type { Understanding } from '../nlu/understand.ts'
import type { MessageSlots } from './slots.ts'

/*
 * What a message's words look like, read without the conversation: a fragment that leaves its question to the last
 * one, a street address, a short yes, taking note, thanks or goodbye. The dialogue policy decides what they mean.
 */

/** A date or order number with at most this many other words that say something is a value given, not a request. */
export const MAX_VALUE_AROUND = 3
/** An acknowledgement is a few words ("ok got it", "sounds good to me"); a longer message says something more. */
const MAX_ACKNOWLEDGEMENT_WORDS = 3
/** How sure the model must be of a goodbye said with words that also take note ("lovely"). */
const SURE_GOODBYE = 0.9
const NUMBER = /\d/
const WORD_RUN = /[a-z0-9]+/g
const STREET_WORDS: ReadonlySet<string> = new Set([
  'street', 'st', 'road', 'rd', 'lane', 'ln', 'avenue', 'ave', 'drive', 'dr', 'close', 'way', 'court', 'ct', 'crescent',
  'boulevard', 'blvd', 'place', 'pl', 'terrace', 'square', 'sq', 'highway', 'hwy', 'parkway', 'row', 'gardens', 'grove'
])
const UNIT_WORDS: ReadonlySet<string> = new Set(['apt', 'apartment', 'flat', 'suite', 'unit'])

/**
 * A follow-up that leaves its question to the last one: "and…", "what about…", "how about…", after a short
 * acknowledgement or in shorthand ("ok n gift cards?", "& express?").
 */
const ELLIPSIS = /^\s*(?:(?:ok(?:ay)?|k|oh|right|cool|great)[\s,.!]+)?(?:and\b|n\b|&|what about\b|how about\b)/i

/** A follow-up that opens as ELLIPSIS does and names no more than a few things after its opening. */
export function isFragment (text: string): boolean {
  const opening = ELLIPSIS.exec(text)
  return opening !== null && contentWordCount(stemsOf(text.slice(opening[0].length))) <= MAX_VALUE_AROUND
}

/**
 * Whether a message gives a street address: a house number within a few words before a street word ("14 birch
 * lane"), or a flat or unit with its number ("apt 3"). Read on words, in one pass.
 */
export function isStreetAddress (text: string): boolean {
  const words = text.toLowerCase().match(WORD_RUN) ?? []
  let lastNumber = -Infinity
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!
    if (NUMBER.test(word)) {
      if (i > 0 && UNIT_WORDS.has(words[i - 1]!)) return true
      lastNumber = i
    } else if (STREET_WORDS.has(word) && i - lastNumber <= 4) return true
  }
  return false
}

/** A short yes ("yes please", "ok", "sure"), not a request of its own. */
export function isYes (message: MessageSlots, understanding: Understanding): boolean {
  if (!message.cues.has('affirm') || message.cues.has('deny') || message.contentWords > 3) return false
  return !sureOfRequest(understanding)
}

/** A message that only takes note ("ok", "got it", "perfect"), with no request the model is sure of. */
function isAcknowledgement (message: MessageSlots, understanding: Understanding): boolean {
  if (!message.cues.has('acknowledge') || message.contentWords > MAX_ACKNOWLEDGEMENT_WORDS) return false
  return !sureOfRequest(understanding)
}

/** Whether the model is sure (over 0.8) the message is a support request. */
function sureOfRequest (understanding: Understanding): boolean {
  return understanding.status === 'understood' && isSupportIntent(understanding.intent) && understanding.confidence > 0.8
}

/** Declining what was offered: "dont need a refund", "not worth a complaint", "no need". */
const DECLINING = /\b(?:do not|dont|don't|don’t) (?:need|want)\b|\bnot worth\b|\bno need\b/i
/** A message that goes on to another request after what it reports or thanks for. */
const FURTHER_REQUEST = /\b(?:also|as well|another thing)\b/i

/**
 * Thanks or goodbye when the message is one, whatever the model made of the words beside it: a courtesy beside a
 * statement of what the customer will do ("ok I'll check my spam, thanks") is still a courtesy; goodbye wins over
 * thanks ("thanks, bye").
 */
export function courtesyOf (understanding: Understanding, message: MessageSlots, text: string): 'thanks' | 'goodbye' | undefined {
  const { cues } = message
  const social = understanding.intent === 'thanks' || understanding.intent === 'goodbye'
  const noted = isAcknowledgement(message, understanding)
  const courteous = cues.has('thanks') || cues.has('goodbye') || noted
  // A step reported done names the request it did ("done, password changed"): that asks nothing.
  // Nor does what the customer says they will do, with thanks or goodbye ("ok I'll just send it back when it comes.
  // thanks", "ok ill do the swap, bye").
  // (Unless it goes on to another request: "done thanks. oh also can i add my office as a second address".)
  // Nor does declining what was offered, with thanks ("perfect thank you!! just the screws is fine, dont need a
  // refund", "nah not worth a complaint really… thanks").
  const declines = !text.includes('?') && DECLINING.test(text)
  const asks = message.asks && !declines && !((cues.has('done') || (cues.has('own_plan') && (cues.has('thanks') || cues.has('goodbye')))) && !text.includes('?') && !FURTHER_REQUEST.test(text))
  if (!social && !(courteous && !asks && !message.cues.has('not_helped') && message.situation === undefined)) return undefined
  // Taking note with no goodbye word ("right, good to know") leaves the conversation open.
  // The model's goodbye for a message that says thanks and no goodbye word is a guess ("ok I'll wait till monday. thanks").
  // (Unless the model is sure of it: "have a lovely weekend!" takes no note, whatever "lovely" says elsewhere.)
  const sureGoodbye = understanding.intent === 'goodbye' && understanding.confidence >= SURE_GOODBYE
  if (cues.has('goodbye') || (understanding.intent === 'goodbye' && (!noted || sureGoodbye) && !cues.has('thanks'))) return 'goodbye'
  return 'thanks'
}
