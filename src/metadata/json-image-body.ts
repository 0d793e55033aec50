import { unlink } from 'node:fs/promises'
import { BodyTooLargeError, ImageTooLargeError, InvalidJsonError, withCause } from '../errors.ts'
import { receiveImage, type IntakeOptions, type StoredImage } from './intake.ts'
import { JsonDataUri, maxDataUriBodyBytes } from './json-data-uri.ts'

export interface JsonImageBodyOptions extends Omit<IntakeOptions, 'release'> {
  /**
   * The body is refused (BODY_TOO_LARGE) as soon as more bytes than this have arrived. By default the limit is the
   * longest body that can carry an image of `maxBytes` (`maxDataUriBodyBytes`), and a body over it is an image too
   * large (IMAGE_TOO_LARGE).
   */
  maxBodyBytes?: number
  /** The length the body declares (its Content-Length): one over the limit is refused before any of it is read. */
  declaredBytes?: number
  /** False: the body is only checked, its image neither decoded nor stored (true by default). */
  receive?: boolean
  /**
   * Called with each body chunk once it has been scanned: a source whose chunks are its own (Node's HTTP parser copies
   * every body chunk from a socket into a buffer of its own) frees them here (`releaseChunk`) rather than at V8's
   * next collection. Not the decoded image bytes, which are the decoder's buffer, reused for the next piece.
   */
  release?: (chunk: Buffer) => void
}

export interface JsonImageBody {
  /**
   * The body as its schema should see it, without its contents: each value of the right kind, `image` a string
   * standing for the data URI (its header, or empty), the members besides `image` left out.
   */
  body: unknown
  /** The image, received whole and checked (src/metadata/intake.ts). */
  image?: StoredImage
  /**
   * Why the image was refused (INVALID_DATA_URI, INVALID_BASE64, NO_IMAGE, IMAGE_TOO_LARGE, UNSUPPORTED_IMAGE_FORMAT…):
   * the body itself is valid, so this is reported after the request's own checks, as for a body read whole.
   */
  imageError?: Error
}

/**
 * Reads a JSON body `{"image": "data:image/…;base64,…"}` as it arrives (src/metadata/json-data-uri.ts): the data URI
 * is decoded piece by piece straight into the intake (hashed, sniffed, written to a scratch file), so neither the
 * body, nor the string, nor the image is ever whole in memory: only a network chunk, its decoded bytes and the
 * intake's batch. The body is read only as fast as the intake writes, and to its end. Errors come as a body read
 * whole would give them: the body's own (INVALID_JSON, FORBIDDEN_KEY, a repeated `image`) once it has all arrived,
 * before any error of the image, which is returned rather than thrown; a body over its limit, or one that stops short
 * (the connection closed), at once. A refused image stops being decoded (the intake removes what it wrote) while the
 * rest of the body is still read and checked. Nothing is left on disk when it throws. The source's iterator is never
 * ended early (`return`), which for a request stream would destroy the connection with it.
 */
export async function receiveJsonImageBody (chunks: AsyncIterable<Buffer>, options: JsonImageBodyOptions): Promise<JsonImageBody> {
  const source = chunks[Symbol.asyncIterator]()
  const body = new JsonDataUri(options.maxBytes, { decode: options.receive ?? true })
  const limit = options.maxBodyBytes ?? maxDataUriBodyBytes(options.maxBytes)
  const tooLarge = (): Error => options.maxBodyBytes === undefined ? new ImageTooLargeError(options.maxBytes) : new BodyTooLargeError(limit)
  if (options.declaredBytes !== undefined && options.declaredBytes > limit) throw tooLarge()
  let receivedBytes = 0
  let ended = false
  /** The image's bytes decoded from the last chunk read and not yet handed to the intake: valid until the next. */
  let decoded: Buffer | undefined
  /** A failure of the body's transport or size: it ends the reading at once, whatever else was going on. */
  let fatal: Error | undefined
  let image: StoredImage | undefined

  /** Reads and scans the next chunk; false when the body has ended. */
  const readChunk = async (): Promise<boolean> => {
    if (ended) return false
    let next: IteratorResult<Buffer>
    try {
      next = await source.next()
    } catch (error) {
      // The connection closed mid-body: what arrived is not a JSON document.
      throw (fatal = withCause(new InvalidJsonError(), error))
    }
    if (next.done === true) {
      ended = true
      body.end()
      return false
    }
    receivedBytes += next.value.length
    if (receivedBytes > limit) throw (fatal = tooLarge())
    decoded = body.write(next.value)
    options.release?.(next.value)
    return true
  }

  /** The image's bytes, as the intake pulls them: it reads the body on only as fast as they are written. */
  async function * imageBytes (): AsyncGenerator<Buffer> {
    for (;;) {
      if (body.bodyError !== undefined) throw body.bodyError
      if (body.imageError !== undefined) throw body.imageError
      if (decoded !== undefined) {
        const bytes = decoded
        decoded = undefined
        yield bytes
      }
      if (body.imageEnded) return
      if (!await readChunk()) throw body.bodyError ?? new InvalidJsonError()
    }
  }

  try {
    while (await readChunk()) {
      if (!body.imageBegun || image !== undefined || body.imageError !== undefined || body.bodyError !== undefined) continue
      try {
        // The decoded bytes are the decoder's buffer, reused for the next piece: never the intake's to free.
        image = await receiveImage(imageBytes(), { scratchFile: options.scratchFile, maxBytes: options.maxBytes })
      } catch (error) {
        if (fatal !== undefined) throw fatal
        if (error !== body.bodyError) body.refuseImage(error as Error)
        decoded = undefined
      }
    }
    if (body.bodyError !== undefined) throw body.bodyError
  } catch (error) {
    // Like the intake's: nothing is left on disk when it throws.
    if (image !== undefined) await unlink(image.path).catch(() => {})
    throw error
  }
  return {
    body: body.shape,
    ...(image === undefined ? {} : { image }),
    ...(body.imageError === undefined ? {} : { imageError: body.imageError })
  }
}
