import { utcDate } from '../calendar.ts'
import { findDates } from './dates.ts'

/**
 * The one entity recogniser: the intent model reads its spans as placeholders ("order xordernumx"), the dialogue reads
 * their values. Every pattern on the message runs in linear time whatever the input: no two unbounded quantifiers over
 * the same characters meet, and what has to look further is bounded (an e-mail's local part, a code's length). Tokens
 * are classified in code, not by more patterns.
 */
export type EntityKind = 'url' | 'email' | 'date' | 'money' | 'order_number' | 'number'

export interface EntitySpan {
  kind: EntityKind
  /** Offsets in the text the spans were found in. */
  start: number
  end: number
  /** The entity as written; for an order number, without its "#"; for a date, the day it names (YYYY-MM-DD). */
  value: string
  /** A date of which only the day of the month was written ("the 12th"). */
  dayOnly?: boolean
}

/** What a message says besides its intent. */
export interface MessageEntities {
  /** An order number: after "order"/"#", or a code of letters and digits, or a long run of digits. */
  orderId?: string
  email?: string
  /** The first day the message names (YYYY-MM-DD): "2026-03-14", "8 October", "3 days ago", "the 8th". */
  date?: string
  /** The message says the date is when the customer bought, ordered or received it ("I ordered it on the 8th"). */
  dateIsPurchase?: boolean
  /** Only the date's day of the month was written ("it was the 12th"): its month is a guess. */
  dateDayOnly?: boolean
  /**
   * The message is only a short code ("4417", "it's A-12"): an order number if the assistant has just asked for one.
   * (Codes the recogniser is sure of are `orderId`.)
   */
  bareCode?: string
}

/**
 * One token at a time: a URL (`\S+` with nothing after it), an e-mail (bounded parts), an amount after a currency
 * sign (bounded), "#", or a run of letters and digits joined by single "-", "/" or "." (the joiners are not in the
 * runs, so a run splits one way only).
 */
const TOKEN = /(https?:\/\/\S+)|([\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8})|([$€£]\s?\d[\d,]{0,15}(?:\.\d{1,2})?)|(#)|([\p{L}\p{N}]+(?:[-/.][\p{L}\p{N}]+)*)/gu

const ENTITY_HINT = /[\d@]|https?:/i
/** Longest token read as a code or a number; longer runs are words (or noise). */
const MAX_CODE_LENGTH = 64
const ORDER_KEYWORDS = new Set(['order', 'purchase', 'invoice', 'ref', 'reference'])
/** Words between an order keyword and its number: "order number: 123", "order no. 123", "order # 123". */
const ORDER_NUMBER_LABELS = new Set(['number', 'num', 'no', 'nr', 'id', 'is', '#'])
/** Words around a bare code that answers "what is the order number?": "it's 4417", "sure, A-12". */
const ANSWER_FILLERS = new Set(['it', 'its', 's', 'is', 'number', 'sure', 'yes', 'ok', 'okay', 'here', 'my', 'the', 'order', 'no', 'nr', 'num', 'id', '#'])
/** An answer that is only a code is short: "sure, it's #A-1234 thanks". */
const MAX_ANSWER_LENGTH = 48
const CURRENCY_WORDS = new Set(['usd', 'eur', 'gbp', 'dollar', 'dollars', 'euro', 'euros', 'pound', 'pounds', 'bucks'])

const ISO_DATE = /^\d{4}-\d{1,2}-\d{1,2}$/
const NUMERIC_DATE = /^\d{1,2}[/.]\d{1,2}(?:[/.]\d{2,4})?$/
const ORDINAL = /^\d{1,9}(?:st|nd|rd|th)?$/i
const DIGITS = /^\d+$/
const YEAR = /^(?:19|20)\d{2}$/
const GROUPED_NUMBER = /^\d{1,9}(?:[.,-]\d{1,9}){1,6}$/
/** Letters then at least three digits, then anything code-like: ORD123456, A-10042, ab-7781x. */
const LETTERS_THEN_DIGITS = /^[a-z]{1,6}-?\d{3}[a-z0-9-]*$/i
/** At least three digits, a dash, then a part with a letter: 4417-B. */
const DIGITS_DASH = /^\d{3,12}-[a-z0-9-]+$/i
const HAS_LETTER = /[a-z]/i
const HAS_DIGIT = /\d/

interface Token {
  kind: 'url' | 'email' | 'money' | 'hash' | 'word'
  text: string
  start: number
  end: number
}

function tokenize (text: string): Token[] {
  const tokens: Token[] = []
  for (const match of text.matchAll(TOKEN)) {
    const kind = match[1] !== undefined ? 'url' : match[2] !== undefined ? 'email' : match[3] !== undefined ? 'money' : match[4] !== undefined ? 'hash' : 'word'
    tokens.push({ kind, text: match[0], start: match.index, end: match.index + match[0].length })
  }
  return tokens
}

/**
 * The entities of a text, left to right, not overlapping. Dates are resolved against `today` (YYYY-MM-DD, UTC), the
 * most recent such day when the text leaves the year or month open.
 */
export function recogniseEntities (text: string, today: string = utcDate(new Date())): EntitySpan[] {
  const dates = findDates(text, today)
  // A date-shaped token the parser did not read as a day (2026-02-30) is only a number.
  const spans = recogniseTokens(text).map((span): EntitySpan => span.kind === 'date' ? { ...span, kind: 'number' } : span)
  if (dates.length === 0) return spans
  // A date the parser read wins over the numbers inside it; codes, addresses and amounts win over a date.
  const merged = spans.filter((span) => !(span.kind === 'number' && dates.some((date) => overlaps(span, date))))
  for (const date of dates) {
    if (!merged.some((span) => overlaps(span, date))) merged.push({ kind: 'date', start: date.start, end: date.end, value: date.date, ...(date.dayOnly === true ? { dayOnly: true } : {}) })
  }
  return merged.sort((a, b) => a.start - b.start)
}

function overlaps (a: { start: number, end: number }, b: { start: number, end: number }): boolean {
  return a.start < b.end && b.start < a.end
}

/** Entities of single tokens and their neighbours: codes, numbers, amounts, addresses, numeric dates. */
function recogniseTokens (text: string): EntitySpan[] {
  // Every such entity has a digit, "@" or a URL's scheme: most messages have none, and need no tokens.
  if (!ENTITY_HINT.test(text)) return []
  const tokens = tokenize(text)
  const spans: EntitySpan[] = []
  const span = (kind: EntityKind, from: Token, to: Token, value: string): void => {
    spans.push({ kind, start: from.start, end: to.end, value })
  }
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!
    const next = tokens[i + 1]
    switch (token.kind) {
      case 'url':
        span('url', token, token, withoutTrailingPunctuation(token.text))
        continue
      case 'email':
        span('email', token, token, token.text)
        continue
      case 'money':
        span('money', token, token, token.text)
        continue
      case 'hash':
        if (next?.kind === 'word' && next.start - token.end <= 1 && isCodeLike(next.text, 2)) {
          span('order_number', token, next, next.text)
          i++
        }
        continue
      case 'word':
        break
    }
    const word = token.text
    const lower = word.toLowerCase()
    if (ORDER_KEYWORDS.has(lower)) {
      const number = numberAfterKeyword(tokens, i)
      if (number !== undefined) {
        const candidate = tokens[number]!
        span('order_number', tokens[number - 1]?.kind === 'hash' ? tokens[number - 1]! : candidate, candidate, candidate.text)
        i = number
      }
      continue
    }
    if (word.length > MAX_CODE_LENGTH || !HAS_DIGIT.test(word)) continue
    if (ISO_DATE.test(word) || NUMERIC_DATE.test(word)) {
      span('date', token, token, word)
    } else if (isOrderCode(word) && !isPostalCode(tokens, i)) {
      span('order_number', token, token, word)
    } else if ((DIGITS.test(word) || GROUPED_NUMBER.test(word)) && next?.kind === 'word' && CURRENCY_WORDS.has(next.text.toLowerCase())) {
      span('money', token, next, `${word} ${next.text}`)
      i++
    } else if (ORDINAL.test(word) || GROUPED_NUMBER.test(word)) {
      span('number', token, token, word)
    }
  }
  return spans
}

/** The index of the order number after the keyword at `at` ("order no. 5512"), if there is one. */
function numberAfterKeyword (tokens: readonly Token[], at: number): number | undefined {
  for (let i = at + 1; i < tokens.length && i <= at + 3; i++) {
    const token = tokens[i]!
    if (token.kind === 'hash' || (token.kind === 'word' && ORDER_NUMBER_LABELS.has(token.text.toLowerCase()))) continue
    return token.kind === 'word' && isCodeLike(token.text, 3) ? i : undefined
  }
  return undefined
}

/** A code as an order number may be written after "order" or "#": letters, digits and dashes, with a digit. */
function isCodeLike (word: string, minLength: number): boolean {
  return word.length >= minLength && word.length <= MAX_CODE_LENGTH && HAS_DIGIT.test(word) &&
    !word.includes('/') && !word.includes('.') && !YEAR.test(word) && !ISO_DATE.test(word)
}

/**
 * Digits that end a postal address rather than name an order: after a US state's code ("Portland OR 97211") or after
 * "zip", "zip code", "postcode" or "postal code".
 */
function isPostalCode (tokens: readonly Token[], at: number): boolean {
  if (!DIGITS.test(tokens[at]!.text)) return false
  if (tokens[at - 1]?.kind === 'word' && US_STATES.has(tokens[at - 1]!.text)) return true
  // ("zip 97211", "the zip code is 97211")
  for (let i = at - 1; i >= 0 && i >= at - 3; i--) {
    const token = tokens[i]!
    if (token.kind !== 'word') return false
    const word = token.text.toLowerCase()
    if (POSTAL_LABELS.has(word)) return true
    if (word !== 'is' && word !== 'code') return false
  }
  return false
}

const US_STATES: ReadonlySet<string> = new Set(['AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'DC', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY', 'LA', 'ME', 'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND', 'OH', 'OK', 'OR', 'PA', 'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY'])
const POSTAL_LABELS: ReadonlySet<string> = new Set(['zip', 'zipcode', 'postcode', 'postal', 'post'])

/** An order number without a keyword: a code of letters and at least three digits, or five digits or more. */
function isOrderCode (word: string): boolean {
  if (DIGITS.test(word)) return word.length >= 5
  return LETTERS_THEN_DIGITS.test(word) || (DIGITS_DASH.test(word) && HAS_LETTER.test(word))
}

/** The text with each entity replaced by ` <placeholder> ` (`placeholders` names one per kind). */
export function replaceEntities (text: string, spans: readonly EntitySpan[], placeholders: Readonly<Record<EntityKind, string>>): string {
  if (spans.length === 0) return text
  let replaced = ''
  let last = 0
  for (const span of spans) {
    replaced += `${text.slice(last, span.start)} ${placeholders[span.kind]} `
    last = span.end
  }
  return replaced + text.slice(last)
}

const SENTENCE_END = /[.!?;]/
const PURCHASE_WORDS = /\b(?:bought|buy|purchased?|ordered|placed|made|paid|got|received|delivered|arrived|came|order date)\b/i
/** The words that say the customer bought it, not that it came: of two dates, the one they stand by is the purchase. */
const BUYING_WORDS = /\b(?:bought|buy|purchased?|ordered|placed|paid|order date)\b/i

/** Entities in a customer's message; `spans` are its recognised entities when the caller has them already. */
export function extractEntities (message: string, spans: readonly EntitySpan[] = recogniseEntities(message)): MessageEntities {
  const entities: MessageEntities = {}
  const email = spans.find((span) => span.kind === 'email')
  if (email !== undefined) entities.email = email.value
  // "delivered yesterday … bought it on 2026-11-10": the date said to be when they bought it, else the first.
  const dates = spans.filter((span) => span.kind === 'date')
  const date = dates.length < 2 ? dates[0] : dates.find((span) => BUYING_WORDS.test(nearby(message, span))) ?? dates[0]
  if (date !== undefined) {
    entities.date = date.value
    entities.dateIsPurchase = PURCHASE_WORDS.test(nearby(message, date))
    if (date.dayOnly === true) entities.dateDayOnly = true
  }
  const orderId = orderNumberMeant(message, spans)
  if (orderId !== undefined) {
    entities.orderId = orderId.toUpperCase()
  } else {
    const code = answeredCode(message)
    if (code !== undefined) entities.bareCode = code.toUpperCase()
  }
  return entities
}

/**
 * The order number a message means: of several, the one named twice; else the first, unless a later, different one
 * follows words that take the earlier back ("D-81200 I think, or maybe… yes it's D-81220", "52290, sorry I mean 52209";
 * not "52209 not 52290").
 */
function orderNumberMeant (message: string, spans: readonly EntitySpan[]): string | undefined {
  const orders = spans.filter((span) => span.kind === 'order_number')
  if (orders.length === 0) return undefined
  // Of several, one named again is the one meant: "three orders this week (A-50210, A-50233, A-50247). I need to
  // cancel A-50233".
  const values = orders.map((span) => span.value.toUpperCase())
  const repeated = new Set(values.filter((value, i) => values.indexOf(value) !== i))
  if (repeated.size === 1 && new Set(values).size > 1) return orders.findLast((span) => repeated.has(span.value.toUpperCase()))!.value
  let meant = orders[0]!
  for (const span of orders.slice(1)) {
    if (span.value.toUpperCase() !== meant.value.toUpperCase() && TAKEN_BACK.test(message.slice(meant.end, span.start))) meant = span
  }
  return meant.value
}

/** Words between two order numbers that take the first back. */
const TAKEN_BACK = /\b(?:sorry|actually|i mean|wait|yes|correction|rather|oops)\b/i

/** Up to four words on each side of a span, within its sentence: what the span is said about. */
function nearby (message: string, span: EntitySpan): string {
  const before = message.slice(Math.max(0, span.start - 80), span.start).split(SENTENCE_END).at(-1)!.trim().split(/\s+/).slice(-4)
  const after = message.slice(span.end, span.end + 80).split(SENTENCE_END)[0]!.trim().split(/\s+/).slice(0, 4)
  return [...before, ...after].join(' ')
}

/** A message that is only a code answering "what is the order number?": "4417", "it's A-12", "sure, 55-X". */
function answeredCode (message: string): string | undefined {
  if (message.length > MAX_ANSWER_LENGTH || !/\d/.test(message)) return undefined
  let code: string | undefined
  for (const token of tokenize(message)) {
    if (token.kind === 'hash' || (token.kind === 'word' && ANSWER_FILLERS.has(token.text.toLowerCase()))) continue
    if (code !== undefined || token.kind !== 'word' || !isCodeLike(token.text, 3)) return undefined
    code = token.text
  }
  return code
}

/** Sentence punctuation that follows a URL in text rather than belonging to it. */
const URL_TRAILERS = new Set(['.', ',', ';', ':', '!', '?', ')', ']', '}', "'", '"'])

/**
 * A URL without the punctuation after it, trimmed from the end by a loop: the regular expression `[…]+$` would try
 * every run of punctuation inside the URL too, quadratic on a URL of "!!!…" a customer can send.
 */
function withoutTrailingPunctuation (url: string): string {
  let end = url.length
  while (end > 0 && URL_TRAILERS.has(url[end - 1]!)) end--
  return url.slice(0, end)
}
