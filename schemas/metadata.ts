import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { StringEnum } from './string-enum.ts'

export const ImageFormats = ['jpeg', 'png', 'webp', 'heic', 'heif', 'avif', 'tiff', 'gif'] as const
export type ImageFormat = typeof ImageFormats[number]

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const Camera = Type.Object({
  make: Nullable(Type.String({ description: 'Camera maker as recorded, trimmed', examples: ['NIKON'] })),
  model: Nullable(Type.String({ description: 'Camera model as recorded, trimmed', examples: ['COOLPIX P6000'] }))
}, { $id: 'Camera', title: 'Camera' })

export const Gps = Type.Object({
  latitude: Type.Number({ minimum: -90, maximum: 90, description: 'Decimal degrees, south negative', examples: [43.4670816] }),
  longitude: Type.Number({ minimum: -180, maximum: 180, description: 'Decimal degrees, west negative', examples: [11.8845383] }),
  altitude: Nullable(Type.Number({ description: 'Metres above sea level (negative below)', examples: [231.5] }))
}, { $id: 'Gps', title: 'Gps' })

export const Resolution = Type.Object({
  width: Type.Integer({ minimum: 1, description: 'Pixel width of the primary image as stored', examples: [640] }),
  height: Type.Integer({ minimum: 1, description: 'Pixel height of the primary image as stored', examples: [480] })
}, { $id: 'Resolution', title: 'Resolution' })

const Format = StringEnum(ImageFormats, {
  description: 'Decided from the file\'s bytes, not from its declared type',
  examples: ['jpeg']
})
const FilesizeKb = Type.Integer({ minimum: 0, description: 'File size in KiB (bytes / 1024, rounded)', examples: [154] })
const FilesizeBytes = Type.Integer({ minimum: 1, description: 'Exact file size in bytes', examples: [157382] })

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
  tags: Type.Optional(Type.Record(Type.String(), Type.Unknown(), {
    description: 'With ?full=true: every tag ExifTool reads, grouped by ExifTool family-1 group (ExifTool\'s grouped JSON)'
  }))
}, { $id: 'ImageMetadata', title: 'ImageMetadata', description: 'The metadata read from one image' })
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
  filesize_bytes: FilesizeBytes
}, {
  $id: 'ImageLacksMetadataResponse',
  title: 'ImageLacksMetadataResponse',
  description: 'The error envelope, plus what could still be read from the image'
})

export const MetadataJsonBody = Type.Object({
  image: Type.String({
    minLength: 1,
    description: 'The image as a data URI: data:image/<subtype>;base64,<data>',
    examples: ['data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ...']
  })
}, { $id: 'MetadataJsonBody', title: 'MetadataJsonBody' })
export type MetadataJsonBody = Static<typeof MetadataJsonBody>

export const MetadataMultipartBody = Type.Object({
  image: Type.String({ format: 'binary', description: 'The image file' })
}, { $id: 'MetadataMultipartBody', title: 'MetadataMultipartBody' })

export const MetadataQuery = Type.Object({
  full: Type.Optional(Type.Boolean({ default: false, description: 'Add every tag ExifTool reads, grouped, under `tags`' }))
})
