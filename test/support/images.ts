import { createHash } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ExifTool, type WriteTags } from 'exiftool-vendored'
import sharp from 'sharp'
import { buildHeif } from './heif-builder.ts'

/** The formats made here from pixels (sharp, or heif-builder for HEIC/HEIF); raw and JPEG XL come from raw-builder. */
export const PICTURE_FORMATS = ['jpeg', 'png', 'webp', 'heic', 'heif', 'avif', 'tiff', 'gif'] as const
export type PictureFormat = typeof PICTURE_FORMATS[number]

/** Tags written by the real ExifTool, named as ExifTool names them (it picks EXIF, XMP or both per format). */
export type FixtureTags = Record<string, string | number>

export interface FixtureOptions {
  width?: number
  height?: number
  tags?: FixtureTags
  /** ExifTool-style write arguments, e.g. ['-all='] to strip everything. */
  writeArgs?: string[]
}

/** The camera metadata most tests use; the values match the service's own example response. */
export const CAMERA_TAGS = {
  Make: 'NIKON',
  Model: 'COOLPIX P6000',
  DateTimeOriginal: '2008:10:22 16:38:20',
  GPSLatitude: 43.4670816,
  GPSLatitudeRef: 'N',
  GPSLongitude: 11.8845383,
  GPSLongitudeRef: 'E'
} satisfies FixtureTags

/**
 * Makes test images in code: pixels from sharp (libvips) for the formats it encodes, a synthetic container from
 * heif-builder for HEIC/HEIF (sharp's bundled libvips has no HEVC encoder), then metadata written by the real
 * ExifTool. No third-party image files are used.
 */
export class ImageFactory {
  readonly #exiftool = new ExifTool({ maxProcs: 1 })
  #dir: string | undefined

  async make (format: PictureFormat, options: FixtureOptions = {}): Promise<Buffer> {
    const width = options.width ?? 64
    const height = options.height ?? 48
    const pixels = await encode(format, width, height)
    if (options.tags === undefined && options.writeArgs === undefined) return pixels
    const path = join(await this.#directory(), `fixture-${Math.random().toString(36).slice(2)}.${format}`)
    await writeFile(path, pixels)
    try {
      await this.#exiftool.write(path, (options.tags ?? {}) as WriteTags, {
        writeArgs: ['-overwrite_original', ...(options.writeArgs ?? [])]
      })
      return await readFile(path)
    } finally {
      await rm(path, { force: true })
    }
  }

  /**
   * Rewrites an existing image's tags (e.g. to strip them), returning the new bytes. `extension` names the file
   * ExifTool writes (it picks TIFF-based raw types by extension): any format, raw and JPEG XL included.
   */
  async rewrite (image: Buffer, extension: string, tags: FixtureTags, writeArgs: string[] = []): Promise<Buffer> {
    const path = join(await this.#directory(), `rewrite-${Math.random().toString(36).slice(2)}.${extension}`)
    await writeFile(path, image)
    try {
      await this.#exiftool.write(path, tags as WriteTags, { writeArgs: ['-overwrite_original', ...writeArgs] })
      return await readFile(path)
    } finally {
      await rm(path, { force: true })
    }
  }

  async close (): Promise<void> {
    await this.#exiftool.end()
    if (this.#dir !== undefined) await rm(this.#dir, { recursive: true, force: true })
  }

  async #directory (): Promise<string> {
    this.#dir ??= await mkdtemp(join(tmpdir(), 'chat-metadata-api-fixtures-'))
    return this.#dir
  }
}

/** A small image with a colour gradient, so encoders produce real, non-trivial pixel data. */
export async function encode (format: PictureFormat, width: number, height: number): Promise<Buffer> {
  if (format === 'heic') return buildHeif({ majorBrand: 'heic', primary: { width, height } })
  if (format === 'heif') return buildHeif({ majorBrand: 'mif1', compatibleBrands: ['mif1', 'miaf'], primary: { width, height } })
  const raw = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const offset = (y * width + x) * 3
      raw[offset] = (x * 255 / width) | 0
      raw[offset + 1] = (y * 255 / height) | 0
      raw[offset + 2] = 128
    }
  }
  const image = sharp(raw, { raw: { width, height, channels: 3 } })
  switch (format) {
    case 'jpeg': return await image.jpeg({ quality: 80 }).toBuffer()
    case 'png': return await image.png().toBuffer()
    case 'webp': return await image.webp().toBuffer()
    case 'gif': return await image.gif().toBuffer()
    case 'tiff': return await image.tiff().toBuffer()
    case 'avif': return await image.avif().toBuffer()
  }
}

/** Random pixels stored without compression: a real PNG of about `bytes` bytes. */
export async function largePng (bytes: number): Promise<Buffer> {
  const side = Math.ceil(Math.sqrt(bytes / 3))
  const { randomBytes } = await import('node:crypto')
  return await sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer()
}

/** The provenance of an image that names no software, history or source type and carries no manifest. */
export function bareProvenance (bytes: Buffer): Record<string, unknown> {
  return {
    sha256: createHash('sha256').update(bytes).digest('hex'),
    software: null,
    history: [],
    digital_source_type: null,
    content_credentials: null
  }
}

export function dataUri (bytes: Buffer, mediaType: string): string {
  return `data:${mediaType};base64,${bytes.toString('base64')}`
}

/**
 * Moves a PNG's metadata chunks (eXIf, tEXt, iTXt, zTXt) after its pixel data, where the PNG spec allows them and
 * some writers put them. Chunk CRCs cover only the chunk itself, so moving chunks keeps the file valid.
 */
export function pngWithMetadataAfterPixels (png: Buffer): Buffer {
  const chunks: Array<{ type: string, bytes: Buffer }> = []
  for (let offset = 8; offset < png.length;) {
    const length = png.readUInt32BE(offset)
    chunks.push({ type: png.toString('latin1', offset + 4, offset + 8), bytes: png.subarray(offset, offset + 12 + length) })
    offset += 12 + length
  }
  const isMetadata = (type: string): boolean => ['eXIf', 'tEXt', 'iTXt', 'zTXt'].includes(type)
  const pixels = chunks.filter((chunk) => !isMetadata(chunk.type) && chunk.type !== 'IEND')
  const metadata = chunks.filter((chunk) => isMetadata(chunk.type))
  const end = chunks.filter((chunk) => chunk.type === 'IEND')
  return Buffer.concat([png.subarray(0, 8), ...[...pixels, ...metadata, ...end].map((chunk) => chunk.bytes)])
}
