import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler } from 'fastify'
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
import { NoImageError, ValidationError } from '../src/errors.ts'
import { describeImage, type ImageDescription } from '../src/metadata/describe.ts'
import type { StoredImage } from '../src/metadata/intake.ts'
import { maxDataUriBodyBytes } from '../src/metadata/json-data-uri.ts'
import jsonImageBody, { receiveDataUri } from './json-image-body.ts'
import multipartUploads, { IMAGE_FIELD, maxUploadBodyBytes, receiveUpload } from './multipart.ts'
import { perMinute } from './rate-limit.ts'
import scratch from './scratch.ts'
import { buildValidator } from './validation.ts'

export interface MetadataRoutesOptions {
  /** Largest image in a JSON data URI. */
  maxImageBytes: number
  /** Largest multipart file. */
  maxUploadBytes: number
  tempRoot: string
  /** Requests per minute per API key; 0: no limit. */
  rateLimit: number
}

type MetadataRequest = FastifyRequest<{ Querystring: { full?: boolean } }>

/**
 * POST /metadata: one image in, as a JSON data URI or a multipart `image` file; its metadata out. The handler is the
 * whole path: receive the image (streamed into a scratch file, checked on the way, before ExifTool ever sees it),
 * describe it (ExifTool, and c2pa-rs for a manifest), answer; a failure on the way is a domain error, which the
 * error envelope (plugins/error-envelope.ts) maps to HTTP.
 */
export default async function metadataRoutes (fastify: FastifyInstance, options: MetadataRoutesOptions): Promise<void> {
  const { maxImageBytes, maxUploadBytes } = options
  await fastify.register(scratch, { tempRoot: options.tempRoot })
  await fastify.register(multipartUploads, { maxUploadBytes })

  // Fastify validates a request before its handler runs, but these bodies are read by the handler: each body schema
  // documents its body (OpenAPI), and the JSON one is applied to what was read (`checkJsonShape`). The query is
  // validated as everywhere (plugins/validation.ts).
  const compile = buildValidator(fastify.getSchemas())
  fastify.setValidatorCompiler((route) => route.httpPart === 'body' ? readByTheHandler : compile(route))
  const jsonShape = compile({ schema: Type.Ref(MetadataJsonBody), method: 'POST', url: '/metadata', httpPart: 'body' })

  const readers = { extractor: fastify.metadataExtractor, contentCredentials: fastify.contentCredentialsVerifier }
  async function extract (request: MetadataRequest): Promise<ImageDescription> {
    const image = await receive(request)
    return await describeImage(readers, image, { full: request.query.full === true, clientId: request.apiKeyId })
  }

  /** The image of the body, received whole and checked: the multipart `image` file, or the JSON data URI. */
  async function receive (request: MetadataRequest): Promise<StoredImage> {
    if (request.isMultipart()) return await receiveUpload(request, maxUploadBytes)
    // Fastify refuses a body of a media type the route does not parse, or of none (415): here it is JSON, or absent.
    if (request.headers['content-type'] === undefined) throw new NoImageError()
    const received = await receiveDataUri(request, maxImageBytes)
    checkJsonShape(jsonShape, received.body)
    if (received.imageError !== undefined) throw received.imageError
    if (received.image === undefined) throw new NoImageError()
    return received.image
  }

  const formats = ImageFormats.join(', ')
  const common = {
    // What the route reads at most, of either media type: what is left of a refused body within it is read and
    // thrown away, keeping the connection (plugins/unread-body.ts).
    bodyLimit: Math.max(maxUploadBodyBytes(maxUploadBytes), maxDataUriBodyBytes(maxImageBytes)),
    config: { rateLimit: perMinute(options.rateLimit) }
  }
  const schema = {
    tags: ['metadata'],
    querystring: MetadataQuery,
    response: {
      200: Type.Ref(ImageMetadata, { description: 'What the image says: camera, capture time, position, resolution, format and size' }),
      400: errorResponse('Bad Request (NO_IMAGE, INVALID_DATA_URI, INVALID_BASE64, NOT_AN_IMAGE_MEDIA_TYPE, TOO_MANY_FILES, INVALID_JSON, VALIDATION_ERROR): no image, a malformed data URI, more than one file, or a body or query that breaks the schema'),
      413: errorResponse(`Payload Too Large (IMAGE_TOO_LARGE): the image is larger than ${maxImageBytes} bytes in a data URI, or ${maxUploadBytes} bytes as a multipart file`),
      415: errorResponse(`Unsupported Media Type (UNSUPPORTED_CONTENT_TYPE, UNSUPPORTED_IMAGE_FORMAT, IMAGE_TOO_COMPLEX): a body that is neither JSON nor multipart, bytes that are not an image in one of ${formats}, or an image whose structure is beyond what the service reads`),
      422: Type.Ref(ImageLacksMetadataResponse, { description: 'Unprocessable Entity (IMAGE_LACKS_METADATA): no camera, capture time or position; what could be read is in the body' }),
      ...commonErrors
    }
  }

  // Only this route takes JSON: its parser is registered in a context of its own, so that the file route answers a
  // JSON body 415 without reading it.
  await fastify.register(async function dataUris (json) {
    await json.register(jsonImageBody)
    json.withTypeProvider<TypeBoxTypeProvider>().post('/metadata', {
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
    }, extract)
  })

  // The same operation for a multipart upload alone: generated clients (@hey-api/openapi-ts among them) take one
  // media type per operation, and prefer JSON when an operation has two, so they could not upload a file otherwise.
  fastify.withTypeProvider<TypeBoxTypeProvider>().post('/metadata/file', {
    ...common,
    bodyLimit: maxUploadBodyBytes(maxUploadBytes),
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
        415: errorResponse(`Unsupported Media Type (UNSUPPORTED_CONTENT_TYPE, UNSUPPORTED_IMAGE_FORMAT, IMAGE_TOO_COMPLEX): a body that is not multipart/form-data, bytes that are not an image in one of ${formats}, or an image whose structure is beyond what the service reads`)
      }
    }
  }, extract)
}

/** A body schema's check before the handler: the body has not been read yet, so there is nothing to check. */
const readByTheHandler = (() => true) as ReturnType<FastifySchemaCompiler<unknown>>

/**
 * The JSON body's shape, by its schema: without `image` there is no image (NO_IMAGE); anything else that breaks it is
 * a VALIDATION_ERROR naming the member, in Fastify's words for any body ("body/image must be string").
 */
function checkJsonShape (validate: ReturnType<FastifySchemaCompiler<unknown>>, body: unknown): void {
  if (validate(body) === true) return
  const issue = (validate as { errors?: Array<{ keyword: string, instancePath: string, message?: string, params: Record<string, unknown> }> }).errors?.[0]
  if (issue === undefined) throw new ValidationError('body is not valid')
  if (issue.keyword === 'required' && issue.params['missingProperty'] === IMAGE_FIELD) throw new NoImageError()
  throw new ValidationError(`body${issue.instancePath} ${issue.message ?? 'is not valid'}`)
}
