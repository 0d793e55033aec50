import { isCalendarDate } from './return-window.ts'

/** What a message says besides its intent. */
export interface MessageEntities {
  /** An order number: after "order"/"#", or a code of letters and digits, or a long run of digits. */
  orderId?: string
  email?: string
  /** A calendar date written in the message, as YYYY-MM-DD. */
  date?: string
  /** The date is when the customer bought or ordered ("I ordered it on 2026-03-14"). */
  dateIsPurchase?: boolean
}

const EMAIL = /[\w.+-]+@[\w-]+(?:\.[\w-]+)+/
const ORDER_AFTER_KEYWORD = /\b(?:order|purchase|invoice|ref(?:erence)?)(?![a-z])\s*(?:number|num|no\.?|nr\.?|id|#)?\s*[:#]?\s*(#?[a-z0-9][a-z0-9-]{1,63})\b/gi
const HASH_CODE = /#\s?([a-z0-9][a-z0-9-]{1,63})\b/gi
const CODE = /\b([a-z]{1,6}-?\d{3,}[a-z0-9-]*|\d{3,}-[a-z0-9-]*[a-z][a-z0-9-]*|\d{5,})\b/gi
const BARE_NUMBER = /^\s*(?:it(?:'s| is)\s+|its\s+|number\s+|sure[,\s]+|yes[,\s]+)?#?\s?([a-z0-9][a-z0-9-]{2,63})[\s.!]*$/i
const ISO_DATE = /\b(\d{4}-\d{2}-\d{2})\b/
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec']
const DAY_MONTH_YEAR = /\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+(\d{4})\b/i
const MONTH_DAY_YEAR = /\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b/i
const PURCHASE_WORDS = /\b(?:bought|purchased|ordered|order(?:ed)? (?:it )?on|placed|paid|got (?:it|them) on|delivered on|arrived on)\b/i

/**
 * Entities in a customer's message. `expectingOrder` is set when the assistant has just asked for an order number:
 * then a message that is only a short code ("A-1234", "it's 4417") is taken as one.
 */
export function extractEntities (message: string, expectingOrder = false): MessageEntities {
  const entities: MessageEntities = {}
  const email = EMAIL.exec(message)?.[0]
  if (email !== undefined) entities.email = email
  const date = findDate(message)
  if (date !== undefined) {
    entities.date = date
    entities.dateIsPurchase = PURCHASE_WORDS.test(message)
  }
  const withoutNoise = message.replace(EMAIL, ' ').replace(ISO_DATE, ' ').replace(/[$€£]\s?\d[\d,.]*/g, ' ')
  const orderId = findOrderId(withoutNoise, expectingOrder)
  if (orderId !== undefined) entities.orderId = orderId
  return entities
}

function findOrderId (text: string, expectingOrder: boolean): string | undefined {
  for (const pattern of [ORDER_AFTER_KEYWORD, HASH_CODE, CODE]) {
    for (const match of text.matchAll(pattern)) {
      const candidate = match[1]!.replace(/^#/, '')
      if (/\d/.test(candidate) && !isYear(candidate)) return candidate.toUpperCase()
    }
  }
  if (expectingOrder) {
    const candidate = BARE_NUMBER.exec(text)?.[1]
    if (candidate !== undefined && /\d/.test(candidate)) return candidate.toUpperCase()
  }
  return undefined
}

function isYear (candidate: string): boolean {
  return /^(19|20)\d{2}$/.test(candidate)
}

function findDate (text: string): string | undefined {
  const iso = ISO_DATE.exec(text)?.[1]
  if (iso !== undefined && isCalendarDate(iso)) return iso
  const dmy = DAY_MONTH_YEAR.exec(text)
  if (dmy !== null) return calendarDate(dmy[3]!, dmy[2]!, dmy[1]!)
  const mdy = MONTH_DAY_YEAR.exec(text)
  if (mdy !== null) return calendarDate(mdy[3]!, mdy[1]!, mdy[2]!)
  return undefined
}

function calendarDate (year: string, month: string, day: string): string | undefined {
  const monthNumber = MONTHS.indexOf(month.slice(0, 3).toLowerCase()) + 1
  const date = `${year}-${String(monthNumber).padStart(2, '0')}-${day.padStart(2, '0')}`
  return isCalendarDate(date) ? date : undefined
}
