/** Calendar dates as the chat reasons with them: `YYYY-MM-DD` strings, days counted in UTC. */

const DAY_MS = 86_400_000

/** Today's date in UTC, as YYYY-MM-DD. */
export function utcDate (instant: Date): string {
  return dateOf(isoTimestamp(instant))
}

/**
 * `instant.toISOString()`, written out here for the years 0–9999 (every other instant, an invalid one included, is
 * left to it): Date#toISOString formats in C++ through printf, several times slower than this, and every chat message
 * stamps a time or two.
 */
export function isoTimestamp (instant: Date): string {
  const year = instant.getUTCFullYear()
  if (!(year >= 0 && year <= 9999)) return instant.toISOString()
  const ms = instant.getUTCMilliseconds()
  return `${String(year).padStart(4, '0')}-${twoDigits(instant.getUTCMonth() + 1)}-${twoDigits(instant.getUTCDate())}` +
    `T${twoDigits(instant.getUTCHours())}:${twoDigits(instant.getUTCMinutes())}:${twoDigits(instant.getUTCSeconds())}` +
    `.${ms < 10 ? `00${ms}` : ms < 100 ? `0${ms}` : String(ms)}Z`
}

function twoDigits (value: number): string {
  return value < 10 ? `0${value}` : String(value)
}

/** The date of an ISO 8601 UTC time stamp (`toISOString`'s), as YYYY-MM-DD. */
export function dateOf (timestamp: string): string {
  return timestamp.slice(0, 10)
}

/** A YYYY-MM-DD string that names a real calendar day (no 2026-02-30). */
export function isCalendarDate (text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false
  return isoDate(dayNumber(text)) === text
}

/** Days since 1970-01-01 of a YYYY-MM-DD date. */
export function dayNumber (date: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number]
  return Math.floor(Date.UTC(year, month - 1, day) / DAY_MS)
}

/** The YYYY-MM-DD date of a day number. */
export function isoDate (dayNumber: number): string {
  return new Date(dayNumber * DAY_MS).toISOString().slice(0, 10)
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/** A YYYY-MM-DD date as a reply writes it to a customer: "December 2, 2026". Anything else is left as it is. */
export function writtenDate (date: string): string {
  if (!isCalendarDate(date)) return date
  const [year, month, day] = date.split('-').map(Number) as [number, number, number]
  return `${MONTHS[month - 1]!} ${day}, ${year}`
}
