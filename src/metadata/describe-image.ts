import type { ImageMetadata } from '../../schemas/metadata.ts'
import { ImageLacksMetadataError, withDetails } from '../errors.ts'
import { captureTime } from './capture-time.ts'
import type { MetadataExtractor } from './extractor.ts'
import type { ContentCredentialsVerifier } from './provenance/c2pa-verifier.ts'
import { contentCredentialsFrom, unreadableContentCredentials, type ContentCredentials } from './provenance/content-credentials.ts'
import { provenanceFrom } from './provenance/provenance.ts'
import type { SniffedImage } from './sniff.ts'
import { cameraFrom, gpsFrom, groupedTagsFrom } from './tags.ts'

export interface StoredImage {
  /** A private temporary copy ExifTool reads. */
  path: string
  sizeBytes: number
  /** Hex SHA-256 of the bytes received. */
  sha256: string
  /** The bytes carry a C2PA manifest store's marker: only then does the validator read the file. */
  mayHoldManifest: boolean
  sniffed: SniffedImage
}

/** What reads an image: ExifTool's pool for the tags, c2pa-rs for a manifest. */
export interface ImageReaders {
  extractor: MetadataExtractor
  contentCredentials: ContentCredentialsVerifier
}

/**
 * The API's metadata for one image already checked by sniffImage. Throws ImageLacksMetadataError (422), carrying
 * what could still be read, when the file records none of camera, capture time and position.
 */
export async function describeImage (
  readers: ImageReaders,
  image: StoredImage,
  options: { full: boolean }
): Promise<ImageMetadata> {
  const tags = await readers.extractor.readSummary(image.path, image.sniffed.format)
  const basics = {
    resolution: { width: image.sniffed.width, height: image.sniffed.height },
    format: image.sniffed.format,
    filesize_kb: Math.round(image.sizeBytes / 1024),
    filesize_bytes: image.sizeBytes,
    provenance: provenanceFrom(tags, image.sha256, await contentCredentials(readers, image))
  }
  const camera = cameraFrom(tags)
  const datetime = captureTime(tags)
  const gps = gpsFrom(tags)
  if (camera === null && datetime === null && gps === null) {
    throw withDetails(new ImageLacksMetadataError(), basics)
  }

  const metadata: ImageMetadata = { camera, datetime, gps, ...basics }
  if (options.full) metadata.tags = groupedTagsFrom(await readers.extractor.readAll(image.path))
  return metadata
}

/** The manifest, validated; null when the file holds none. */
async function contentCredentials (readers: ImageReaders, image: StoredImage): Promise<ContentCredentials | null> {
  if (!image.mayHoldManifest) return null
  const result = await readers.contentCredentials.verify(image.path, image.sniffed.format)
  switch (result.kind) {
    case 'absent': return null
    case 'unreadable': return unreadableContentCredentials()
    case 'report': return contentCredentialsFrom(result.report)
  }
}
