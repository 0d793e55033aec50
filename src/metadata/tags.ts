import { CAPTURE_TIME_TAGS } from './capture-time.ts'
import type { ImageFormat } from './formats.ts'
import { MANIFEST_STORE_GROUPS, PROVENANCE_READ_ARGS } from './provenance/provenance.ts'

/** ExifTool's JSON, keyed "Group:Tag" (family-1 groups, `-G1`), numeric values as numbers (`-n`). */
export type RawTagValues = Readonly<Record<string, unknown>>

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

/** Where camera make and model are recorded, best first; CanonRaw and SigmaRaw are CRW's and X3F's own records. */
const MAKE_TAGS = ['IFD0:Make', 'XMP-tiff:Make', 'Keys:Make', 'UserData:Make', 'PNG:Make', 'QuickTime:Make', 'CanonRaw:Make', 'SigmaRaw:Make']
const MODEL_TAGS = ['IFD0:Model', 'XMP-tiff:Model', 'Keys:Model', 'UserData:Model', 'PNG:Model', 'QuickTime:Model', 'CanonRaw:Model', 'SigmaRaw:Model']
/**
 * Maker-note tags that name the model, and the maker whose notes they are: read (print-converted, a second, rare
 * read) only when no make or model is recorded elsewhere. ExifTool names Canon's model IDs ("EOS R5").
 */
const MAKER_NOTE_MODELS = [{ tag: 'Canon:CanonModelID', make: 'Canon' }]
/** Composite GPS tags are signed (south and west negative); XMP's own are signed too. */
const LATITUDE_TAGS = ['Composite:GPSLatitude', 'XMP-exif:GPSLatitude']
const LONGITUDE_TAGS = ['Composite:GPSLongitude', 'XMP-exif:GPSLongitude']
const ALTITUDE_TAGS = ['Composite:GPSAltitude']

/** The tags the summary needs; every group's copy of each (`-a -G1`) so the mapping chooses the source. */
const SUMMARY_TAGS = [...new Set(['Make', 'Model', 'GPSLatitude', 'GPSLongitude', 'GPSAltitude', ...CAPTURE_TIME_TAGS])]
  .map((tag) => `-${tag}`)
/** The image's size as ExifTool picks it; for raw, the full-size image among the file's (the sniff cannot tell them apart). */
const RAW_SIZE_TAG = 'Composite:ImageSize'
/** X3F: ExifTool's ImageSize is the embedded preview's; the X3F header records the image's own. */
const X3F_SIZE_TAGS = ['SigmaRaw:ImageWidth', 'SigmaRaw:ImageHeight']

/**
 * How far ExifTool may cut corners per format. `-fast2` also skips maker notes (the costly part of a camera
 * JPEG) but stops at a PNG's IDAT and a QuickTime/HEIF `mdat`, where some writers put metadata after the pixels; those
 * formats get `-fast`, which only skips trailers.
 */
function fastLevel (format: ImageFormat): '-fast' | '-fast2' {
  switch (format) {
    case 'jpeg': case 'tiff': case 'webp': return '-fast2'
    // Camera raw: the maker notes are where some cameras keep their make and model.
    default: return '-fast'
  }
}

/**
 * ExifTool arguments for the summary the API returns: only the tags it needs, numbers unformatted (`-n`); the
 * image's size too when the sniff could not tell it (camera raw, or a file too large to search for it).
 */
export function summaryReadArgs (format: ImageFormat, needsSize: boolean): string[] {
  const size = !needsSize ? [] : format === 'x3f' ? X3F_SIZE_TAGS.map((tag) => `-${tag}`) : [`-${RAW_SIZE_TAG}`]
  return [fastLevel(format), '-n', '-a', '-G1', ...SUMMARY_TAGS, ...size, ...PROVENANCE_READ_ARGS]
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

/** ExifTool arguments for the maker-note read behind cameraFromMakerNotes: print-converted, maker notes included. */
export const MAKER_NOTE_READ_ARGS = ['-fast', '-a', '-G1', ...MAKER_NOTE_MODELS.map(({ tag }) => `-${tag}`)]

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

/** The forensic read (`?full=true`): every tag, grouped by family-1 group, print-converted as ExifTool shows them. */
export const FULL_READ_ARGS = ['-a', '-u', '-g1']

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
