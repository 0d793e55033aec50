import { ImageTooLargeError, InvalidBase64Error, InvalidDataUriError, NoImageError, NotAnImageMediaTypeError } from '../errors.ts'

/** The header `data:<type>/<subtype>[;param=value…];base64,` ends within this many characters, or it is no image URI. */
const MAX_HEADER_LENGTH = 512
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i
const PADDING_ONLY = /^=*$/
const WHITESPACE = /[\t\n\r ]/
const WHITESPACE_ALL = /[\t\n\r ]+/g

/**
 * Decodes `data:image/<subtype>;base64,<data>` as its text arrives, piece by piece (the pieces of a JSON string as
 * the body streams in): each piece is checked and decoded on its own, so no regular expression runs over the whole
 * image and neither its text nor its bytes ever exist whole in memory (the intake writes each piece's bytes to disk).
 * The bytes are decoded into one buffer, reused: what `write` and `end` return is valid until the next call (the
 * intake copies it at once), so decoding a 25 MB image leaves no garbage behind. Base64 may be wrapped over lines,
 * and its padding left out. The declared subtype is not trusted: the format is decided from the bytes. Throws the
 * service's errors for anything else, IMAGE_TOO_LARGE as soon as the bytes decoded pass `maxBytes`.
 */
export class DataUriDecoder {
  readonly #maxBytes: number
  #received = false
  /** The text before the comma, while it is being read; then the whole header. */
  #header = ''
  #inData = false
  /** Base64 characters not decoded yet: fewer than four, so that every piece decodes alone. */
  #carry = ''
  /** Base64 characters seen, padding left out; then the padding, which only the end may hold. */
  #dataCharacters = 0
  #padding = 0
  #decodedBytes = 0
  #output = Buffer.alloc(0)

  constructor (maxBytes: number) {
    this.#maxBytes = maxBytes
  }

  /** `data:<type>/<subtype>[;…];base64` once the comma has been read; what the URI declares, for people. */
  get header (): string | undefined {
    return this.#inData ? this.#header : undefined
  }

  /** The next piece of the URI's text; the bytes it completes, if any, until the next call. */
  write (text: string): Buffer | undefined {
    if (text.length === 0) return undefined
    this.#received = true
    if (!this.#inData) {
      const comma = text.indexOf(',')
      this.#header += comma < 0 ? text : text.slice(0, comma)
      if (this.#header.length > MAX_HEADER_LENGTH) throw new InvalidDataUriError()
      if (comma < 0) return undefined
      checkHeader(this.#header)
      this.#inData = true
      return this.#decode(text.slice(comma + 1))
    }
    return this.#decode(text)
  }

  /** The URI has ended: the last bytes, if any (until the next call). Throws NO_IMAGE when it held none. */
  end (): Buffer | undefined {
    if (!this.#received) throw new NoImageError()
    if (!this.#inData) throw new InvalidDataUriError()
    const length = this.#dataCharacters + this.#padding
    if (length % 4 === 1 || (this.#padding > 0 && length % 4 !== 0)) throw new InvalidBase64Error()
    const bytes = this.#carry.length > 0 ? this.#bytes(this.#carry, 0) : 0
    const last = bytes > 0 ? this.#output.subarray(0, bytes) : undefined
    this.#carry = ''
    if (this.#decodedBytes === 0) throw new NoImageError()
    return last
  }

  #decode (text: string): Buffer | undefined {
    // Some encoders wrap base64 at 76 columns; the line breaks carry no data.
    let data = WHITESPACE.test(text) ? text.replace(WHITESPACE_ALL, '') : text
    if (data.length === 0) return undefined
    // Padding can only end the data: once it has begun, nothing else may follow.
    const padding = this.#padding > 0 ? 0 : data.indexOf('=')
    if (padding >= 0) {
      const tail = data.slice(padding)
      this.#padding += tail.length
      if (!PADDING_ONLY.test(tail) || this.#padding > 2) throw new InvalidBase64Error()
      data = data.slice(0, padding)
    }
    // The base64url characters, which Node's decoder would take (the rest of the alphabet check is in #bytes).
    if (data.includes('-') || data.includes('_')) throw new InvalidBase64Error()
    this.#dataCharacters += data.length
    if (data.length === 0) return undefined
    // The carried characters and the first of this piece complete one quantum; the rest is decoded from a slice of
    // the piece as it is (joining the piece to the carry copied it whole: twice the heap the decoding allocates).
    const completing = this.#carry.length === 0 ? 0 : Math.min(4 - this.#carry.length, data.length)
    let decoded = 0
    if (completing > 0) {
      this.#carry += data.slice(0, completing)
      if (this.#carry.length < 4) return undefined
      decoded = this.#bytes(this.#carry, 0)
    }
    const whole = data.length - ((data.length - completing) % 4)
    this.#carry = data.slice(whole)
    if (whole > completing) decoded += this.#bytes(data.slice(completing, whole), decoded)
    return decoded === 0 ? undefined : this.#output.subarray(0, decoded)
  }

  /**
   * Whole quanta (or the unpadded last one), decoded into the reused buffer at `offset`; how many bytes they gave. A
   * character outside the alphabet is found here rather than by a regular expression over every piece (which took
   * three quarters of a large data URI's CPU): Node's decoder skips such characters, so the bytes come out fewer than
   * the characters promise.
   */
  #bytes (base64: string, offset: number): number {
    const size = Math.ceil(base64.length / 4) * 3
    if (this.#output.length < offset + size) {
      const larger = Buffer.allocUnsafeSlow(Math.max(offset + size, 2 * this.#output.length))
      this.#output.copy(larger, 0, 0, offset)
      this.#output = larger
    }
    const length = this.#output.write(base64, offset, size, 'base64')
    if (length !== Math.floor(base64.length * 3 / 4)) throw new InvalidBase64Error()
    this.#decodedBytes += length
    if (this.#decodedBytes > this.#maxBytes) throw new ImageTooLargeError(this.#maxBytes)
    return length
  }
}

/** `data:<type>/<subtype>[;param=value…];base64`: an image media type, base64 the last parameter. */
function checkHeader (header: string): void {
  if (header.slice(0, 5).toLowerCase() !== 'data:') throw new InvalidDataUriError()
  const [mediaType = '', ...parameters] = header.slice('data:'.length).split(';')
  if (parameters.at(-1)?.toLowerCase() !== 'base64' || !MEDIA_TYPE.test(mediaType)) throw new InvalidDataUriError()
  if (!mediaType.toLowerCase().startsWith('image/')) throw new NotAnImageMediaTypeError(mediaType.toLowerCase())
}

/** The longest JSON body that can carry an image of `maxBytes` as a data URI, with room for the envelope. */
export function maxDataUriBodyBytes (maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 4096
}
