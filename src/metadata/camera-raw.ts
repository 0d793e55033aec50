// Recognises camera raw formats and JPEG XL from a file's own bytes, before ExifTool sees it.
//
// ExifTool decides most TIFF-based raw types (NEF, ARW, PEF, 3FR, ...) from the file name's extension, not the
// content, and the scratch file it reads is named by what we decide here: so this decision is the one that counts.
// Input is untrusted: every read is bounds-checked against the head, loops are capped, nothing throws, and
// anything odd gives `undefined` (not a raw we accept) rather than a guess.

import { asciiAt, bytesAt, tiffByteOrder, u16, u32 } from './binary-reader.ts'
import { boxAt, findChildBox } from './iso-bmff.ts'
import { ifdEntries, tiffHeader, type IfdEntry, TYPE_ASCII, TYPE_LONG, TYPE_SHORT } from './tiff-structure.ts'

export const CAMERA_RAW_FORMATS = ['dng', 'cr2', 'cr3', 'crw', 'nef', 'nrw', 'arw', 'srf', 'sr2', 'raf', 'rw2', 'orf', 'pef', 'srw', 'iiq', '3fr', 'erf', 'mrw', 'x3f'] as const
export type CameraRawFormat = typeof CAMERA_RAW_FORMATS[number]

// Real IFD0s have a few dozen entries; the cap bounds the work a hostile count can cause.
const MAX_IFD_ENTRIES = 1000
// Make and Model are short; a longer value is read only this far.
const MAX_TEXT_LENGTH = 256
// CR3 keeps its version box within the first few hundred bytes; the cap bounds the box walk.
const MAX_BOXES = 64

const TAG_NEW_SUBFILE_TYPE = 0x00fe
const TAG_COMPRESSION = 0x0103
const TAG_PHOTOMETRIC = 0x0106
const TAG_MAKE = 0x010f
const TAG_MODEL = 0x0110
const TAG_SUB_IFDS = 0x014a
const TAG_JPEG_OFFSET = 0x0201
const TAG_DNG_VERSION = 0xc612
const TAG_DNG_PRIVATE_DATA = 0xc634

const PHOTOMETRIC_CFA = 32803
const PHOTOMETRIC_LINEAR_RAW = 34892
const COMPRESSION_JPEG = 6

// Canon's metadata box inside a CR3 `moov` (the same UUID also appears in Canon MP4 movies).
const CANON_UUID = [0x85, 0xc0, 0xb6, 0x87, 0x82, 0x0f, 0x11, 0xe0, 0x81, 0x11, 0xf4, 0xce, 0x46, 0x2b, 0x6a, 0x48]
const JXL_CONTAINER_SIGNATURE = [0x00, 0x00, 0x00, 0x0c, 0x4a, 0x58, 0x4c, 0x20, 0x0d, 0x0a, 0x87, 0x0a]

/** The raw format these bytes (the head of a file, up to 512 KiB) are, or undefined. */
export function sniffCameraRaw (head: Uint8Array): CameraRawFormat | undefined {
  return formatFromMagic(head) ?? formatFromTiff(head)
}

/** Whether these bytes start a JPEG XL image: a bare codestream or the ISO BMFF container. */
export function isJpegXl (head: Uint8Array): boolean {
  if (head.length >= 2 && head[0] === 0xff && head[1] === 0x0a) {
    // Two bytes alone are a weak signature: also require a SizeHeader that fits in the bytes.
    return jxlSizeHeaderFits(head, 2)
  }
  if (!bytesAt(head, 0, JXL_CONTAINER_SIGNATURE)) return false
  // The container's second box must be `ftyp` with major brand `jxl ` (as ExifTool and the spec require).
  const ftypSize = u32(head, 12, false)
  return ftypSize !== undefined && ftypSize >= 16 && asciiAt(head, 16, 'ftyp') && asciiAt(head, 20, 'jxl ')
}

function formatFromMagic (head: Uint8Array): CameraRawFormat | undefined {
  const little = tiffByteOrder(head)
  if (little !== undefined && asciiAt(head, 6, 'HEAPCCDR')) return 'crw'
  if (asciiAt(head, 0, '\0MRM')) return 'mrw'
  if (asciiAt(head, 0, 'FOVb')) return 'x3f'
  if (asciiAt(head, 0, 'FUJIFILMCCD-RAW ')) return 'raf'
  if (asciiAt(head, 4, 'ftyp')) return isCanonCr3(head) ? 'cr3' : undefined
  if (little === undefined) return undefined
  const identifier = u16(head, 2, little)
  const ifd0 = u32(head, 4, little)
  if (identifier === undefined || ifd0 === undefined || ifd0 < 8) return undefined
  // Olympus replaces TIFF's 42 with 'RO'/'RS' (read in the file's byte order, so IIRO, IIRS, MMOR and MMSR);
  // ExifTool accepts both values in both byte orders, and so do we.
  if (identifier === 0x4f52 || identifier === 0x5352) return 'orf'
  // Panasonic's 0x55. RWL (Leica) and Panasonic's pre-2008 .RAW share it; none of them is a plain TIFF.
  if (identifier === 0x55) return little ? 'rw2' : undefined
  if (identifier !== 0x2a) return undefined
  // Both signatures sit between the TIFF header and IFD0, so IFD0 must start after them.
  if (ifd0 >= 16 && bytesAt(head, 8, [0x43, 0x52, 0x02, 0x00])) return 'cr2'
  if (ifd0 >= 16 && isPhaseOneHeader(head, 8)) return 'iiq'
  return undefined
}

/**
 * Phase One's maker-note directory, which its IIQ files put right after the TIFF header. This is the test
 * ExifTool's PhaseOne.pm makes for that directory: 'IIII' + any byte + 'waR', or 'MMMMRaw' + any byte.
 * (`IIII\x01\0\0\0` / `MMMM\0\0\0\x01` is the header of its SensorCalibration sub-directory, found inside that
 * directory, never at offset 8, so it is not a file signature.)
 */
function isPhaseOneHeader (head: Uint8Array, at: number): boolean {
  if (asciiAt(head, at, 'IIII') && asciiAt(head, at + 5, 'waR')) return true
  return asciiAt(head, at, 'MMMMRaw') && head.length > at + 7
}

/**
 * ISO BMFF with major brand `crx `. Canon's raw movies (CRM) use the same brand; what tells them apart is the
 * CompressorVersion box (CNCV: 'CanonCR3_…' or 'CanonCRM…') in Canon's uuid box in `moov`, which is also what
 * ExifTool goes by, so it is required here.
 */
function isCanonCr3 (head: Uint8Array): boolean {
  // Boxes may run past the head (`moov` is often larger than it) while the one we need sits at their start.
  const ftyp = boxAt(head, 0, Number.POSITIVE_INFINITY)
  if (ftyp?.type !== 'ftyp' || ftyp.end - ftyp.start < 8 || !asciiAt(head, ftyp.start, 'crx ')) return false
  const budget = { remaining: MAX_BOXES }
  const moov = findChildBox(head, ftyp.end, Number.POSITIVE_INFINITY, budget, box => box.type === 'moov')
  if (moov === undefined) return false
  const canon = findChildBox(head, moov.start, moov.end, budget, box => box.type === 'uuid' && bytesAt(head, box.start, CANON_UUID))
  if (canon === undefined) return false
  const cncv = findChildBox(head, canon.start + 16, canon.end, budget, box => box.type === 'CNCV')
  return cncv !== undefined && cncv.end - cncv.start >= 8 && asciiAt(head, cncv.start, 'CanonCR3')
}

interface Ifd0 {
  make: string
  model: string
  hasDngVersion: boolean
  hasSubIfds: boolean
  hasDngPrivateData: boolean
  hasJpegOffset: boolean
  newSubfileType: number | undefined
  compression: number | undefined
  photometric: number | undefined
}

function formatFromTiff (head: Uint8Array): CameraRawFormat | undefined {
  const ifd0 = readIfd0(head)
  if (ifd0 === undefined) return undefined
  // DNG is DNG whoever made the camera (Leica, Pentax, Ricoh and phones all write it).
  if (ifd0.hasDngVersion) return 'dng'
  // A TIFF exported from a raw keeps the camera's Make, and this project's own TIFF fixtures carry a NIKON
  // COOLPIX Make/Model: the maker alone would call those NEF/NRW. Raw files give themselves away in IFD0 by a
  // reduced-resolution preview first (NewSubfileType bit 0) with the raw in SubIFDs, by CFA/LinearRaw pixels, by
  // maker-private DNG data, or by a JPEG preview (the layout ExifTool takes for NRW); exported TIFFs have none.
  const rawLike = ifd0.hasSubIfds || ifd0.hasDngPrivateData ||
    ((ifd0.newSubfileType ?? 0) & 1) === 1 ||
    ifd0.photometric === PHOTOMETRIC_CFA || ifd0.photometric === PHOTOMETRIC_LINEAR_RAW ||
    hasJpegPreview(ifd0)
  if (!rawLike) return undefined
  return formatFromMaker(ifd0)
}

function formatFromMaker (ifd0: Ifd0): CameraRawFormat | undefined {
  const make = ifd0.make.toUpperCase()
  const model = ifd0.model.toUpperCase()
  if (make.startsWith('NIKON')) {
    // Coolpix compacts write NRW, except the COOLPIX A (a DX-sensor camera that writes NEF); the A1000 is NRW.
    // ExifTool itself turns a .nef into NRW when IFD0 holds a JPEG-compressed preview, so we follow it there.
    const coolpix = model.includes('COOLPIX') && model !== 'COOLPIX A'
    return coolpix || hasJpegPreview(ifd0) ? 'nrw' : 'nef'
  }
  if (make.startsWith('SONY')) {
    // Per ExifTool's Sony.pm: SR2 is written by the DSC-R1, SRF by the DSC-F828 and the DSC-V3.
    if (model === 'DSC-R1') return 'sr2'
    if (model === 'DSC-F828' || model === 'DSC-V3') return 'srf'
    return 'arw'
  }
  // Pentax cameras made since the Ricoh takeover write Make 'RICOH IMAGING COMPANY, LTD.' with a 'PENTAX …'
  // model; Ricoh's own GR cameras write DNG, caught above.
  if (make.startsWith('PENTAX') || make.startsWith('ASAHI') || (make.startsWith('RICOH') && model.startsWith('PENTAX'))) return 'pef'
  if (make.startsWith('SAMSUNG')) return 'srw'
  if (make.startsWith('HASSELBLAD')) {
    // The Lunar, Stellar and HV are rebadged Sonys (ExifTool's Sony model table lists them) and write ARW.
    if (model.startsWith('LUNAR') || model.startsWith('STELLAR') || model === 'HV') return 'arw'
    return '3fr'
  }
  if (make.startsWith('SEIKO EPSON')) return 'erf'
  if (make.startsWith('PHASE ONE')) return 'iiq'
  return undefined
}

/** IFD0 as an old-style JPEG (Compression 6 with JPEGInterchangeFormat): ExifTool's sign of an NRW. */
function hasJpegPreview (ifd0: Ifd0): boolean {
  return ifd0.compression === COMPRESSION_JPEG && ifd0.hasJpegOffset
}

function readIfd0 (head: Uint8Array): Ifd0 | undefined {
  const header = tiffHeader(head)
  if (header === undefined || u16(head, 2, header.little) !== 0x2a || header.firstIfd < 8) return undefined
  const { little, firstIfd } = header
  const count = u16(head, firstIfd, little)
  // The whole directory must be in the head: a half-read IFD0 could miss the tag that decides.
  if (count === undefined || count === 0 || count > MAX_IFD_ENTRIES || firstIfd + 2 + count * 12 > head.length) return undefined

  const ifd0: Ifd0 = {
    make: '',
    model: '',
    hasDngVersion: false,
    hasSubIfds: false,
    hasDngPrivateData: false,
    hasJpegOffset: false,
    newSubfileType: undefined,
    compression: undefined,
    photometric: undefined
  }
  for (const entry of ifdEntries(head, firstIfd + 2, count, little)) {
    switch (entry.tag) {
      case TAG_MAKE: ifd0.make = readAscii(head, entry) ?? ''; break
      case TAG_MODEL: ifd0.model = readAscii(head, entry) ?? ''; break
      case TAG_DNG_VERSION: ifd0.hasDngVersion = true; break
      case TAG_SUB_IFDS: ifd0.hasSubIfds = true; break
      case TAG_DNG_PRIVATE_DATA: ifd0.hasDngPrivateData = true; break
      case TAG_JPEG_OFFSET: ifd0.hasJpegOffset = true; break
      case TAG_NEW_SUBFILE_TYPE: ifd0.newSubfileType = readNumber(entry); break
      case TAG_COMPRESSION: ifd0.compression = readNumber(entry); break
      case TAG_PHOTOMETRIC: ifd0.photometric = readNumber(entry); break
    }
  }
  return ifd0
}

/** An ASCII entry's value up to its first NUL, trimmed; undefined when it is not ASCII or lies outside the head. */
function readAscii (head: Uint8Array, entry: IfdEntry): string | undefined {
  if (entry.type !== TYPE_ASCII || entry.count === 0 || entry.valueAt === undefined) return undefined
  const length = Math.min(entry.count, MAX_TEXT_LENGTH)
  if (entry.valueAt + length > head.length) return undefined
  let text = ''
  for (let i = 0; i < length; i++) {
    const byte = head[entry.valueAt + i] ?? 0
    if (byte === 0) break
    text += String.fromCharCode(byte)
  }
  return text.trim()
}

/** The first value of a SHORT or LONG entry (both fit in the entry itself). */
function readNumber (entry: IfdEntry): number | undefined {
  if (entry.count === 0 || (entry.type !== TYPE_SHORT && entry.type !== TYPE_LONG)) return undefined
  return entry.value
}

/**
 * Whether a JPEG XL SizeHeader (read LSB-first from `at`) fits in the bytes: small flag, height, ratio, and
 * width unless the ratio implies it.
 */
function jxlSizeHeaderFits (head: Uint8Array, at: number): boolean {
  const bits = { position: at * 8 }
  const read = (count: number): number | undefined => {
    if (bits.position + count > head.length * 8) return undefined
    let value = 0
    for (let i = 0; i < count; i++, bits.position++) {
      const byte = head[bits.position >> 3] ?? 0
      value |= ((byte >> (bits.position & 7)) & 1) << i
    }
    return value
  }
  const dimension = (small: number): boolean => {
    if (small === 1) return read(5) !== undefined
    const sizeClass = read(2)
    return sizeClass !== undefined && read([9, 13, 18, 30][sizeClass] ?? 30) !== undefined
  }
  const small = read(1)
  if (small === undefined || !dimension(small)) return false
  const ratio = read(3)
  return ratio !== undefined && (ratio !== 0 || dimension(small))
}
