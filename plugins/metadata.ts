import { createHash } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { commonErrors, errorResponse } from '../schemas/error.ts'
import {
  ImageFormats,
  ImageLacksMetadataResponse,
  ImageMetadata,
  MetadataJsonBody,
  MetadataMultipartBody,
  MetadataQuery
} from '../schemas/metadata.ts'
import { ImageTooLargeError, NoImageError, TooManyFilesError, UnsupportedImageFormatError } from '../src/errors.ts'
import { decodeImageDataUri, maxDataUriBodyBytes } from '../src/metadata/data-uri.ts'
import { describeImage, type StoredImage } from '../src/metadata/describe-image.ts'
import { scratchExtension } from '../src/metadata/formats.ts'
import { mayHoldManifestStore } from '../src/metadata/provenance/manifest-store-marker.ts'
import { sniffImage, sniffImageFile } from '../src/metadata/sniff.ts'
import { ScratchDirectory } from '../src/scratch-directory.ts'
import multipartUploads, { IMAGE_FIELD, trackScratchFile } from './multipart.ts'
import { perMinute } from './rate-limit.ts'

export interface MetadataRoutesOptions {
  /** Largest image in a JSON data URI. */
  maxImageBytes: number
  /** Largest multipart file. */
  maxUploadBytes: number
  tempRoot: string
  /** Requests per minute per API key; 0: no limit. */
  rateLimit: number
}

/** POST /metadata: one image in, as a JSON data URI or a multipart `image` file; its metadata out. */
export default async function metadataRoutes (fastify: FastifyInstance, options: MetadataRoutesOptions): Promise<void> {
  const { maxImageBytes, maxUploadBytes } = options
  const scratch = await ScratchDirectory.create(options.tempRoot)
  fastify.addHook('onClose', async () => { await scratch.destroy() })
  await fastify.register(multipartUploads, { maxUploadBytes, scratch })

  // Errors particular to this operation get the operation's own codes; the envelope plugin then renders them.
  fastify.setErrorHandler(function (error: FastifyError) {
    throw toMetadataError(error, maxImageBytes, maxUploadBytes)
  })

  const formats = ImageFormats.join(', ')
  const common = {
    bodyLimit: maxDataUriBodyBytes(maxImageBytes),
    config: { rateLimit: perMinute(options.rateLimit) }
  }
  const schema = {
    tags: ['metadata'],
    querystring: MetadataQuery,
    response: {
      200: Type.Ref(ImageMetadata, { description: 'What the image says: camera, capture time, position, resolution, format and size' }),
      400: errorResponse('Bad Request (NO_IMAGE, INVALID_DATA_URI, INVALID_BASE64, NOT_AN_IMAGE_MEDIA_TYPE, TOO_MANY_FILES, INVALID_JSON, VALIDATION_ERROR): no image, a malformed data URI, more than one file, or a body or query that breaks the schema'),
      413: errorResponse(`Payload Too Large (IMAGE_TOO_LARGE): the image is larger than ${maxImageBytes} bytes in a data URI, or ${maxUploadBytes} bytes as a multipart file`),
      415: errorResponse(`Unsupported Media Type (UNSUPPORTED_CONTENT_TYPE, UNSUPPORTED_IMAGE_FORMAT): a body that is neither JSON nor multipart, or bytes that are not an image in one of ${formats}`),
      422: Type.Ref(ImageLacksMetadataResponse, { description: 'Unprocessable Entity (IMAGE_LACKS_METADATA): no camera, capture time or position; what could be read is in the body' }),
      ...commonErrors
    }
  }
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/metadata', {
    ...common,
    schema: {
      ...schema,
      operationId: 'extractMetadata',
      summary: 'Extract camera, capture time, position, resolution, format and size from one image',
      description: `Send exactly one image, as a JSON data URI or as the multipart field \`${IMAGE_FIELD}\`. ` +
        `Accepted formats: ${formats}, decided from the bytes. Largest image: ${maxImageBytes} bytes in a data URI, ` +
        `${maxUploadBytes} bytes as a multipart file (camera raw files are large: upload those as files).`,
      body: {
        content: {
          'application/json': { schema: Type.Ref(MetadataJsonBody) },
          'multipart/form-data': { schema: Type.Ref(MetadataMultipartBody) }
        }
      }
    }
  }, describe)
  // The same operation for a multipart upload alone: generated clients (@hey-api/openapi-ts among them) take one
  // media type per operation, and prefer JSON when an operation has two, so they could not upload a file otherwise.
  app.post('/metadata/file', {
    ...common,
    schema: {
      ...schema,
      operationId: 'extractMetadataFromFile',
      summary: 'Extract the metadata of one image uploaded as multipart/form-data',
      description: `The same as \`extractMetadata\` with a multipart body: the image file in the field \`${IMAGE_FIELD}\`. ` +
        `For clients whose generators take one media type per operation. Accepted formats: ${formats}. Largest file: ${maxUploadBytes} bytes.`,
      body: { content: { 'multipart/form-data': { schema: Type.Ref(MetadataMultipartBody) } } },
      response: {
        ...schema.response,
        400: errorResponse('Bad Request (NO_IMAGE, TOO_MANY_FILES, VALIDATION_ERROR): no file in the field image, more than one file, or a query that breaks the schema'),
        413: errorResponse(`Payload Too Large (IMAGE_TOO_LARGE): the file is larger than ${maxUploadBytes} bytes`),
        415: errorResponse(`Unsupported Media Type (UNSUPPORTED_CONTENT_TYPE, UNSUPPORTED_IMAGE_FORMAT): a body that is not multipart/form-data, or bytes that are not an image in one of ${formats}`)
      }
    }
  }, describe)

  async function describe (request: FastifyRequest<{ Querystring: { full?: boolean } }>): ReturnType<typeof describeImage> {
    // The scratch copy is tracked on the request and removed before the reply leaves (plugins/multipart.ts).
    const image = request.isMultipart()
      ? await storedUpload(request)
      : await storeDataUri(request, (request.body as { image: string }).image)
    const readers = { extractor: fastify.metadataExtractor, contentCredentials: fastify.contentCredentialsVerifier }
    return await describeImage(readers, image, { full: request.query.full === true })
  }

  async function storeDataUri (request: FastifyRequest, uri: string): Promise<StoredImage> {
    const bytes = decodeImageDataUri(uri, maxImageBytes)
    const sniffed = sniffImage(bytes)
    if (sniffed === undefined) throw new UnsupportedImageFormatError(ImageFormats.join(', '))
    const path = scratch.newFilePath(scratchExtension(sniffed.format))
    trackScratchFile(request, path)
    await writeFile(path, bytes, { flag: 'wx', mode: 0o600 })
    return {
      path,
      sizeBytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
      mayHoldManifest: mayHoldManifestStore(bytes),
      sniffed
    }
  }

  async function storedUpload (request: FastifyRequest): Promise<StoredImage> {
    // Only a file part counts: a text field named `image` is no upload.
    const upload = request.uploadedImage
    if (upload === undefined) throw new NoImageError()
    const sniffed = await sniffImageFile(upload.path, upload.sizeBytes)
    if (sniffed === undefined) throw new UnsupportedImageFormatError(ImageFormats.join(', '))
    return { ...upload, sniffed }
  }
}

function toMetadataError (error: FastifyError, maxImageBytes: number, maxUploadBytes: number): Error {
  if (error.validationContext === 'body' && error.validation?.some(isMissingImage)) return new NoImageError()
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ImageTooLargeError(maxImageBytes)
    case 'FST_REQ_FILE_TOO_LARGE':
      return new ImageTooLargeError(maxUploadBytes)
    case 'FST_FILES_LIMIT':
      return new TooManyFilesError()
  }
  return error
}

function isMissingImage (issue: { keyword: string, params: Record<string, unknown>, instancePath: string }): boolean {
  return (issue.keyword === 'required' && issue.params['missingProperty'] === IMAGE_FIELD) ||
    (issue.instancePath === `/${IMAGE_FIELD}` && issue.keyword === 'minLength')
}
