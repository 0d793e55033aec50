import { CAPTURE_TIME_SOURCES, type RawTagValues } from './read-args.ts'

// ExifTool prints dates as "YYYY:MM:DD HH:MM:SS[.fff][±HH:MM|Z]"; XMP and IPTC may record only the date.
const EXIF_DATE = /^(\d{4})[:-](\d{2})[:-](\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/
const EXIF_TIME = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?\s*(Z|[+-]\d{2}:?\d{2})?$/
const OFFSET = /^(Z|[+-]\d{2}:?\d{2})$/
const SUB_SECONDS = /^\d{1,9}$/

/**
 * The capture time as ISO 8601: sub-seconds and a UTC offset only where the file records them; a zone is never
 * guessed. null when no source holds a real calendar date.
 */
export function captureTime (tags: RawTagValues): string | null {
  for (const source of CAPTURE_TIME_SOURCES) {
    const date = text(tags[source.date])
    if (date === undefined) continue
    const combined = source.time === undefined ? date : joinDateAndTime(date, text(tags[source.time]))
    const iso = toIsoDateTime(combined, text(tags[source.subSeconds ?? '']), text(tags[source.offset ?? '']))
    if (iso !== null) return iso
  }
  return null
}

function joinDateAndTime (date: string, time: string | undefined): string {
  if (time === undefined || !EXIF_TIME.test(time)) return date
  return `${date} ${time}`
}

/** Builds the ISO form of one recorded date, or null when it is not a real date (e.g. "0000:00:00 00:00:00"). */
export function toIsoDateTime (value: string, subSeconds?: string, offset?: string): string | null {
  const match = EXIF_DATE.exec(value)
  if (match === null) return null
  const [, year, month, day, hour, minute, second, fraction, inlineOffset] = match
  if (!isCalendarDate(Number(year), Number(month), Number(day))) return null
  let iso = `${year}-${month}-${day}`
  if (hour === undefined || minute === undefined) return iso
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) return null
  iso += `T${hour}:${minute}:${second ?? '00'}`
  const digits = fraction ?? (subSeconds !== undefined && SUB_SECONDS.test(subSeconds) ? subSeconds : undefined)
  if (digits !== undefined) iso += `.${digits}`
  const zone = inlineOffset ?? (offset !== undefined && OFFSET.test(offset) ? offset : undefined)
  if (zone !== undefined) iso += normalizeOffset(zone)
  return iso
}

function normalizeOffset (zone: string): string {
  if (zone === 'Z') return 'Z'
  const digits = zone.replace(':', '')
  return `${digits.slice(0, 3)}:${digits.slice(3)}`
}

function isCalendarDate (year: number, month: number, day: number): boolean {
  if (year < 1 || month < 1 || month > 12 || day < 1) return false
  const lastOfMonth = new Date(0)
  lastOfMonth.setUTCFullYear(year, month, 0)
  return day <= lastOfMonth.getUTCDate()
}

function text (value: unknown): string | undefined {
  if (typeof value === 'number') return String(value)
  if (typeof value !== 'string') return undefined
  const trimmed = value.trim()
  return trimmed.length > 0 ? trimmed : undefined
}
