import { ImageTooLargeError, InvalidBase64Error, InvalidDataUriError, NoImageError, NotAnImageMediaTypeError } from '../errors.ts'

// data:<type>/<subtype>[;param=value...];base64,<data>
const DATA_URI_HEADER = /^data:([a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+)((?:;[^;,]*)*?);base64,/i
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const WHITESPACE = /[\t\n\r ]/g

/**
 * Decodes `data:image/<subtype>;base64,<data>` into bytes. The declared subtype is not trusted: the format is decided
 * later from the bytes. Throws the service's 400/413 errors for anything else.
 */
export function decodeImageDataUri (uri: string, maxBytes: number): Buffer {
  const header = DATA_URI_HEADER.exec(uri)
  if (header === null) throw new InvalidDataUriError()
  const mediaType = header[1]!.toLowerCase()
  if (!mediaType.startsWith('image/')) throw new NotAnImageMediaTypeError(mediaType)

  let data = uri.slice(header[0].length)
  // Some encoders wrap base64 at 76 columns; the line breaks carry no data.
  if (WHITESPACE.test(data)) data = data.replace(WHITESPACE, '')
  if (data.length === 0) throw new NoImageError()
  if (data.length % 4 === 1 || !BASE64.test(data)) throw new InvalidBase64Error()

  const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
  const decodedLength = Math.floor(data.length * 3 / 4) - padding
  if (decodedLength > maxBytes) throw new ImageTooLargeError(maxBytes)
  return Buffer.from(data, 'base64')
}

/** The longest JSON body that can carry an image of `maxBytes` as a data URI, with room for the envelope. */
export function maxDataUriBodyBytes (maxBytes: number): number {
  return Math.ceil(maxBytes / 3) * 4 + 4096
}
