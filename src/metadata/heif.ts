// Recognises HEIF-family still images (HEIC, HEIF, AVIF) by the brands of their `ftyp` box.
//
// Only the format is decided here. The stored size is ExifTool's: it takes it from the `ispe` property associated
// with the primary item (not the first `ispe`, which in grid-coded phone files belongs to a tile or the thumbnail),
// and it agreed with a primary-item walk of our own on every layout the tests build (docs/metadata-limits.md).

import { fourcc } from './binary-reader.ts'
import { boxAt } from './iso-bmff.ts'

export type HeifFormat = 'heic' | 'heif' | 'avif'

/**
 * Real ftyp boxes list a handful of brands; a huge one (or size 0 = whole file) would turn the cheap brand check
 * into a scan of the upload.
 */
const MAX_FTYP_SIZE = 4096

const HEIC_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis'])
const AVIF_BRANDS = new Set(['avif', 'avis'])
const GENERIC_BRANDS = new Set(['mif1', 'msf1'])

/** The HEIF-family format named by the `ftyp` box that starts these bytes; undefined for anything else. */
export function heifFormatFromBrands (input: Uint8Array): HeifFormat | undefined {
  if (input.byteLength < 16 || fourcc(input, 4) !== 'ftyp') return undefined
  const ftyp = boxAt(input, 0, input.byteLength)
  // major_brand and minor_version are required.
  if (ftyp === undefined || ftyp.end - ftyp.start < 8 || ftyp.end > MAX_FTYP_SIZE) return undefined
  const major = fourcc(input, ftyp.start)!
  if (HEIC_BRANDS.has(major)) return 'heic'
  if (AVIF_BRANDS.has(major)) return 'avif'
  if (!GENERIC_BRANDS.has(major)) return undefined

  const compatible: string[] = []
  // A trailing partial brand (box size not a multiple of 4) is ignored.
  for (let offset = ftyp.start + 8; offset + 4 <= ftyp.end; offset += 4) compatible.push(fourcc(input, offset)!)
  if (compatible.some(brand => HEIC_BRANDS.has(brand))) return 'heic'
  if (compatible.some(brand => AVIF_BRANDS.has(brand))) return 'avif'
  return 'heif'
}
