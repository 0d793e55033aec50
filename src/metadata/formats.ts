import { CAMERA_RAW_FORMATS, type CameraRawFormat } from './camera-raw.ts'

/**
 * The allow-list: every format the service reads, each recognised from its own bytes before ExifTool sees the file
 * (exotic formats are how ExifTool has been attacked). Camera raw formats are named by their file-type extension.
 */
export const IMAGE_FORMATS = ['jpeg', 'png', 'webp', 'heic', 'heif', 'avif', 'tiff', 'gif', 'jxl', ...CAMERA_RAW_FORMATS] as const
export type ImageFormat = typeof IMAGE_FORMATS[number]

const RAW = new Set<string>(CAMERA_RAW_FORMATS)

export function isCameraRaw (format: ImageFormat): format is CameraRawFormat {
  return RAW.has(format)
}

/** Formats that are TIFF files from their first byte (TIFF itself and the raws built on it): their IFDs are checked. */
const TIFF_BASED = new Set<string>(['tiff', 'dng', 'cr2', 'nef', 'nrw', 'arw', 'srf', 'sr2', 'orf', 'rw2', 'pef', 'srw', 'iiq', '3fr', 'erf'])

export function isTiffBased (format: ImageFormat): boolean {
  return TIFF_BASED.has(format)
}

/**
 * The scratch copy's file extension. ExifTool tries the matching parser first, and for raw formats built on TIFF
 * (NEF, ARW, PEF…) it takes the file type from the extension alone, so this is what makes a NEF read as a NEF.
 */
export function scratchExtension (format: ImageFormat): string {
  switch (format) {
    case 'jpeg': return 'jpg'
    case 'tiff': return 'tif'
    default: return format
  }
}
