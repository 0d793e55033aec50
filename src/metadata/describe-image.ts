import type { ImageMetadata } from '../../schemas/metadata.ts'
import { ImageLacksMetadataError, withDetails } from '../errors.ts'
import { captureTime } from './capture-time.ts'
import type { MetadataExtractor } from './extractor.ts'
import type { SniffedImage } from './sniff.ts'
import { cameraFrom, gpsFrom, groupedTagsFrom } from './tags.ts'

export interface StoredImage {
  /** A private temporary copy ExifTool reads. */
  path: string
  sizeBytes: number
  sniffed: SniffedImage
}

/**
 * The API's metadata for one image already checked by sniffImage. Throws ImageLacksMetadataError (422), carrying
 * what could still be read, when the file records none of camera, capture time and position.
 */
export async function describeImage (
  extractor: MetadataExtractor,
  image: StoredImage,
  options: { full: boolean }
): Promise<ImageMetadata> {
  const tags = await extractor.readSummary(image.path, image.sniffed.format)
  const basics = {
    resolution: { width: image.sniffed.width, height: image.sniffed.height },
    format: image.sniffed.format,
    filesize_kb: Math.round(image.sizeBytes / 1024),
    filesize_bytes: image.sizeBytes
  }
  const camera = cameraFrom(tags)
  const datetime = captureTime(tags)
  const gps = gpsFrom(tags)
  if (camera === null && datetime === null && gps === null) {
    throw withDetails(new ImageLacksMetadataError(), basics)
  }

  const metadata: ImageMetadata = { camera, datetime, gps, ...basics }
  if (options.full) metadata.tags = groupedTagsFrom(await extractor.readAll(image.path))
  return metadata
}
