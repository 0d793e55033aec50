import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { IMAGE_FORMATS, type ImageFormat } from '../src/metadata/formats.ts'
import { PHOTO_METADATA, SMALL_PHOTO_DATA_URI } from './examples.ts'
import { StringEnum } from './string-enum.ts'

export const ImageFormats = IMAGE_FORMATS
export type { ImageFormat }

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Camera = Type.Object({
  make: Nullable(Type.String({ description: 'Camera maker as recorded, trimmed', examples: ['NIKON'] })),
  model: Nullable(Type.String({ description: 'Camera model as recorded, trimmed', examples: ['COOLPIX P6000'] }))
}, { $id: 'Camera', title: 'Camera' })

export const Gps = Type.Object({
  latitude: Type.Number({ minimum: -90, maximum: 90, description: 'Decimal degrees, south negative', examples: [43.4670816] }),
  longitude: Type.Number({ minimum: -180, maximum: 180, description: 'Decimal degrees, west negative', examples: [11.8845383] }),
  altitude: Nullable(Type.Number({ description: 'Metres above sea level (negative below)', examples: [231.5] }))
}, { $id: 'Gps', title: 'Gps', examples: [PHOTO_METADATA.gps] })

export const Resolution = Type.Object({
  width: Type.Integer({ minimum: 1, description: 'Pixel width of the primary image as stored', examples: [640] }),
  height: Type.Integer({ minimum: 1, description: 'Pixel height of the primary image as stored', examples: [480] })
}, {
  $id: 'Resolution',
  title: 'Resolution',
  description: 'The primary image as stored (not rotated for display). For camera raw files, the full-size raw image as ' +
    'ExifTool reports it (Composite:ImageSize): the sensor area the file stores, not the DNG default crop or the ' +
    'camera\'s JPEG size; Canon CR2 and Phase One IIQ report the EXIF image size, Fujifilm RAF the cropped raw size'
})

const TRUST_ANCHORS = 'C2PA_TRUST_ANCHORS'

export const HistoryEntry = Type.Object({
  action: Nullable(Type.String({ description: 'What was done, as recorded (stEvt:action)', examples: ['saved'] })),
  software: Nullable(Type.String({ description: 'The software that did it (stEvt:softwareAgent)', examples: ['Adobe Photoshop 25.0'] })),
  when: Nullable(Type.String({
    description: 'When, ISO 8601 with the offset the file recorded; null when absent or not a real date',
    examples: ['2024-05-01T10:00:00+02:00']
  }))
}, { $id: 'HistoryEntry', title: 'HistoryEntry', description: 'One event of the XMP Media Management history (xmpMM:History)' })

export const ContentCredentialsSigner = Type.Object({
  issuer: Nullable(Type.String({ description: 'Organisation (O) of the signing certificate\'s subject', examples: ['Example Newsroom'] })),
  common_name: Nullable(Type.String({ description: 'Common name (CN) of the signing certificate\'s subject', examples: ['Newsroom Signing Key 2024'] }))
}, { $id: 'ContentCredentialsSigner', title: 'ContentCredentialsSigner' })

export const ContentCredentials = Type.Object({
  claim_generator: Nullable(Type.String({
    description: 'The software that made the manifest, as recorded; for a v2 claim, its generator info as name/version',
    examples: ['Adobe Photoshop/25.0']
  })),
  title: Nullable(Type.String({ description: 'The asset title the manifest records', examples: ['photo.jpg'] })),
  actions: Type.Array(Type.String(), { description: 'The actions the manifest declares, in order', examples: [['c2pa.opened', 'c2pa.color_adjustments']] }),
  digital_source_types: Type.Array(Type.String(), {
    description: 'The IPTC digital source types the actions declare',
    examples: [['http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture']]
  }),
  ai_generated: Type.Boolean({
    description: 'True exactly when a declared digital source type is trainedAlgorithmicMedia or compositeWithTrainedAlgorithmicMedia'
  }),
  ingredients: Type.Integer({ minimum: 0, description: 'How many ingredients (source assets) the manifest names' }),
  signer: Type.Union([Type.Ref(ContentCredentialsSigner), Type.Null()], {
    description: 'From the signing certificate; null when the signature could not be read'
  }),
  signed_at: Nullable(Type.String({
    description: 'The time-stamp authority\'s time of signing, ISO 8601; null without a valid time-stamp',
    examples: ['2024-05-01T08:00:05+00:00']
  })),
  integrity: StringEnum(['valid', 'invalid', 'not_checked'] as const, {
    description: 'valid: the claim signature and the hard-binding hashes match the bytes received; invalid: they do not, or the manifest could not be read (validation_codes says why; com.adobe.prerelease for a manifest written before C2PA 1.0); not_checked: the file is larger than the service validates (C2PA_MAX_BYTES), not_checked_reason says so, and only claim_generator is filled in, as ExifTool reads it'
  }),
  trusted: Type.Boolean({
    description: `The signing certificate chains to a trust anchor configured with ${TRUST_ANCHORS} and is in good standing; false when none is configured`
  }),
  validation_codes: Type.Array(Type.String(), {
    description: 'The C2PA failure codes of the active manifest (e.g. assertion.dataHash.mismatch, signingCredential.untrusted); empty when nothing failed',
    examples: [['assertion.dataHash.mismatch']]
  }),
  not_checked_reason: Type.Optional(Type.String({
    description: 'Why integrity is not_checked; present only then',
    examples: ['the file is larger than 50331648 bytes, the most the service validates']
  }))
}, {
  $id: 'ContentCredentials',
  title: 'ContentCredentials',
  description: 'The active C2PA manifest, validated by c2pa-rs against the bytes received'
})

export const Provenance = Type.Object({
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'Hex SHA-256 of the bytes received', examples: [PHOTO_METADATA.provenance.sha256] }),
  software: Nullable(Type.String({
    description: 'EXIF Software, else XMP CreatorTool, trimmed',
    examples: ['Adobe Photoshop 25.0 (Macintosh)']
  })),
  history: Type.Array(Type.Ref(HistoryEntry), { description: 'The XMP Media Management history, oldest first; empty when the file has none' }),
  digital_source_type: Nullable(Type.String({
    description: 'The IPTC digital source type the file declares in XMP (Iptc4xmpExt:DigitalSourceType)',
    examples: ['http://cv.iptc.org/newscodes/digitalsourcetype/digitalCapture']
  })),
  content_credentials: Type.Union([Type.Ref(ContentCredentials), Type.Null()], { description: 'null when the file carries no C2PA manifest' })
}, { $id: 'Provenance', title: 'Provenance', description: 'Where the image says it came from, and whether its Content Credentials hold' })

const Format = StringEnum(ImageFormats, {
  description: 'Decided from the file\'s bytes, not from its declared type; a camera raw format by its file-type extension (dng, cr3, nef…)',
  examples: ['jpeg']
})
const FilesizeKb = Type.Integer({ minimum: 0, description: 'File size in KiB (bytes / 1024, rounded)', examples: [PHOTO_METADATA.filesize_kb] })
const FilesizeBytes = Type.Integer({ minimum: 1, description: 'Exact file size in bytes', examples: [PHOTO_METADATA.filesize_bytes] })

export const ImageMetadata = Type.Object({
  camera: Nullable(Type.Ref(Camera)),
  datetime: Nullable(Type.String({
    description: 'When the photo was taken, ISO 8601; carries a UTC offset only when the file records one',
    examples: ['2008-10-22T16:38:20']
  })),
  gps: Nullable(Type.Ref(Gps)),
  resolution: Type.Ref(Resolution),
  format: Format,
  filesize_kb: FilesizeKb,
  filesize_bytes: FilesizeBytes,
  provenance: Type.Ref(Provenance),
  tags: Type.Optional(Type.Record(Type.String(), Type.Unknown(), {
    description: 'With ?full=true: every tag ExifTool reads, grouped by ExifTool family-1 group (ExifTool\'s grouped JSON)'
  }))
}, { $id: 'ImageMetadata', title: 'ImageMetadata', description: 'The metadata read from one image', examples: [PHOTO_METADATA] })
export type ImageMetadata = Static<typeof ImageMetadata>
export type Camera = Static<typeof Camera>
export type Gps = Static<typeof Gps>
export type Resolution = Static<typeof Resolution>

export const ImageLacksMetadataResponse = Type.Object({
  statusCode: Type.Integer({ examples: [422] }),
  code: Type.String({ examples: ['IMAGE_LACKS_METADATA'] }),
  error: Type.String({ examples: ['Unprocessable Entity'] }),
  message: Type.String({ examples: ['Image lacks metadata'] }),
  format: Format,
  resolution: Type.Ref(Resolution),
  filesize_kb: FilesizeKb,
  filesize_bytes: FilesizeBytes,
  provenance: Type.Ref(Provenance)
}, {
  $id: 'ImageLacksMetadataResponse',
  title: 'ImageLacksMetadataResponse',
  description: 'The error envelope, plus what could still be read from the image'
})

export const MetadataJsonBody = Type.Object({
  // No minLength: ajv would count a 34 MB string's characters one by one; the decoder answers an empty one NO_IMAGE.
  image: Type.String({
    description: 'The image as a data URI: data:image/<subtype>;base64,<data> (not empty)',
    examples: [SMALL_PHOTO_DATA_URI]
  })
}, { $id: 'MetadataJsonBody', title: 'MetadataJsonBody' })
export type MetadataJsonBody = Static<typeof MetadataJsonBody>

export const MetadataMultipartBody = Type.Object({
  image: Type.String({ format: 'binary', description: 'The image file' })
}, { $id: 'MetadataMultipartBody', title: 'MetadataMultipartBody' })

export const MetadataQuery = Type.Object({
  full: Type.Optional(Type.Boolean({ default: false, description: 'Add every tag ExifTool reads, grouped, under `tags`' }))
})
