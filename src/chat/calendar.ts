/** Calendar dates as the chat reasons with them: `YYYY-MM-DD` strings, days counted in UTC. */

const DAY_MS = 86_400_000

/** Today's date in UTC, as YYYY-MM-DD. */
export function utcDate (instant: Date): string {
  return dateOf(instant.toISOString())
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
