/** The soak's images, made here as the tests make theirs: pixels from sharp, camera tags written by the real ExifTool. */
import { createHash } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import sharp from 'sharp'
import type { CorpusImage } from '../../test/support/corpus.ts'
import { CAMERA_TAGS, ImageFactory, type FixtureTags } from '../../test/support/images.ts'

export interface SoakImage extends CorpusImage {
  sha256: string
  /** The camera make the answer must name. */
  make: string
}

const PHONE_TAGS = {
  Make: 'Apple',
  Model: 'iPhone 13',
  DateTimeOriginal: '2026:06:14 09:12:45',
  OffsetTimeOriginal: '+02:00',
  GPSLatitude: 48.8583701,
  GPSLatitudeRef: 'N',
  GPSLongitude: 2.2944813,
  GPSLongitudeRef: 'E',
  Software: '17.5.1'
} satisfies FixtureTags

/** Two small JPEGs and a camera-sized one, saved in `dir`. */
export async function makeImages (dir: string): Promise<{ small: SoakImage[], camera: SoakImage }> {
  const factory = new ImageFactory()
  try {
    const tagged = async (name: string, pixels: Buffer, tags: FixtureTags): Promise<SoakImage> => {
      const bytes = await factory.rewrite(pixels, 'jpg', tags)
      const path = join(dir, name)
      await writeFile(path, bytes)
      const sha256 = createHash('sha256').update(bytes).digest('hex')
      return { name, path, bytes, format: 'jpeg', sized: true, sha256, make: String(tags['Make']) }
    }
    return {
      small: [
        await tagged('small-640.jpg', await jpeg(640, 480, 80, 0), CAMERA_TAGS),
        await tagged('phone-1024.jpg', await jpeg(1024, 768, 85, 6), PHONE_TAGS)
      ],
      // Grain brings a 3000×2000 q90 JPEG to a camera photo's size (~2 MB).
      camera: await tagged('camera-3000.jpg', await jpeg(3000, 2000, 90, 16), CAMERA_TAGS)
    }
  } finally {
    await factory.close()
  }
}

/**
 * A gradient (test/support/images.ts encode's), with fixed-seed grain of `amplitude` (0: none): the grain is what
 * gives a photo its size, and a fixed seed the same bytes on every run.
 */
async function jpeg (width: number, height: number, quality: number, amplitude: number): Promise<Buffer> {
  const raw = Buffer.alloc(width * height * 3)
  let state = 0x9e3779b9
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let noise = 0
      if (amplitude > 0) {
        state ^= state << 13
        state ^= state >>> 17
        state ^= state << 5
        noise = ((state >>> 0) % (2 * amplitude + 1)) - amplitude
      }
      const offset = (y * width + x) * 3
      raw[offset] = clampByte(((x * 255) / width | 0) + noise)
      raw[offset + 1] = clampByte(((y * 255) / height | 0) + noise)
      raw[offset + 2] = clampByte(128 + noise)
    }
  }
  return await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer()
}

function clampByte (value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : value
}
