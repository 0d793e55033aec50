import {
  ALTITUDE_TAGS,
  LATITUDE_TAGS,
  LONGITUDE_TAGS,
  MAKE_TAGS,
  MAKER_NOTE_MODELS,
  MANIFEST_STORE_GROUPS,
  MODEL_TAGS,
  RAW_SIZE_TAG,
  X3F_SIZE_TAGS,
  type RawTagValues
} from './read-args.ts'

// Maps ExifTool's answer (read-args.ts says what is asked for) to the API's camera, position and size.

export interface Camera {
  make: string | null
  model: string | null
}

export interface Gps {
  latitude: number
  longitude: number
  altitude: number | null
}

export interface Resolution {
  width: number
  height: number
}

/**
 * The size ExifTool reports (`-n` prints ImageSize "W H"): for a raw file its full-size image; null when it has
 * none.
 */
export function resolutionFromTags (tags: RawTagValues): Resolution | null {
  const [widthTag, heightTag] = X3F_SIZE_TAGS as [string, string]
  if (tags[widthTag] !== undefined) return sizeOf(tags[widthTag], tags[heightTag])
  const value = tags[RAW_SIZE_TAG]
  if (typeof value !== 'string') return null
  const parts = value.trim().split(' ')
  return parts.length === 2 ? sizeOf(parts[0], parts[1]) : null
}

function sizeOf (width: unknown, height: unknown): Resolution | null {
  const w = Number(width)
  const h = Number(height)
  return Number.isSafeInteger(w) && Number.isSafeInteger(h) && w >= 1 && h >= 1 ? { width: w, height: h } : null
}

/** A camera named only in the maker notes (a file whose main IFD records no make or model), or null. */
export function cameraFromMakerNotes (tags: RawTagValues): Camera | null {
  for (const { tag, make } of MAKER_NOTE_MODELS) {
    const name = firstText(tags, [tag])
    // ExifTool prints an ID it does not know as "Unknown (0x…)": no model is named then.
    if (name === null || name.startsWith('Unknown')) continue
    return { make, model: name.startsWith(make) ? name : `${make} ${name}` }
  }
  return null
}

export function cameraFrom (tags: RawTagValues): Camera | null {
  const make = firstText(tags, MAKE_TAGS)
  const model = firstText(tags, MODEL_TAGS)
  if (make === null && model === null) return null
  return { make, model }
}

/**
 * Decimal places kept: 7 for degrees (about 1 cm, finer than any consumer GPS), 3 for metres. EXIF stores
 * degrees, minutes and seconds as rationals; this drops the float noise of adding them up (11.8845382999914 is
 * the 11.8845383 the camera wrote), never a real digit of a phone's or camera's fix.
 */
const DEGREE_DECIMALS = 7
const METRE_DECIMALS = 3

export function gpsFrom (tags: RawTagValues): Gps | null {
  const latitude = firstNumber(tags, LATITUDE_TAGS)
  const longitude = firstNumber(tags, LONGITUDE_TAGS)
  if (latitude === null || longitude === null) return null
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return null
  const altitude = firstNumber(tags, ALTITUDE_TAGS)
  return {
    latitude: roundTo(latitude, DEGREE_DECIMALS),
    longitude: roundTo(longitude, DEGREE_DECIMALS),
    altitude: altitude === null ? null : roundTo(altitude, METRE_DECIMALS)
  }
}

function roundTo (value: number, decimals: number): number {
  // +0 turns a rounded -0 into 0.
  return Number(value.toFixed(decimals)) + 0
}

/**
 * Groups that describe the server rather than the image, never shown: our temporary copy (its name, path,
 * permissions) and the ExifTool that read it (its version tells an attacker which of its flaws to try).
 */
const PRIVATE_GROUPS = new Set(['System', 'SourceFile', 'ExifTool'])

/**
 * ExifTool's grouped JSON for `?full=true`, without what describes our temporary copy rather than the image, and
 * without the C2PA manifest store (reported, validated, under provenance.content_credentials).
 */
export function groupedTagsFrom (tags: RawTagValues): Record<string, unknown> {
  const grouped: Record<string, unknown> = {}
  for (const [group, value] of Object.entries(tags)) {
    if (PRIVATE_GROUPS.has(group) || MANIFEST_STORE_GROUPS.has(group) || group === 'errors' || group === 'warnings') continue
    grouped[group] = value
  }
  return grouped
}

function firstText (tags: RawTagValues, names: readonly string[]): string | null {
  for (const name of names) {
    const value = tags[name]
    const text = typeof value === 'number' ? String(value) : typeof value === 'string' ? value.trim() : ''
    if (text.length > 0) return text
  }
  return null
}

function firstNumber (tags: RawTagValues, names: readonly string[]): number | null {
  for (const name of names) {
    const value = tags[name]
    const number = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
    if (Number.isFinite(number)) return number
  }
  return null
}
