import { Socket } from 'node:net'
import { finished } from 'node:stream/promises'
import multipart, { type MultipartFile } from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import {
  FieldTooLargeError,
  ForbiddenKeyError,
  ImageTooLargeError,
  MalformedMultipartError,
  NoImageError,
  ServiceError,
  TooManyFieldsError,
  TooManyFilesError
} from '../src/errors.ts'
import { receiveImage, releaseChunk, type IntakeOptions, type StoredImage } from '../src/metadata/intake.ts'

export interface MultipartOptions {
  maxUploadBytes: number
}

/** The multipart field that carries the image. */
export const IMAGE_FIELD = 'image'
/** Text fields besides the image: the route takes none, but clients add a few (a file name, a description). */
export const MAX_TEXT_FIELDS = 16
/** The longest text field; a longer one is refused (FIELD_TOO_LARGE), never silently cut. */
export const MAX_FIELD_BYTES = 64 * 1024

/** The longest multipart body a valid upload of `maxUploadBytes` can be: the file, the text fields, their headers. */
export function maxUploadBodyBytes (maxUploadBytes: number): number {
  return maxUploadBytes + (MAX_TEXT_FIELDS + 1) * 2 * MAX_FIELD_BYTES
}

/**
 * multipart/form-data for the context it is registered in, with the limits of one image upload. The body is read by
 * the route's handler (`receiveUpload`), not before: Fastify only notes that it is multipart.
 */
async function multipartUploads (fastify: FastifyInstance, options: MultipartOptions): Promise<void> {
  await fastify.register(multipart, {
    limits: {
      // One byte more than allowed reaches the intake, which refuses the image at once (IMAGE_TOO_LARGE) instead of
      // storing the allowed bytes and hearing of the rest at the end of the body.
      fileSize: options.maxUploadBytes + 1,
      // The image, and one more to tell that there was one too many.
      files: 2,
      fields: MAX_TEXT_FIELDS,
      // One byte over the limit, so that a longer field is seen (below) rather than cut to fit.
      fieldSize: MAX_FIELD_BYTES + 1,
      parts: MAX_TEXT_FIELDS + 2,
      headerPairs: 100
    }
  })
}

/**
 * The image of a multipart body, received as the body streams in: the one file part, `image`, goes through the
 * intake (src/metadata/intake.ts) into a scratch file of the request, checked on the way; text fields (at most
 * MAX_TEXT_FIELDS, each at most MAX_FIELD_BYTES) are read and dropped. The body is read to its end, for a second file
 * may follow. The first thing wrong with it is thrown, as the service's error: the multipart parser's own failures
 * are translated here, and only here (`multipartError`). What is left of the body when it throws is the error
 * answer's business (plugins/unread-body.ts).
 */
export async function receiveUpload (request: FastifyRequest, maxBytes: number): Promise<StoredImage> {
  const problem = boundaryProblem(request.headers['content-type'] ?? '')
  if (problem !== undefined) throw new MalformedMultipartError(problem)
  const scratchFile = (extension: string): string => request.scratchFile(extension)
  let image: StoredImage | undefined
  let files = 0
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (part.valueTruncated || (typeof part.value === 'string' && Buffer.byteLength(part.value) > MAX_FIELD_BYTES)) {
          throw new FieldTooLargeError(MAX_FIELD_BYTES)
        }
        continue
      }
      files += 1
      if (files > 1) throw new TooManyFilesError()
      // Not the image: read past it. Alone it means no image was sent; with the image, one file too many.
      if (part.fieldname === IMAGE_FIELD) image = await receiveImagePart(part, { scratchFile, maxBytes, ...releasingSocketChunks(request) })
      else await drain(part)
    }
  } catch (error) {
    throw error instanceof ServiceError ? error : multipartError(error as Error & { code?: string }, maxBytes)
  }
  if (image === undefined) throw new NoImageError()
  return image
}

/** The `image` part through the intake; undefined for an empty file, which is no image. */
async function receiveImagePart (part: MultipartFile, intake: IntakeOptions): Promise<StoredImage | undefined> {
  try {
    // Not destroyed when the intake refuses the bytes: a destroyed part would stop the parser, and with it the body.
    return await receiveImage(part.file.iterator({ destroyOnReturn: false }), intake)
  } catch (error) {
    if ((error as { code?: string }).code === 'NO_IMAGE') return undefined
    throw error
  }
}

/**
 * The multipart parser's failures in the service's words. Its own limits have codes; a body it cannot parse comes as
 * a plain Error (busboy's), which while the body is being read can only mean that the body is malformed. Any other
 * failure with a code (the disk's, say) is not the client's, and stays as it is.
 */
function multipartError (error: Error & { code?: string }, maxBytes: number): Error {
  switch (error.code) {
    case 'FST_FIELDS_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new TooManyFieldsError(MAX_TEXT_FIELDS)
    case 'FST_FILES_LIMIT':
      return new TooManyFilesError()
    case 'FST_REQ_FILE_TOO_LARGE':
      // A file besides the image, over the limit (the image itself is refused by the intake).
      return new ImageTooLargeError(maxBytes)
    case 'FST_PROTO_VIOLATION':
      return new ForbiddenKeyError('of a property every object has (such as "__proto__" or "constructor") for a multipart field')
    case 'FST_MP_PREMATURE_CLOSE':
    case 'ECONNRESET':
      // The client closed the connection mid-body (the request stream's own "aborted"): nobody reads the answer.
      return new MalformedMultipartError('the request was closed before the body ended')
  }
  if (error.code !== undefined) return error
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
 * Nothing is freed under `inject` (light-my-request), where a chunk may be the caller's own buffer. Asked for once the
 * parser reads the request: a 'data' listener added before would start the stream flowing past it.
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
