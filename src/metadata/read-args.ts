// What the service asks ExifTool for, and the names of the tags its answer is read from: the one module the mapping
// modules (tags.ts, capture-time.ts, provenance/) and the extractor share, so that none of them imports another.

import type { ImageFormat } from './formats.ts'

/** ExifTool's JSON, keyed "Group:Tag" (family-1 groups, `-G1`), numeric values as numbers (`-n`). */
export type RawTagValues = Readonly<Record<string, unknown>>

/**
 * Where camera make and model are recorded, best first; CanonRaw and SigmaRaw are CRW's and X3F's own records, CIFF
 * the CIFF block of an early Canon PowerShot's JPEG.
 */
export const MAKE_TAGS = ['IFD0:Make', 'XMP-tiff:Make', 'Keys:Make', 'UserData:Make', 'PNG:Make', 'QuickTime:Make', 'CanonRaw:Make', 'CIFF:Make', 'SigmaRaw:Make']
export const MODEL_TAGS = ['IFD0:Model', 'XMP-tiff:Model', 'Keys:Model', 'UserData:Model', 'PNG:Model', 'QuickTime:Model', 'CanonRaw:Model', 'CIFF:Model', 'SigmaRaw:Model']
/**
 * Maker-note tags that name the model, and the maker whose notes they are: read (print-converted, a second, rare
 * read) only when no make or model is recorded elsewhere. ExifTool names Canon's model IDs ("EOS R5").
 */
export const MAKER_NOTE_MODELS = [{ tag: 'Canon:CanonModelID', make: 'Canon' }]
/** Composite GPS tags are signed (south and west negative); XMP's own are signed too. */
export const LATITUDE_TAGS = ['Composite:GPSLatitude', 'XMP-exif:GPSLatitude']
export const LONGITUDE_TAGS = ['Composite:GPSLongitude', 'XMP-exif:GPSLongitude']
export const ALTITUDE_TAGS = ['Composite:GPSAltitude']

export interface CaptureTimeSource {
  date: string
  time?: string
  subSeconds?: string
  offset?: string
}

/**
 * Where the moment a photo was taken is recorded, best first. The EXIF original date comes with its own sub-second
 * and offset tags; XMP and QuickTime carry them inside the value; IPTC splits date and time.
 */
export const CAPTURE_TIME_SOURCES: readonly CaptureTimeSource[] = [
  { date: 'ExifIFD:DateTimeOriginal', subSeconds: 'ExifIFD:SubSecTimeOriginal', offset: 'ExifIFD:OffsetTimeOriginal' },
  { date: 'ExifIFD:CreateDate', subSeconds: 'ExifIFD:SubSecTimeDigitized', offset: 'ExifIFD:OffsetTimeDigitized' },
  // Canon's CRW records it in its own CIFF heap, not in EXIF; so do early PowerShots in a CIFF block of their JPEGs.
  { date: 'CanonRaw:DateTimeOriginal' },
  { date: 'CIFF:DateTimeOriginal' },
  { date: 'XMP-exif:DateTimeOriginal' },
  { date: 'XMP-photoshop:DateCreated' },
  { date: 'XMP-xmp:CreateDate' },
  { date: 'IPTC:DateCreated', time: 'IPTC:TimeCreated' },
  { date: 'Keys:CreationDate' },
  { date: 'UserData:DateTimeOriginal' },
  { date: 'QuickTime:CreationDate' },
  { date: 'QuickTime:CreateDate' }
]

/** The provenance tags: what made or edited the image, its XMP history, its declared source type. */
export const SOFTWARE_TAGS = ['IFD0:Software', 'XMP-xmp:CreatorTool']
export const HISTORY_TAG = 'XMP-xmpMM:History'
export const DIGITAL_SOURCE_TYPE_TAG = 'XMP-iptcExt:DigitalSourceType'
/**
 * The claim generator as ExifTool reads it from a C2PA manifest store: CBOR for released C2PA, JSON for the
 * pre-release manifests c2pa-rs no longer reads. Used only when the validator could not say (or was not asked).
 */
export const CLAIM_GENERATOR_TAGS = ['CBOR:Claim_generator', 'JSON:Claim_generator']
/** C2PA 2 claims name their generator in claim_generator_info instead. */
export const CLAIM_GENERATOR_INFO_TAGS = { name: 'CBOR:Claim_Generator_InfoName', version: 'CBOR:Claim_Generator_InfoVersion' }

/** Groups that are the C2PA manifest store itself: summarised under content_credentials, never dumped as tags. */
export const MANIFEST_STORE_GROUPS = new Set(['JUMBF', 'CBOR'])

/**
 * ExifTool arguments for the provenance tags, read with the summary. `-struct` keeps each History event whole (flat
 * lists would lose which software and time belong to which action when one is missing).
 */
const PROVENANCE_READ_ARGS = ['-struct', ...SOFTWARE_TAGS.map((tag) => `-${tag}`), `-${HISTORY_TAG}`, `-${DIGITAL_SOURCE_TYPE_TAG}`,
  '-Claim_generator', '-Claim_generator_infoName', '-Claim_generator_infoVersion']

/** The tag name without its group. */
function name (tag: string): string {
  return tag.split(':')[1]!
}

/** The tags ExifTool is asked for to find the capture time. */
const CAPTURE_TIME_TAGS = [...new Set(CAPTURE_TIME_SOURCES.flatMap((source) =>
  [source.date, source.subSeconds, source.offset, source.time].filter((tag) => tag !== undefined).map(name)
))]

/** The tags the summary needs; every group's copy of each (`-a -G1`) so the mapping chooses the source. */
const SUMMARY_TAGS = [...new Set(['Make', 'Model', 'GPSLatitude', 'GPSLongitude', 'GPSAltitude', ...CAPTURE_TIME_TAGS])]
  .map((tag) => `-${tag}`)
/** The image's size as ExifTool picks it; for raw, the full-size image among the file's (the sniff cannot tell them apart). */
export const RAW_SIZE_TAG = 'Composite:ImageSize'
/** X3F: ExifTool's ImageSize is the embedded preview's; the X3F header records the image's own. */
export const X3F_SIZE_TAGS = ['SigmaRaw:ImageWidth', 'SigmaRaw:ImageHeight']

/**
 * How far ExifTool may cut corners per format. `-fast2` also skips maker notes (the costly part of a camera
 * JPEG) but stops at a PNG's IDAT and a QuickTime/HEIF `mdat`, where some writers put metadata after the pixels; those
 * formats get `-fast`, which only skips trailers. `-fast2` also skips a JPEG's CIFF block.
 */
function fastLevel (format: ImageFormat, options: SummaryReadOptions): '-fast' | '-fast2' {
  switch (format) {
    case 'jpeg': return options.embeddedCiff === true ? '-fast' : '-fast2'
    case 'tiff': case 'webp': return '-fast2'
    // Camera raw: the maker notes are where some cameras keep their make and model.
    default: return '-fast'
  }
}

export interface SummaryReadOptions {
  /** The JPEG keeps its camera data in a CIFF block. */
  embeddedCiff?: boolean
}

/**
 * ExifTool arguments for the summary the API returns: only the tags it needs, numbers unformatted (`-n`); the
 * image's size too when the sniff could not tell it (camera raw, HEIF, or a file too large to search for it).
 */
export function summaryReadArgs (format: ImageFormat, needsSize: boolean, options: SummaryReadOptions = {}): string[] {
  const size = !needsSize ? [] : format === 'x3f' ? X3F_SIZE_TAGS.map((tag) => `-${tag}`) : [`-${RAW_SIZE_TAG}`]
  return [fastLevel(format, options), '-n', '-a', '-G1', ...SUMMARY_TAGS, ...size, ...PROVENANCE_READ_ARGS]
}

/** ExifTool arguments for the maker-note read behind cameraFromMakerNotes: print-converted, maker notes included. */
export const MAKER_NOTE_READ_ARGS = ['-fast', '-a', '-G1', ...MAKER_NOTE_MODELS.map(({ tag }) => `-${tag}`)]

/** The forensic read (`?full=true`): every tag, grouped by family-1 group, print-converted as ExifTool shows them. */
export const FULL_READ_ARGS = ['-a', '-u', '-g1']
