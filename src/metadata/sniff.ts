import { imageSize } from 'image-size'
import { asciiAt, u16 } from './binary-reader.ts'
import { isJpegXl, sniffCameraRaw } from './camera-raw.ts'
import type { ImageFormat } from './formats.ts'
import { heifFormatFromBrands } from './heif.ts'

/** The format, and the primary image's stored size when the header gives it (camera raw and HEIF: ExifTool does). */
export interface SniffedImage {
  format: ImageFormat
  width?: number
  height?: number
  /**
   * A JPEG that keeps its camera data in a CIFF block (early Canon PowerShots): ExifTool's fastest read skips that
   * block, so such a file is read a little more slowly.
   */
  embeddedCiff?: true
}

/** image-size's type names for the formats we accept; every other type it knows (svg, bmp, psd…) is refused. */
const IMAGE_SIZE_TYPES: Record<string, ImageFormat> = {
  jpg: 'jpeg',
  png: 'png',
  webp: 'webp',
  gif: 'gif',
  tiff: 'tiff',
  jxl: 'jxl',
  'jxl-stream': 'jxl'
}

/** How much of a file is read first; enough for the headers of nearly every photo. */
export const SNIFF_HEAD_BYTES = 512 * 1024

/**
 * Decides the format and the primary image's stored size from the bytes alone, before ExifTool sees the file.
 * undefined: not one of the supported formats, or its header is unreadable in these bytes.
 */
export function sniffImage (bytes: Uint8Array): SniffedImage | undefined {
  // Before image-size, which would take a TIFF-based raw for a TIFF (and its thumbnail's size for the image's).
  const raw = sniffCameraRaw(bytes)
  if (raw !== undefined) return { format: raw }
  // image-size takes the first `ispe` of a HEIF file, often a tile's or the thumbnail's: ExifTool reads the primary
  // item's.
  const heif = heifFormatFromBrands(bytes)
  if (heif !== undefined) return { format: heif }
  let size
  try {
    size = imageSize(ownBuffer(bytes))
  } catch {
    return undefined
  }
  const format = size.type === undefined ? undefined : IMAGE_SIZE_TYPES[size.type]
  if (format === undefined || !(size.width > 0) || !(size.height > 0)) return undefined
  // image-size takes a JPEG XL on less evidence than its signature; the signature decides.
  if (format === 'jxl' && !isJpegXl(bytes)) return undefined
  return { format, width: size.width, height: size.height, ...(format === 'jpeg' && hasCiffBlock(bytes) ? { embeddedCiff: true } : {}) }
}

/** Whether a JPEG's APP0 segments (in these bytes) include a CIFF block ('II' or 'MM', a length, 'HEAPJPGM'). */
function hasCiffBlock (jpeg: Uint8Array): boolean {
  for (let at = 2; jpeg[at] === 0xff && jpeg[at + 1] === 0xe0;) {
    const length = u16(jpeg, at + 2)
    if (length === undefined || length < 2) return false
    if (asciiAt(jpeg, at + 10, 'HEAPJPGM')) return true
    at += 2 + length
  }
  return false
}

/**
 * The bytes in an ArrayBuffer of exactly their length. image-size 2 reads through a DataView that ends at the end of
 * the underlying buffer, not of the view: on a short file that is a slice of Node's shared buffer pool it would read
 * whatever else lies there (a 16-byte PNG was "sized" from other requests' bytes). With a buffer of its own, a read
 * past the end throws, and the file is refused.
 */
function ownBuffer (bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes)
}

/**
 * sniffImage for the head of a file (its first SNIFF_HEAD_BYTES, or all of it when `complete`). A few layouts keep
 * the size beyond the head (a TIFF whose IFD follows the pixels, a JPEG behind large APP or comment segments): such a
 * file is recognised by its magic number alone and its size left to ExifTool, so no file is ever read whole into
 * memory to size it.
 */
export function sniffHead (head: Uint8Array, complete: boolean): SniffedImage | undefined {
  const sniffed = sniffImage(head)
  if (sniffed !== undefined || complete) return sniffed
  const family = formatByMagic(head)
  return family === undefined ? undefined : { format: family }
}

/** The formats whose size can sit beyond the head, by their magic numbers. */
function formatByMagic (head: Uint8Array): ImageFormat | undefined {
  if (head[0] === 0xff && head[1] === 0xd8) return 'jpeg'
  const magic = Buffer.from(head.buffer, head.byteOffset, Math.min(4, head.length)).toString('latin1')
  if (magic === 'II*\0' || magic === 'MM\0*') return 'tiff'
  return heifFormatFromBrands(head)
}
