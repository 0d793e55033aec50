import { ImageLacksMetadataError, UnsupportedImageFormatError, withDetails } from '../errors.ts'
import { captureTime } from './capture-time.ts'
import type { MetadataExtractor } from './extractor.ts'
import type { ContentCredentialsVerifier } from './provenance/c2pa-verifier.ts'
import { contentCredentialsFrom, uncheckedContentCredentials, unreadableContentCredentials, type ContentCredentials } from './provenance/content-credentials.ts'
import { IMAGE_FORMATS, type ImageFormat } from './formats.ts'
import { provenanceFrom, type Provenance } from './provenance/provenance.ts'
import type { StoredImage } from './intake.ts'
import { cameraFrom, cameraFromMakerNotes, gpsFrom, groupedTagsFrom, resolutionFromTags, type Camera, type Gps, type Resolution } from './tags.ts'

/** What the API says about one image. */
export interface ImageDescription {
  camera: Camera | null
  /** ISO 8601, with a UTC offset only when the file records one. */
  datetime: string | null
  gps: Gps | null
  resolution: Resolution
  format: ImageFormat
  filesize_kb: number
  filesize_bytes: number
  provenance: Provenance
  /** With `full`: every tag ExifTool reads, grouped. */
  tags?: Record<string, unknown>
}

/** What reads an image: ExifTool's pool for the tags, c2pa-rs for a manifest. */
export interface ImageReaders {
  extractor: MetadataExtractor
  contentCredentials: ContentCredentialsVerifier
}

/** What a description is asked for with. */
export interface DescribeOptions {
  /** Every tag too (`?full=true`). */
  full: boolean
  /** A non-secret id of the caller's API key: its reads get their share of the ExifTool pool, not all of it. */
  clientId?: string
}

/**
 * The API's metadata for one image the intake has stored and checked. Throws IMAGE_LACKS_METADATA, carrying what
 * could still be read, when the file records none of camera, capture time and position; IMAGE_TOO_COMPLEX when
 * ExifTool cannot read it within its bounds (CPU time, memory), or crashes on it, now or when it was sent before.
 */
export async function describeImage (
  readers: ImageReaders,
  image: StoredImage,
  options: DescribeOptions
): Promise<ImageDescription> {
  const { format, width, height } = image.sniffed
  const sized = width !== undefined && height !== undefined
  const context = { sha256: image.sha256, ...(options.clientId === undefined ? {} : { clientId: options.clientId }) }
  const tags = await readers.extractor.readSummary(image.path, format, !sized, { ...context, embeddedCiff: image.sniffed.embeddedCiff === true })
  const resolution = sized ? { width, height } : resolutionFromTags(tags)
  // A signature whose file ExifTool cannot size is no readable image of that format.
  if (resolution === null) throw new UnsupportedImageFormatError(IMAGE_FORMATS.join(', '))
  const basics = {
    resolution,
    format,
    filesize_kb: Math.round(image.sizeBytes / 1024),
    filesize_bytes: image.sizeBytes,
    provenance: provenanceFrom(tags, image.sha256, await contentCredentials(readers, image))
  }
  const camera = cameraFrom(tags) ?? (hasExif(tags) ? cameraFromMakerNotes(await readers.extractor.readMakerNotes(image.path, context)) : null)
  const datetime = captureTime(tags)
  const gps = gpsFrom(tags)
  if (camera === null && datetime === null && gps === null) {
    throw withDetails(new ImageLacksMetadataError(), basics)
  }

  const metadata: ImageDescription = { camera, datetime, gps, ...basics }
  if (options.full) metadata.tags = groupedTagsFrom(await readers.extractor.readAll(image.path, context))
  return metadata
}

/** Maker notes live inside EXIF: without any EXIF tag there are none to read. */
function hasExif (tags: Readonly<Record<string, unknown>>): boolean {
  return Object.keys(tags).some((name) => name.startsWith('IFD0:') || name.startsWith('ExifIFD:'))
}

/** The manifest, validated; null when the file holds none. */
async function contentCredentials (readers: ImageReaders, image: StoredImage): Promise<ContentCredentials | null> {
  if (!image.mayHoldManifest) return null
  const result = await readers.contentCredentials.verify(image.path, image.sniffed.format)
  switch (result.kind) {
    case 'absent': return null
    case 'unreadable': return unreadableContentCredentials(result.reason)
    case 'not_checked': return uncheckedContentCredentials(result.reason)
    case 'report': return contentCredentialsFrom(result.report)
  }
}
