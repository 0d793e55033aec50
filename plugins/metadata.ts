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
import { ImageTooLargeError, NoImageError, TooManyFilesError, UnsupportedContentTypeError } from '../src/errors.ts'
import { maxDataUriBodyBytes } from '../src/metadata/json-data-uri.ts'
import { describeImage, type ImageDescription } from '../src/metadata/describe.ts'
import type { StoredImage } from '../src/metadata/intake.ts'
import { acceptedContentTypes } from './error-envelope.ts'
import jsonImageBody from './json-image-body.ts'
import multipartUploads, { IMAGE_FIELD, multipartError } from './multipart.ts'
import { perMinute } from './rate-limit.ts'
import scratch from './scratch.ts'

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
  await fastify.register(scratch, { tempRoot: options.tempRoot })
  await fastify.register(multipartUploads, { maxUploadBytes })
  await fastify.register(jsonImageBody, { maxImageBytes })

  // Errors particular to this operation get the operation's own codes; the envelope plugin then renders them.
  fastify.setErrorHandler(function (error: FastifyError, request) {
    throw toMetadataError(multipartError(error, request), maxImageBytes, maxUploadBytes)
  })

  const formats = ImageFormats.join(', ')
  const common = {
    bodyLimit: maxDataUriBodyBytes(maxImageBytes),
    config: { rateLimit: perMinute(options.rateLimit) },
    preValidation: requireDeclaredBody
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

  async function describe (request: FastifyRequest<{ Querystring: { full?: boolean } }>): Promise<ImageDescription> {
    const readers = { extractor: fastify.metadataExtractor, contentCredentials: fastify.contentCredentialsVerifier }
    return await describeImage(readers, uploaded(request), { full: request.query.full === true })
  }
}

/**
 * Fastify validates a body only against the schema of its own media type, and parses any media type some route
 * declares: a JSON body sent to the multipart-only route, or no body at all, would reach the handler unchecked. No
 * body is no image; a body of a media type this route does not declare is a 415.
 */
async function requireDeclaredBody (request: FastifyRequest): Promise<void> {
  if (request.body === undefined && !request.isMultipart()) throw new NoImageError()
  const mediaType = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase()
  const accepted = acceptedContentTypes(request)
  if (!accepted.includes(mediaType)) throw new UnsupportedContentTypeError(accepted.join(', '))
}

/**
 * The image, already received while the body was read: the multipart `image` file (only a file part counts), or the
 * JSON data URI. A data URI refused then is refused now, after the request's own checks, as when it was decoded here.
 */
function uploaded (request: FastifyRequest): StoredImage {
  if (request.imageRefused !== undefined) throw request.imageRefused
  if (request.uploadedImage === undefined) throw new NoImageError()
  return request.uploadedImage
}

function toMetadataError (error: Error & Partial<FastifyError>, maxImageBytes: number, maxUploadBytes: number): Error {
  if (error.validationContext === 'body' && error.validation?.some(isMissingImage)) return new NoImageError()
  switch (error.code) {
    case 'BODY_TOO_LARGE':
      // Only a JSON body has a body limit (plugins/json-image-body.ts): the size of the largest data URI.
      return new ImageTooLargeError(maxImageBytes)
    case 'FST_REQ_FILE_TOO_LARGE':
      return new ImageTooLargeError(maxUploadBytes)
    case 'FST_FILES_LIMIT':
      return new TooManyFilesError()
  }
  return error
}

function isMissingImage (issue: { keyword: string, params: Record<string, unknown> }): boolean {
  return issue.keyword === 'required' && issue.params['missingProperty'] === IMAGE_FIELD
}
