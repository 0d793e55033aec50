import { ImageTooLargeError, InvalidBase64Error, InvalidDataUriError, NoImageError, NotAnImageMediaTypeError } from '../errors.ts'

/** The header `data:<type>/<subtype>[;param=value…];base64,` ends within this many characters, or it is no image URI. */
const MAX_HEADER_LENGTH = 512
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i
/** Base64 characters decoded at a time: 768 KiB of bytes per chunk (a multiple of 4, so chunks decode alone). */
const CHUNK_CHARACTERS = 1024 * 1024
const ALPHABET_ONLY = /^[A-Za-z0-9+/]*$/
const WHITESPACE = /[\t\n\r ]/
const WHITESPACE_ALL = /[\t\n\r ]+/g

/**
 * Decodes `data:image/<subtype>;base64,<data>`, one chunk of bytes at a time: the string is checked and decoded in
 * slices, so no regular expression runs over the whole image, its characters are never counted one by one, and the
 * bytes never exist whole in memory (the intake writes each chunk to disk). The declared subtype is not trusted: the
 * format is decided from the bytes. Throws the service's errors for anything else, IMAGE_TOO_LARGE as soon as the
 * bytes decoded pass `maxBytes`.
 */
export function * decodeImageDataUri (uri: string, maxBytes: number): Generator<Buffer> {
  if (uri.length === 0) throw new NoImageError()
  const comma = uri.indexOf(',', 0)
  if (uri.slice(0, 5).toLowerCase() !== 'data:' || comma < 0 || comma > MAX_HEADER_LENGTH) throw new InvalidDataUriError()
  const [mediaType = '', ...parameters] = uri.slice('data:'.length, comma).split(';')
  if (parameters.at(-1)?.toLowerCase() !== 'base64' || !MEDIA_TYPE.test(mediaType)) throw new InvalidDataUriError()
  if (!mediaType.toLowerCase().startsWith('image/')) throw new NotAnImageMediaTypeError(mediaType.toLowerCase())

  const start = comma + 1
  if (start === uri.length) throw new NoImageError()

  let carry = ''
  let decodedBytes = 0
  for (let at = start; at < uri.length; at += CHUNK_CHARACTERS) {
    let slice = carry + uri.slice(at, at + CHUNK_CHARACTERS)
    // Some encoders wrap base64 at 76 columns; the line breaks carry no data.
    if (WHITESPACE.test(slice)) slice = slice.replace(WHITESPACE_ALL, '')
    if (at + CHUNK_CHARACTERS < uri.length) {
      // Each slice but the last ends on a multiple of four characters, so that it decodes alone; padding cannot
      // appear before the end.
      const whole = slice.length - (slice.length % 4)
      carry = slice.slice(whole)
      slice = slice.slice(0, whole)
      if (!ALPHABET_ONLY.test(slice)) throw new InvalidBase64Error()
    } else {
      const padding = slice.endsWith('==') ? 2 : slice.endsWith('=') ? 1 : 0
      const data = slice.slice(0, slice.length - padding)
      const length = slice.length
      if (!ALPHABET_ONLY.test(data) || length % 4 === 1 || (padding > 0 && length % 4 !== 0)) throw new InvalidBase64Error()
      slice = data
    }
    if (slice.length === 0) continue
    const bytes = Buffer.from(slice, 'base64')
    decodedBytes += bytes.length
    if (decodedBytes > maxBytes) throw new ImageTooLargeError(maxBytes)
    yield bytes
  }
  if (decodedBytes === 0) throw new NoImageError()
}

/** The longest JSON body that can carry an image of `maxBytes` as a data URI, with room for the envelope. */
export function maxDataUriBodyBytes (maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 4096
}
