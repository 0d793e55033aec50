import * as chrono from 'chrono-node'
import { dayNumber, isoDate } from '../calendar.ts'

/** A date a message mentions, resolved against today. */
export interface MentionedDate {
  /** Offsets in the message. */
  start: number
  end: number
  /** YYYY-MM-DD. */
  date: string
  /** Only the day of the month was written ("the 12th"): the month and year are today's or the last month's. */
  dayOnly?: boolean
}

/**
 * Dates in English text, by chrono-node: absolute ("8 October 2026", "10/08", "Nov 8"), relative ("3 days ago",
 * "last week", "yesterday") and "the 8th". Only dates whose day is known count ("last month" does not). When the text
 * leaves the year, month or week open, the date is the most recent one not after today: customers write about what
 * has happened ("I bought it on the 8th", "it came on Monday").
 */
const parser = chrono.casual.clone()
// "the 8th", "on the 3rd": a day of this month (chrono wants a month name with it); not "the 2nd time", "the 3rd one".
parser.parsers.push({
  pattern: () => /\bthe (\d{1,2})(?:st|nd|rd|th)\b(?! (?:times?|ones?|items?|attempts?|try|tries|orders?|parcels?|packages?|box|person|e?mails?|messages?|days?|weeks?|months?|floor|pair|size|call)\b)/i,
  extract: (_context, match) => {
    const day = Number(match[1])
    return day >= 1 && day <= 31 ? { day } : null
  }
})

const MAX_PARSED_LENGTH = 1000
/** Date shapes read in a message at most: a purchase date and a delivery date, corrected, and more besides. */
const MAX_DATE_SHAPES = 16
/**
 * Only text with a date's shape goes through the parser — a month or a weekday, a relative word, an ordinal, digits
 * with "/", "." or "-" between them: most messages have none (an order number or a price alone is no date).
 */
const DATE_HINT = /\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|april|june|july|august|september|october|november|december|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today|tonight|tomorrow|ago|back|last|week|weeks|fortnight|weekend)\b|\d(?:st|nd|rd|th)\b|\d[/.-]\d/gi
/** "this morning": today, which chrono leaves uncertain. */
const THIS_PART_OF_DAY = /\bthis (?:morning|afternoon|evening)\b/i
/** Same-length rewrites chrono understands: "two weeks back" is "two weeks ago ", "a fortnight" two weeks. */
const BACK = /\b(days?|weeks?|months?) back\b/gi
const FORTNIGHT = /\ba fortnight\b/gi
/** Words chrono reads as dates that are usually something else ("may I", "we sat", "the second"). */
const NOT_DATES = new Set(['may', 'march', 'mar', 'sat', 'sun', 'wed', 'second', 'mon', 'fri', 'thu', 'tue', 'jan', 'jun', 'aug', 'now', 'today', 'tonight'])

export function findDates (text: string, today: string): MentionedDate[] {
  if (text.search(DATE_HINT) < 0 && !THIS_PART_OF_DAY.test(text)) return []
  // The parser's work grows with the dates it finds: the first stretch of a long message is where they are, and no
  // message a person writes has more than a few ("10/08 " repeated is 160 of them in that stretch).
  const prepared = firstDateShapes(text.slice(0, MAX_PARSED_LENGTH)).replace(BACK, (_match, unit: string) => `${unit} ago `).replace(FORTNIGHT, '2 weeks    ')
  const reference = { instant: new Date(`${today}T12:00:00Z`), timezone: 0 }
  const dates: MentionedDate[] = []
  for (const result of parser.parse(prepared, reference)) {
    const { start } = result
    const dayKnown = start.isCertain('day') || start.isCertain('weekday') || THIS_PART_OF_DAY.test(result.text)
    if (!dayKnown || NOT_DATES.has(result.text.trim().toLowerCase()) || wishedWeekend(prepared, result.index, result.text)) continue
    let day = dayNumber(`${String(start.get('year')).padStart(4, '0')}-${pad(start.get('month'))}-${pad(start.get('day'))}`)
    const now = dayNumber(today)
    if (day > now) day = mostRecent(day, now, start)
    const dayOnly = start.isCertain('day') && !start.isCertain('month') && !start.isCertain('weekday') && !start.tags().has('result/relativeDate')
    dates.push({ start: result.index, end: result.index + result.text.length, date: isoDate(day), ...(dayOnly ? { dayOnly } : {}) })
  }
  return dates
}

/** "have a lovely weekend": a weekend wished, not one that has been ("last weekend", "at the weekend"). */
function wishedWeekend (text: string, index: number, found: string): boolean {
  if (found.trim().toLowerCase() !== 'weekend') return false
  const before = text.slice(Math.max(0, index - 8), index)
  return !WEEKEND_THAT_WAS.has(before.trimEnd().split(/\s/).at(-1)!.toLowerCase())
}
const WEEKEND_THAT_WAS: ReadonlySet<string> = new Set(['the', 'last', 'this', 'past'])

/** The text up to its MAX_DATE_SHAPES + 1st date shape (DATE_HINT), or all of it. */
function firstDateShapes (text: string): string {
  let count = 0
  for (const match of text.matchAll(DATE_HINT)) {
    if (++count > MAX_DATE_SHAPES) return text.slice(0, match.index)
  }
  return text
}

/** The date moved back by the part the text left open: a year, a month or a week. */
function mostRecent (day: number, now: number, start: chrono.ParsedComponents): number {
  if (start.isCertain('year') || start.tags().has('result/relativeDate')) return day
  const date = isoDate(day)
  const [year, month, dayOfMonth] = date.split('-').map(Number) as [number, number, number]
  if (start.isCertain('month')) return dayNumber(`${year - 1}-${pad(month)}-${pad(dayOfMonth)}`)
  if (start.isCertain('day')) {
    const previous = month === 1 ? `${year - 1}-12` : `${year}-${pad(month - 1)}`
    return dayNumber(`${previous}-${pad(dayOfMonth)}`)
  }
  return day - 7 * Math.ceil((day - now) / 7)
}

function pad (value: number | null): string {
  return String(value ?? 1).padStart(2, '0')
}
