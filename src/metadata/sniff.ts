import { open } from 'node:fs/promises'
import { imageSize } from 'image-size'
import { isJpegXl, sniffCameraRaw } from './camera-raw.ts'
import type { ImageFormat } from './formats.ts'
import { heifFormatFromBrands, readHeifInfo } from './heif.ts'

/** The format, and the primary image's stored size when the header gives it (camera raw: ExifTool does). */
export interface SniffedImage {
  format: ImageFormat
  width?: number
  height?: number
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
  // image-size takes the first `ispe` of a HEIF file, often a tile's or the thumbnail's: read the primary item's.
  if (heifFormatFromBrands(bytes) !== undefined) return readHeifInfo(bytes)
  let size
  try {
    size = imageSize(bytes)
  } catch {
    return undefined
  }
  const format = size.type === undefined ? undefined : IMAGE_SIZE_TYPES[size.type]
  if (format === undefined || !(size.width > 0) || !(size.height > 0)) return undefined
  // image-size takes a JPEG XL on less evidence than its signature; the signature decides.
  if (format === 'jxl' && !isJpegXl(bytes)) return undefined
  return { format, width: size.width, height: size.height }
}

/** The most of a file read whole to find a size its head does not hold; past it, ExifTool reports the size. */
export const SNIFF_WHOLE_FILE_BYTES = 32 * 1024 * 1024

/**
 * sniffImage for a file on disk, reading only its head when that suffices. A few layouts keep the size far into the
 * file (a TIFF whose IFD follows the pixels, a JPEG behind large APP segments): those are read whole up to
 * SNIFF_WHOLE_FILE_BYTES; a larger one (multipart uploads run to hundreds of megabytes) is recognised by its magic
 * number alone, its size left to ExifTool, so memory stays bounded whatever the upload.
 */
export async function sniffImageFile (path: string, fileSize: number): Promise<SniffedImage | undefined> {
  const handle = await open(path, 'r')
  try {
    const head = Buffer.alloc(Math.min(fileSize, SNIFF_HEAD_BYTES))
    const { bytesRead } = await handle.read(head, 0, head.length, 0)
    const sniffed = sniffImage(head.subarray(0, bytesRead))
    if (sniffed !== undefined || fileSize <= SNIFF_HEAD_BYTES) return sniffed
    const family = formatByMagic(head)
    if (family === undefined) return undefined
    if (fileSize > SNIFF_WHOLE_FILE_BYTES) return { format: family }
    return sniffImage(await handle.readFile())
  } finally {
    await handle.close()
  }
}

/** The formats whose size can sit beyond the head, by their magic numbers. */
function formatByMagic (head: Buffer): ImageFormat | undefined {
  if (head[0] === 0xff && head[1] === 0xd8) return 'jpeg'
  if (head.subarray(0, 4).equals(Buffer.from('II*\0', 'latin1')) || head.subarray(0, 4).equals(Buffer.from('MM\0*', 'latin1'))) return 'tiff'
  return heifFormatFromBrands(head)
}
