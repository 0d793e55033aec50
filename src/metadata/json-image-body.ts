import { unlink } from 'node:fs/promises'
import { BodyTooLargeError, ForbiddenKeyError, InvalidJsonError, ValidationError, withCause } from '../errors.ts'
import { DataUriDecoder } from './data-uri.ts'
import { receiveImage, type IntakeOptions, type StoredImage } from './intake.ts'

/** The kinds of JSON value, as a schema tells them apart. */
export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'true' | 'false' | 'null'

/**
 * Deeper nesting is refused (VALIDATION_ERROR): each level costs a byte of the scanner's stack. Far beyond any real
 * body, and beyond the 10,000 levels of the bad-input matrix, which the schema refuses by type as it always did.
 */
export const MAX_NESTING = 100_000
/** Keys are compared with a few short names; a longer key is none of them, and is not kept. */
const MAX_KEY_LENGTH = 16

// Where the scanner stands. Numbers, not an enum: Node runs this file by stripping its types.
const START = 0
const BOM_1 = 1
const BOM_2 = 2
const VALUE = 3
const ARRAY_FIRST = 4
const AFTER_VALUE = 5
const OBJECT_FIRST = 6
const OBJECT_KEY = 7
const COLON = 8
const STRING = 9
const ESCAPE = 10
const UNICODE = 11
const UTF8 = 12
const LITERAL = 13
const MINUS = 14
const ZERO = 15
const INTEGER = 16
const POINT = 17
const FRACTION = 18
const EXPONENT = 19
const EXPONENT_SIGN = 20
const EXPONENT_DIGITS = 21
const FAILED = 22
/** Where a number may end. */
const NUMBER_ENDS = new Set([ZERO, INTEGER, FRACTION, EXPONENT_DIGITS])

// What the string being read is for.
const OTHER_STRING = 0
const KEY_STRING = 1
const IMAGE_STRING = 2

// A frame of the container stack: an object or an array; an object may be the value of a "constructor" key.
const IN_ARRAY = 0
const IN_OBJECT = 1
const IN_CONSTRUCTOR = 2

/** Bytes that end a run of ordinary string characters: `"`, `\`, control characters and the start of UTF-8 sequences. */
const STRING_STOP = new Uint8Array(256)
for (let byte = 0; byte < 256; byte++) STRING_STOP[byte] = byte < 0x20 || byte >= 0x80 || byte === 0x22 || byte === 0x5c ? 1 : 0

/**
 * Whether any of the four bytes of `word` is one STRING_STOP marks: 0x80 and above, below 0x20 (the "has less than"
 * bit trick), a quote or a backslash (the "has zero" trick on the word xor-ed with it). Exact for "any", not for
 * which: a word that has one is read again byte by byte.
 */
function wordHasStop (word: number): boolean {
  const quote = word ^ 0x22222222
  const backslash = word ^ 0x5c5c5c5c
  return ((word | ((word - 0x20202020) & ~word) | ((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash)) & 0x80808080) !== 0
}

/** Runs shorter than this are read byte by byte: a word view is not worth making for a key. */
const WORD_RUN_MIN = 64
/** Runs of the image string shorter than this are not offered to `takeImageRun`: not worth the call. */
const TAKEN_RUN_MIN = 64

/**
 * Where the ordinary string bytes starting at `from` end: the first byte STRING_STOP marks, or the end. Long runs (the
 * image's base64, megabytes of it) are read four bytes at a time, which takes a third of the time of a byte loop.
 */
function stringRunEnd (bytes: Buffer, from: number): number {
  const length = bytes.length
  let at = from
  if (length - at >= WORD_RUN_MIN) {
    // Words start at a multiple of four in the underlying memory; the bytes before the first one are read singly.
    while (at < length && ((bytes.byteOffset + at) & 3) !== 0 && STRING_STOP[bytes[at]!] === 0) at++
    if (((bytes.byteOffset + at) & 3) === 0) {
      const words = new Uint32Array(bytes.buffer, bytes.byteOffset + at, (length - at) >>> 2)
      let word = 0
      while (word < words.length && !wordHasStop(words[word]!)) word++
      at += word << 2
    }
  }
  while (at < length && STRING_STOP[bytes[at]!] === 0) at++
  return at
}

const ESCAPED: Record<number, string> = { 0x22: '"', 0x5c: '\\', 0x2f: '/', 0x62: '\b', 0x66: '\f', 0x6e: '\n', 0x72: '\r', 0x74: '\t' }
const LITERALS = ['true', 'false', 'null'] as const

/**
 * A JSON body read as it arrives, in one pass and bounded memory, whatever its size: the value of the top-level
 * member `image`, when it is a string, is handed on piece by piece (its escapes resolved) instead of being kept;
 * everything else is checked and forgotten, only the kinds of the body and of `image` remembered. It refuses what
 * the service's JSON parser refuses (plugins/json-body.ts: JSON.parse, secure-json-parse, UTF-8 only): any syntax
 * error, bytes that are not UTF-8, a `__proto__` key or a `constructor` object with a `prototype` key at any depth,
 * and `image` given twice (JSON.parse would keep the last silently). A leading byte order mark is skipped.
 *
 * Ours because no maintained library streams one string member of a JSON object into a sink with bounded memory:
 * @streamparser/json, jsonparse and clarinet hand over a string only whole (or, partially, as the whole prefix so
 * far); stream-json can hand one over in pieces, but decodes invalid UTF-8 into U+FFFD instead of refusing it, lets
 * its stack grow with the nesting, and allocates a token object per 256 characters (~130,000 for one 25 MB image).
 * Linear: each byte is looked at once, a string's ordinary characters by a table lookup in a tight loop; no regular
 * expression runs over the body.
 */
export class JsonBodyScanner {
  /** What the body is, once it has begun. */
  bodyKind: JsonKind | undefined
  /** What the top-level member `image` is, if the body is an object that has one. */
  imageKind: JsonKind | undefined
  /** The `image` string has begun; then, it has ended. */
  imageOpened = false
  imageClosed = false

  readonly #onImageBytes: (bytes: Uint8Array) => void
  readonly #takeImageRun: ((run: Uint8Array) => number) | undefined
  /** Where the next `"` is in the bytes being written (their length for none; -1 before it is looked for). */
  #nextQuote = -1
  #ignoreImage = false
  /** The image string's parts since the last write: runs of its bytes as they came, and escaped characters. */
  #imageParts: Array<Uint8Array | string> = []
  /** An escaped high surrogate that ended the last write's part: its pair may be the next write's first escape. */
  #heldSurrogate = ''
  #state = START
  #stack = new Uint8Array(64)
  #depth = 0
  #imageKeys = 0
  #forbiddenKey = false
  // The key just read, and what it says of the value that follows.
  #key = ''
  #keyTooLong = false
  #nextIsImage = false
  #nextIsConstructor = false
  // The string being read.
  #stringRole = OTHER_STRING
  #unicodeDigits = 0
  #codeUnit = 0
  #utf8Needed = 0
  #utf8Low = 0
  #utf8High = 0
  #codePoint = 0
  #literal = ''
  #literalAt = 0

  /**
   * `onImageBytes` receives the `image` string's text, its escapes resolved, in UTF-8 (as JSON.parse and then
   * `Buffer.from` would make it), in order, never an empty piece. The piece is valid only during the call: most often
   * it is a view of the bytes written. Without `takeImageRun`, there is at most one call per `write`.
   *
   * `takeImageRun`, if given, is offered each long run of the image string's bytes up to the next `"` (or the end of
   * the write), once everything before it has gone to `onImageBytes`, and says how many of its first bytes it took
   * (they go to `onImageBytes` no more). It must take only bytes it knows to be ordinary string characters
   * (printable ASCII, no quote or backslash): they are not checked again. Those it leaves, from the first it did
   * not take (an escape's backslash, say), are read as usual. This is how the image's base64 is decoded in the same
   * pass as the JSON around it is checked, instead of being checked first. The run is not cut at a backslash: a
   * base64 string holds none, and looking for one would be one more pass over every byte of the image.
   */
  constructor (onImageBytes: (bytes: Uint8Array) => void, takeImageRun?: (run: Uint8Array) => number) {
    this.#onImageBytes = onImageBytes
    this.#takeImageRun = takeImageRun
  }

  /** The rest of the `image` string is checked but no longer handed on (it has been refused already). */
  ignoreImage (): void {
    this.#ignoreImage = true
    this.#imageParts = []
    this.#heldSurrogate = ''
    if (this.#stringRole === IMAGE_STRING) this.#stringRole = OTHER_STRING
  }

  /** Reads the next bytes of the body; throws INVALID_JSON at the first byte that cannot belong to it. */
  write (bytes: Buffer): void {
    if (this.#state === FAILED) throw new InvalidJsonError()
    // Looked for again in each write: a source may write the same buffer again with new bytes in it.
    this.#nextQuote = -1
    try {
      this.#scan(bytes)
    } catch (error) {
      this.#state = FAILED
      this.#imageParts = []
      this.#heldSurrogate = ''
      throw error
    }
    this.#flushImage()
  }

  /** The body has ended: throws INVALID_JSON when it is incomplete, then FORBIDDEN_KEY, then a repeated `image`. */
  end (): void {
    if (this.#state === FAILED) throw new InvalidJsonError()
    // A number is the one value whose end only the end of the body can tell.
    if (this.#depth === 0 && NUMBER_ENDS.has(this.#state)) this.#state = AFTER_VALUE
    if (this.#state !== AFTER_VALUE || this.#depth > 0) {
      this.#state = FAILED
      throw new InvalidJsonError()
    }
    if (this.#forbiddenKey) throw new ForbiddenKeyError('"__proto__" or "constructor.prototype"')
    if (this.#imageKeys > 1) throw new ValidationError('body/image must be given once')
  }

  #scan (bytes: Buffer): void {
    const length = bytes.length
    let at = 0
    while (at < length) {
      if (this.#state === STRING) {
        at = this.#stringRun(bytes, at)
        continue
      }
      const byte = bytes[at]!
      switch (this.#state) {
        case START:
          if (byte === 0xef) {
            this.#state = BOM_1
            at++
          } else {
            this.#state = VALUE
          }
          break
        case BOM_1:
          if (byte !== 0xbb) throw new InvalidJsonError()
          this.#state = BOM_2
          at++
          break
        case BOM_2:
          if (byte !== 0xbf) throw new InvalidJsonError()
          this.#state = VALUE
          at++
          break
        case VALUE:
        case ARRAY_FIRST:
          if (isWhitespace(byte)) {
            at++
          } else if (byte === 0x5d && this.#state === ARRAY_FIRST) {
            this.#close(IN_ARRAY)
            at++
          } else {
            this.#startValue(byte)
            at++
          }
          break
        case AFTER_VALUE:
          if (isWhitespace(byte)) {
            at++
            break
          }
          if (this.#depth === 0) throw new InvalidJsonError()
          if (byte === 0x2c) {
            this.#state = this.#top() === IN_ARRAY ? VALUE : OBJECT_KEY
          } else if (byte === 0x5d) {
            this.#close(IN_ARRAY)
          } else if (byte === 0x7d) {
            this.#close(IN_OBJECT)
          } else {
            throw new InvalidJsonError()
          }
          at++
          break
        case OBJECT_FIRST:
        case OBJECT_KEY:
          if (isWhitespace(byte)) {
            at++
          } else if (byte === 0x22) {
            this.#key = ''
            this.#keyTooLong = false
            this.#openString(KEY_STRING)
            at++
          } else if (byte === 0x7d && this.#state === OBJECT_FIRST) {
            this.#close(IN_OBJECT)
            at++
          } else {
            throw new InvalidJsonError()
          }
          break
        case COLON:
          if (isWhitespace(byte)) {
            at++
          } else if (byte === 0x3a) {
            this.#state = VALUE
            at++
          } else {
            throw new InvalidJsonError()
          }
          break
        case ESCAPE:
          this.#escape(byte)
          at++
          break
        case UNICODE:
          this.#unicodeDigit(byte)
          at++
          break
        case UTF8:
          this.#utf8Continuation(byte)
          at++
          break
        case LITERAL:
          if (byte !== this.#literal.charCodeAt(this.#literalAt)) throw new InvalidJsonError()
          at++
          if (++this.#literalAt === this.#literal.length) this.#state = AFTER_VALUE
          break
        default:
          // A number: its bytes are consumed here; the byte that ends it is read again as what follows it.
          if (this.#numberByte(byte)) at++
      }
    }
  }

  /** Ordinary string characters up to the next byte that needs a look of its own; returns where reading stopped. */
  #stringRun (bytes: Buffer, from: number): number {
    const length = bytes.length
    let start = from
    if (this.#stringRole === IMAGE_STRING && this.#takeImageRun !== undefined && length - from >= TAKEN_RUN_MIN) {
      const stop = this.#quoteAtOrAfter(bytes, from)
      if (stop - from >= TAKEN_RUN_MIN) {
        // What came before goes first; then the run, unless the image has been refused meanwhile.
        this.#flushImage(true)
        if (this.#stringRole === IMAGE_STRING) start += this.#takeImageRun(bytes.subarray(from, stop))
      }
    }
    const at = stringRunEnd(bytes, start)
    if (at > start) {
      if (this.#stringRole === IMAGE_STRING) this.#imageParts.push(bytes.subarray(start, at))
      else if (this.#stringRole === KEY_STRING) this.#text(bytes.toString('latin1', start, at))
    }
    if (at === length) return at
    const byte = bytes[at]!
    if (byte === 0x22) {
      this.#closeString()
    } else if (byte === 0x5c) {
      this.#state = ESCAPE
    } else if (byte < 0x20) {
      throw new InvalidJsonError()
    } else {
      this.#utf8Lead(byte)
    }
    return at + 1
  }

  /**
   * The first `"` at or after `from`, or the end. It is searched for (natively) once, and again only once reading has
   * passed it: linear however many quotes the bytes hold.
   */
  #quoteAtOrAfter (bytes: Buffer, from: number): number {
    if (this.#nextQuote < from) this.#nextQuote = indexOrEnd(bytes, 0x22, from)
    return this.#nextQuote
  }

  #startValue (byte: number): void {
    const role = this.#depth === 0 ? 'body' : this.#nextIsImage ? 'image' : 'other'
    const constructorValue = this.#nextIsConstructor
    this.#nextIsImage = false
    this.#nextIsConstructor = false
    let kind: JsonKind
    if (byte === 0x7b) {
      kind = 'object'
      this.#push(constructorValue ? IN_OBJECT | IN_CONSTRUCTOR : IN_OBJECT)
      this.#state = OBJECT_FIRST
    } else if (byte === 0x5b) {
      kind = 'array'
      this.#push(IN_ARRAY)
      this.#state = ARRAY_FIRST
    } else if (byte === 0x22) {
      kind = 'string'
      const streamed = role === 'image' && !this.#ignoreImage
      if (role === 'image') this.imageOpened = true
      this.#openString(streamed ? IMAGE_STRING : OTHER_STRING)
    } else if (byte === 0x2d || (byte >= 0x30 && byte <= 0x39)) {
      kind = 'number'
      this.#state = byte === 0x2d ? MINUS : byte === 0x30 ? ZERO : INTEGER
    } else {
      const literal = LITERALS.find((word) => word.charCodeAt(0) === byte)
      if (literal === undefined) throw new InvalidJsonError()
      kind = literal
      this.#literal = literal
      this.#literalAt = 1
      this.#state = LITERAL
    }
    if (role === 'body') this.bodyKind = kind
    if (role === 'image') this.imageKind = kind
  }

  #push (frame: number): void {
    if (this.#depth === MAX_NESTING) throw new ValidationError(`body must not nest deeper than ${MAX_NESTING} levels`)
    if (this.#depth === this.#stack.length) {
      const grown = new Uint8Array(Math.min(this.#stack.length * 2, MAX_NESTING))
      grown.set(this.#stack)
      this.#stack = grown
    }
    this.#stack[this.#depth++] = frame
  }

  #top (): number {
    return this.#stack[this.#depth - 1]! & IN_OBJECT
  }

  #close (container: number): void {
    if (this.#depth === 0 || this.#top() !== container) throw new InvalidJsonError()
    this.#depth--
    this.#state = AFTER_VALUE
  }

  #openString (role: number): void {
    this.#stringRole = role
    this.#state = STRING
  }

  #closeString (): void {
    if (this.#stringRole === KEY_STRING) {
      this.#keyRead()
      this.#state = COLON
      return
    }
    if (this.imageOpened && !this.imageClosed && this.#depth === 1) {
      this.imageClosed = true
      this.#flushImage()
    }
    this.#state = AFTER_VALUE
  }

  #keyRead (): void {
    const key = this.#keyTooLong ? undefined : this.#key
    const inConstructor = (this.#stack[this.#depth - 1]! & IN_CONSTRUCTOR) !== 0
    if (key === '__proto__' || (key === 'prototype' && inConstructor)) this.#forbiddenKey = true
    this.#nextIsConstructor = key === 'constructor'
    if (key === 'image' && this.#depth === 1) {
      // Only the first `image` is read: a second one makes the body invalid anyway (end()).
      this.#imageKeys++
      this.#nextIsImage = this.#imageKeys === 1
    }
  }

  /** Characters of the string being read, its escapes resolved: kept for a key, handed on for the image. */
  #text (text: string): void {
    if (this.#stringRole === IMAGE_STRING) {
      this.#imageParts.push(text)
    } else if (this.#stringRole === KEY_STRING && !this.#keyTooLong) {
      if (this.#key.length + text.length > MAX_KEY_LENGTH) this.#keyTooLong = true
      else this.#key += text
    }
  }

  /** The image's parts so far to `onImageBytes`; with `runFollows`, or once closed, no surrogate is held back. */
  #flushImage (runFollows = false): void {
    const parts = this.#imageParts
    const final = runFollows || this.imageClosed
    if (parts.length === 0 && (this.#heldSurrogate === '' || !final)) return
    this.#imageParts = []
    const only = parts[0]
    if (parts.length === 1 && typeof only !== 'string' && this.#heldSurrogate === '') {
      this.#onImageBytes(only!)
      return
    }
    // Escaped characters are joined before they are encoded, so that the two escapes of a surrogate pair make one.
    const pieces: Uint8Array[] = []
    let text = this.#heldSurrogate
    this.#heldSurrogate = ''
    for (const part of parts) {
      if (typeof part === 'string') {
        text += part
        continue
      }
      if (text !== '') pieces.push(Buffer.from(text))
      text = ''
      pieces.push(part)
    }
    const last = text.charCodeAt(text.length - 1)
    if (!final && last >= 0xd800 && last <= 0xdbff) {
      this.#heldSurrogate = text.slice(-1)
      text = text.slice(0, -1)
    }
    if (text !== '') pieces.push(Buffer.from(text))
    const bytes = pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces)
    if (bytes.length > 0) this.#onImageBytes(bytes)
  }

  #escape (byte: number): void {
    if (byte === 0x75) {
      this.#state = UNICODE
      this.#unicodeDigits = 0
      this.#codeUnit = 0
      return
    }
    const character = ESCAPED[byte]
    if (character === undefined) throw new InvalidJsonError()
    this.#state = STRING
    if (this.#stringRole !== OTHER_STRING) this.#text(character)
  }

  #unicodeDigit (byte: number): void {
    const digit = hexValue(byte)
    if (digit < 0) throw new InvalidJsonError()
    this.#codeUnit = this.#codeUnit * 16 + digit
    if (++this.#unicodeDigits < 4) return
    this.#state = STRING
    // A lone surrogate is valid JSON (JSON.parse keeps it); a pair written as two escapes joins up as it is kept.
    if (this.#stringRole !== OTHER_STRING) this.#text(String.fromCharCode(this.#codeUnit))
  }

  /** The first byte of a UTF-8 sequence: only shortest forms of scalar values (RFC 3629 §4), no surrogates. */
  #utf8Lead (byte: number): void {
    let needed: number
    let low = 0x80
    let high = 0xbf
    if (byte >= 0xc2 && byte <= 0xdf) {
      needed = 1
    } else if (byte >= 0xe0 && byte <= 0xef) {
      needed = 2
      if (byte === 0xe0) low = 0xa0
      if (byte === 0xed) high = 0x9f
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      needed = 3
      if (byte === 0xf0) low = 0x90
      if (byte === 0xf4) high = 0x8f
    } else {
      throw new InvalidJsonError()
    }
    this.#codePoint = byte & (0x3f >> needed)
    this.#utf8Needed = needed
    this.#utf8Low = low
    this.#utf8High = high
    this.#state = UTF8
  }

  #utf8Continuation (byte: number): void {
    if (byte < this.#utf8Low || byte > this.#utf8High) throw new InvalidJsonError()
    this.#codePoint = (this.#codePoint << 6) | (byte & 0x3f)
    this.#utf8Low = 0x80
    this.#utf8High = 0xbf
    if (--this.#utf8Needed > 0) return
    this.#state = STRING
    if (this.#stringRole !== OTHER_STRING) this.#text(String.fromCodePoint(this.#codePoint))
  }

  /** One byte of a number (RFC 8259 §6); false when the byte ends it and belongs to what follows. */
  #numberByte (byte: number): boolean {
    const digit = byte >= 0x30 && byte <= 0x39
    const exponent = byte === 0x65 || byte === 0x45
    switch (this.#state) {
      case MINUS:
        if (!digit) throw new InvalidJsonError()
        this.#state = byte === 0x30 ? ZERO : INTEGER
        return true
      case ZERO:
      case INTEGER:
        if (digit && this.#state === ZERO) throw new InvalidJsonError()
        if (digit) return true
        if (byte === 0x2e) this.#state = POINT
        else if (exponent) this.#state = EXPONENT
        else return this.#endNumber()
        return true
      case POINT:
        if (!digit) throw new InvalidJsonError()
        this.#state = FRACTION
        return true
      case FRACTION:
        if (digit) return true
        if (exponent) this.#state = EXPONENT
        else return this.#endNumber()
        return true
      case EXPONENT:
        if (byte === 0x2b || byte === 0x2d) this.#state = EXPONENT_SIGN
        else if (digit) this.#state = EXPONENT_DIGITS
        else throw new InvalidJsonError()
        return true
      case EXPONENT_SIGN:
        if (!digit) throw new InvalidJsonError()
        this.#state = EXPONENT_DIGITS
        return true
      default:
        if (digit) return true
        return this.#endNumber()
    }
  }

  #endNumber (): false {
    this.#state = AFTER_VALUE
    return false
  }
}

function indexOrEnd (bytes: Buffer, byte: number, from: number): number {
  const index = bytes.indexOf(byte, from)
  return index < 0 ? bytes.length : index
}

function isWhitespace (byte: number): boolean {
  return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09
}

function hexValue (byte: number): number {
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30
  const lower = byte | 0x20
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1
}

export interface JsonImageBodyOptions extends Omit<IntakeOptions, 'release'> {
  /** The body is refused (BODY_TOO_LARGE) as soon as more bytes than this have arrived. */
  maxBodyBytes: number
  /** False: the body is only checked, its image neither decoded nor stored (a route that takes no JSON). */
  receive: boolean
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
 * Reads a JSON body `{"image": "data:image/…;base64,…"}` as it arrives: the data URI is decoded piece by piece
 * straight into the intake (hashed, sniffed, written to a scratch file), so neither the body, nor the string, nor the
 * image is ever whole in memory: only a network chunk, its decoded bytes and the intake's batch. The body is read
 * only as fast as the intake writes. Errors come as a body read whole would give them: the body's own (INVALID_JSON,
 * FORBIDDEN_KEY, a repeated `image`) once it has all arrived, before any error of the image; a body over
 * `maxBodyBytes`, or one that stops short (the connection closed), at once. A refused image stops being decoded
 * (the intake removes what it wrote) while the rest of the body is still read and checked. Nothing is left on disk
 * when it throws.
 */
export async function receiveJsonImageBody (chunks: AsyncIterable<Buffer>, options: JsonImageBodyOptions): Promise<JsonImageBody> {
  const source = chunks[Symbol.asyncIterator]()
  const decoder = new DataUriDecoder(options.maxBytes)
  /** The bytes decoded from the last chunk read: the decoder's buffer, reused when it decodes the next. */
  let decoded: Buffer | undefined
  let receivedBytes = 0
  let ended = false
  let bodyError: unknown
  let imageError: unknown
  let fatal: unknown
  let image: StoredImage | undefined

  const refuse = (error: unknown): void => {
    imageError = error
    scanner.ignoreImage()
  }
  // The decoder keeps what each call decodes; the bytes of one chunk are taken once it has been scanned.
  const scanner = new JsonBodyScanner((bytes) => {
    try {
      decoder.append(bytes)
    } catch (error) {
      refuse(error)
    }
  }, (run) => {
    try {
      return decoder.appendAlphabet(run)
    } catch (error) {
      refuse(error)
      return 0
    }
  })
  if (!options.receive) scanner.ignoreImage()

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
      if (bodyError === undefined) {
        try { scanner.end() } catch (error) { bodyError = error }
      }
      return false
    }
    receivedBytes += next.value.length
    if (receivedBytes > options.maxBodyBytes) throw (fatal = new BodyTooLargeError(options.maxBodyBytes))
    if (bodyError === undefined) {
      try { scanner.write(next.value) } catch (error) { bodyError = error }
      decoded = decoder.take()
    }
    options.release?.(next.value)
    return true
  }

  /** The image's bytes, as the intake pulls them: it reads the body on only as fast as they are written. */
  async function * imageBytes (): AsyncGenerator<Buffer> {
    for (;;) {
      if (bodyError !== undefined) throw bodyError
      if (imageError !== undefined) throw imageError
      if (decoded !== undefined) {
        const bytes = decoded
        decoded = undefined
        yield bytes
      }
      if (scanner.imageClosed) break
      if (!await readChunk()) throw bodyError ?? new InvalidJsonError()
    }
    const last = decoder.end()
    if (last !== undefined) yield last
  }

  try {
    while (await readChunk()) {
      if (!scanner.imageOpened || !options.receive || image !== undefined || imageError !== undefined || bodyError !== undefined) continue
      try {
        // The decoded bytes are the decoder's buffer, reused for the next piece: never the intake's to free.
        image = await receiveImage(imageBytes(), { scratchFile: options.scratchFile, maxBytes: options.maxBytes })
      } catch (error) {
        if (fatal !== undefined) throw fatal
        if (error !== bodyError) imageError = error
        scanner.ignoreImage()
        decoded = undefined
      }
    }
    if (bodyError !== undefined) throw bodyError
  } catch (error) {
    // Like the intake's: nothing is left on disk when it throws.
    if (image !== undefined) await unlink(image.path).catch(() => {})
    throw error
  }
  return {
    body: bodyOf(scanner, decoder.header ?? ''),
    ...(image === undefined ? {} : { image }),
    ...(imageError === undefined ? {} : { imageError: imageError as Error })
  }
}

function bodyOf (scanner: JsonBodyScanner, imageText: string): unknown {
  if (scanner.bodyKind !== 'object') return standIn(scanner.bodyKind, '')
  return scanner.imageKind === undefined ? {} : { image: standIn(scanner.imageKind, imageText) }
}

/** A value of `kind` that costs nothing to keep: what the schema checks is the kind, not the contents. */
function standIn (kind: JsonKind | undefined, text: string): unknown {
  switch (kind) {
    case 'object': return {}
    case 'array': return []
    case 'string': return text
    case 'number': return 0
    case 'true': return true
    case 'false': return false
    default: return null
  }
}
