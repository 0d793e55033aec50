import { Socket } from 'node:net'
import { finished } from 'node:stream/promises'
import multipart, { type MultipartFile } from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { FieldTooLargeError, ForbiddenKeyError, MalformedMultipartError, ServiceError, TooManyFieldsError, TooManyFilesError } from '../src/errors.ts'
import { receiveImage, releaseChunk, type IntakeOptions, type StoredImage } from '../src/metadata/intake.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The image of the body, received whole and checked: on disk in the scratch directory. Set by this plugin for the
     * multipart `image` file, by plugins/json-image-body.ts for a JSON data URI.
     */
    uploadedImage: StoredImage | undefined
    /** File parts seen so far in this multipart body, whatever their field. */
    multipartFileCount: number
    /** The multipart body has been read whole (its parts parsed and attached to the body). */
    multipartBodyRead: boolean
  }
}

export interface MultipartOptions {
  maxUploadBytes: number
}

/** The multipart field that carries the image. */
export const IMAGE_FIELD = 'image'
/** Text fields besides the image: the route takes none, but clients add a few (a file name, a description). */
export const MAX_TEXT_FIELDS = 16
/** The longest text field; a longer one is refused (FIELD_TOO_LARGE), never silently cut. */
export const MAX_FIELD_BYTES = 64 * 1024

/**
 * multipart/form-data for the context it is registered in: the `image` file part streams into the metadata intake
 * (a scratch file, never memory); other file parts are read past. Text fields are attached to the body so that the
 * route's schema validates and documents both request variants. Depends on the scratch plugin.
 */
async function multipartUploads (fastify: FastifyInstance, options: MultipartOptions): Promise<void> {
  if (!fastify.hasRequestDecorator('uploadedImage')) fastify.decorateRequest('uploadedImage', undefined)
  fastify.decorateRequest('multipartFileCount', 0)
  fastify.decorateRequest('multipartBodyRead', false)

  // Before the parser sees the body: a boundary that is missing, empty or given twice leaves it nothing to parse by.
  fastify.addHook('preValidation', async (request) => {
    if (!request.isMultipart()) return
    const problem = boundaryProblem(request.headers['content-type'] ?? '')
    if (problem !== undefined) throw new MalformedMultipartError(problem)
  })

  await fastify.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: {
      fileSize: options.maxUploadBytes,
      files: 2,
      fields: MAX_TEXT_FIELDS,
      // One byte over the limit, so that a longer field is seen (below) rather than cut to fit.
      fieldSize: MAX_FIELD_BYTES + 1,
      parts: MAX_TEXT_FIELDS + 2,
      headerPairs: 100
    },
    async onFile (this: FastifyRequest, part: MultipartFile) {
      this.multipartFileCount += 1
      if (this.multipartFileCount > 1) throw new TooManyFilesError()
      if (part.fieldname !== IMAGE_FIELD) {
        // Not the image: read past it. Alone it means no image was sent; with the image, one file too many.
        await drain(part)
        return
      }
      try {
        // The stream is left open when the intake refuses the bytes: drained below, the client gets its answer.
        const chunks = part.file.iterator({ destroyOnReturn: false })
        this.uploadedImage = await receiveImage(chunks, {
          scratchFile: (extension) => this.scratchFile(extension),
          maxBytes: options.maxUploadBytes,
          ...releasingSocketChunks(this)
        })
      } catch (error) {
        if (!part.file.destroyed) await drain(part).catch(() => {})
        // An empty file is no image: leaving `image` out of the body makes validation answer NO_IMAGE.
        if ((error as { code?: string }).code === 'NO_IMAGE') return
        throw error
      }
      ;(part as MultipartFile & { value: string }).value = part.filename || IMAGE_FIELD
    }
  })

  fastify.addHook('preValidation', async (request) => {
    if (!request.isMultipart()) return
    request.multipartBodyRead = true
    const values = Object.values(request.body as Record<string, unknown> | undefined ?? {}).flat()
    if (values.some((value) => typeof value === 'string' && Buffer.byteLength(value) > MAX_FIELD_BYTES)) {
      throw new FieldTooLargeError(MAX_FIELD_BYTES)
    }
  })
}

/**
 * The multipart parser's failures in the service's words. Its own limits have codes; a body it cannot parse comes as
 * a plain Error (busboy's), which while the body is being read can only mean that the body is malformed.
 */
export function multipartError (error: Error & { code?: string }, request: FastifyRequest): Error {
  if (error instanceof ServiceError || !request.isMultipart()) return error
  switch (error.code) {
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new TooManyFieldsError(MAX_TEXT_FIELDS)
    case 'FST_PROTO_VIOLATION':
      return new ForbiddenKeyError('of a property every object has (such as "__proto__" or "constructor") for a multipart field')
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new MalformedMultipartError('the body is not multipart/form-data')
    case 'FST_MP_PREMATURE_CLOSE':
    case 'ECONNRESET':
      // The client closed the connection mid-body (the request stream's own "aborted"): nobody reads the answer.
      return new MalformedMultipartError('the request was closed before the body ended')
  }
  if (error.code !== undefined || request.multipartBodyRead) return error
  if (/boundary not found/i.test(error.message)) return new MalformedMultipartError('the Content-Type names no boundary')
  if (/unexpected end|terminated early/i.test(error.message)) {
    return new MalformedMultipartError('the body ended before its closing boundary, or its parts do not match the boundary (lines must end with CRLF)')
  }
  return new MalformedMultipartError('the body is not valid multipart/form-data')
}

/** What is wrong with a multipart Content-Type's boundary parameter, if anything (RFC 2046 §5.1.1). */
function boundaryProblem (contentType: string): string | undefined {
  const boundaries = contentType.split(';').slice(1).map((parameter) => parameter.trim())
    .filter((parameter) => parameter.toLowerCase().startsWith('boundary='))
  if (boundaries.length === 0) return 'the Content-Type names no boundary'
  if (boundaries.length > 1) return 'the Content-Type names more than one boundary'
  const value = boundaries[0]!.slice('boundary='.length).replace(/^"(.*)"$/, '$1')
  if (value.length === 0 || value.length > 70) return 'the boundary must be 1 to 70 characters long'
  return undefined
}

/**
 * From a socket, each body chunk is a copy Node's HTTP parser made for this request alone, and busboy passes the file
 * on as views of those chunks, each whole unless a boundary cuts it: such a chunk is freed as soon as the intake has
 * copied it (see `releaseChunk`), instead of waiting, with the other uploads' chunks, for a full collection. Only the
 * request's own chunks are: busboy also passes on views of buffers it keeps and reuses (its boundary look-behind).
 * Nothing is freed under `inject` (light-my-request), where a chunk may be the caller's own buffer.
 */
function releasingSocketChunks (request: FastifyRequest): Pick<IntakeOptions, 'release'> {
  const raw = request.raw
  if (!(raw.socket instanceof Socket)) return {}
  const own = new WeakSet<ArrayBufferLike>()
  // After the parser's own listener: the intake reads a chunk's views only once busboy has cut them from it.
  const remember = (chunk: Buffer): void => { own.add(chunk.buffer) }
  raw.on('data', remember)
  return { release: (chunk) => { if (own.has(chunk.buffer)) releaseChunk(chunk) } }
}

async function drain (part: MultipartFile): Promise<void> {
  part.file.resume()
  await finished(part.file)
}

export default fp(multipartUploads, { name: 'multipart-uploads', fastify: '5.x', dependencies: ['scratch'] })
