/**
 * A JSON body `{"image": "data:image/<subtype>;base64,<data>"}` read as it arrives, in one pass and bounded memory,
 * whatever its size: `JsonDataUri` below, made of a streaming JSON scanner and a streaming data URI decoder. It knows
 * nothing of files, HTTP or the intake (src/metadata/json-image-body.ts puts it to work), and only the service's
 * error family of the rest of the project; test/unit/json-data-uri.test.ts holds it to `JSON.parse` and
 * `Buffer.from(…, 'base64')` on random bodies.
 */
import { ForbiddenKeyError, ImageTooLargeError, InvalidBase64Error, InvalidDataUriError, InvalidJsonError, NoImageError, NotAnImageMediaTypeError, ValidationError } from '../errors.ts'

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

/** The header `data:<type>/<subtype>[;param=value…];base64,` ends within this many bytes, or it is no image URI. */
const MAX_HEADER_LENGTH = 512
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i
const COMMA = 0x2c
const PADDING = 0x3d
const INVALID = -1

/** Each byte's six bits in the base64 alphabet (RFC 4648 §4), or INVALID; whitespace and padding are told apart below. */
const SEXTET = new Int32Array(256).fill(INVALID)
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
for (let value = 0; value < 64; value++) SEXTET[ALPHABET.charCodeAt(value)] = value
/**
 * Two characters at a time (the low byte first, as a little-endian word holds them): their twelve bits in place for the
 * first half of a quantum, shifted down 12 for the second. A quantum is the OR of two look-ups, and a byte outside
 * the alphabet sets the sign bit (the shift keeps it). 256 KB.
 */
const PAIR = new Int32Array(65536).fill(-1 << 24)
// Only the 4,096 pairs of alphabet characters are set: a loop over all 65,536 cost start-up 6–9 ms, run interpreted.
for (let first = 0; first < 64; first++) {
  for (let second = 0; second < 64; second++) {
    PAIR[ALPHABET.charCodeAt(first) | (ALPHABET.charCodeAt(second) << 8)] = ((first << 6) | second) << 12
  }
}
/** Characters read at a time by the fast path: four quanta, twelve bytes out, each side three 32-bit words. */
const GROUP = 16
/**
 * Runs of whole quanta up to this long are handed to Node's own decoder as a Latin-1 string first. The string lives in
 * V8's young generation (under its 128 KB large-object size) and is dead before the next scavenge: no collection has
 * to look at it. Shorter runs are not worth the call.
 */
const NATIVE_RUN = 32768
const MIN_NATIVE_RUN = 64
const HYPHEN = 0x2d
const UNDERSCORE = 0x5f
/** Tab, line feed, carriage return and space: some encoders wrap base64 in lines, and the breaks carry no data. */
const WHITESPACE = new Uint8Array(256)
for (const byte of [0x09, 0x0a, 0x0d, 0x20]) WHITESPACE[byte] = 1

/**
 * Decodes `data:image/<subtype>;base64,<data>` as its bytes arrive, piece by piece (the pieces of a JSON string as
 * the body streams in): neither its text nor its bytes ever exist whole in memory (the intake writes each piece's
 * bytes to disk), and no string of it outlives the call that made it. The bytes are decoded into one buffer,
 * reused: what `write`, `take` and `end` return is valid until the next call (the intake copies it at once), so
 * decoding a 25 MB image leaves no garbage behind but the short-lived strings below. Base64 may be wrapped over
 * lines, and its padding left out; base64url and any other byte outside the alphabet are refused. The declared
 * subtype is not trusted: the format is decided from the bytes. Throws the service's errors for anything else,
 * IMAGE_TOO_LARGE as soon as the bytes decoded pass `maxBytes`.
 *
 * Node's decoder takes only strings, so it gets runs of at most 32 KB: each string dies young, in V8's young
 * generation, where dead objects cost a scavenge nothing. (A string of a whole body chunk, as the JSON path once made,
 * goes to the large-object space, which only a full collection frees: under eight 20 MB uploads they were 99% of what
 * the path allocated on the JS heap, and held its peak memory up.) Node's decoder skips what is not base64, and reads
 * base64url's `-` and `_`; so a run it did not decode to exactly three bytes per four characters, or a piece holding
 * `-` or `_`, is read here, sixteen characters at a time as 32-bit words, and anything else a byte at a time.
 */
export class DataUriDecoder {
  readonly #maxBytes: number
  #received = false
  /** The header's bytes until the comma, then its text (UTF-8). */
  #headerBytes: Buffer[] = []
  #headerLength = 0
  #header: string | undefined
  /** The bits of the quantum being read and how many of its characters have come (0–3 between pieces). */
  #quantum = 0
  #held = 0
  /** `=` seen: only whitespace and more padding may follow. */
  #padding = 0
  #decodedBytes = 0
  #output = Buffer.alloc(0)
  /** Bytes decoded into `#output` and not yet taken. */
  #written = 0
  #outputView = new DataView(this.#output.buffer)
  /** Node's decoder is tried until a run holds anything but alphabet characters (whitespace, say): then never again. */
  #native = true

  constructor (maxBytes: number) {
    this.#maxBytes = maxBytes
  }

  /** `data:<type>/<subtype>[;…];base64` once the comma has been read; what the URI declares, for people. */
  get header (): string | undefined {
    return this.#header
  }

  /** The next piece of the URI, as bytes (its text in UTF-8); the bytes decoded since the last take, until the next call. */
  write (piece: Uint8Array): Buffer | undefined {
    this.append(piece)
    return this.take()
  }

  /** Decodes the next piece of the URI, keeping its bytes for `take`. Throws as `write` does. */
  append (piece: Uint8Array): void {
    if (piece.length === 0) return
    this.#received = true
    if (this.#header === undefined) {
      const comma = piece.indexOf(COMMA)
      const head = comma < 0 ? piece : piece.subarray(0, comma)
      this.#headerLength += head.length
      if (this.#headerLength > MAX_HEADER_LENGTH) throw new InvalidDataUriError()
      this.#headerBytes.push(Buffer.from(head))
      if (comma < 0) return
      const header = Buffer.concat(this.#headerBytes).toString('utf8')
      this.#headerBytes = []
      checkHeader(header)
      this.#header = header
      this.#decode(piece, comma + 1, false)
      return
    }
    this.#decode(piece, 0, false)
  }

  /**
   * Decodes the longest start of `run` that is base64 alphabet, keeping its bytes for `take`, and says how long that
   * was: the caller reads the rest (the image string's scanner, which then has no need to check those bytes, every one
   * of them an ordinary JSON string character). Takes nothing before the header has been read, or after padding.
   * Throws only IMAGE_TOO_LARGE.
   */
  appendAlphabet (run: Uint8Array): number {
    if (this.#header === undefined || this.#padding > 0 || run.length === 0) return 0
    return this.#decode(run, 0, true)
  }

  /** The bytes decoded since the last take (valid until the next call), or undefined for none. */
  take (): Buffer | undefined {
    const written = this.#written
    this.#written = 0
    return written === 0 ? undefined : this.#output.subarray(0, written)
  }

  /** The URI has ended: the bytes not yet taken, and the last ones (until the next call). Throws NO_IMAGE when it held none. */
  end (): Buffer | undefined {
    if (!this.#received) throw new NoImageError()
    if (this.#header === undefined) throw new InvalidDataUriError()
    // A last quantum of one character holds no whole byte; padding must complete the quantum it ends.
    if (this.#held === 1 || (this.#padding > 0 && this.#held + this.#padding !== 4)) throw new InvalidBase64Error()
    if (this.#held > 1) {
      const output = this.#room(2)
      const bits = this.#quantum << (6 * (4 - this.#held))
      output[this.#written] = bits >> 16
      output[this.#written + 1] = bits >> 8
      this.#written += this.#held - 1
      this.#counted(this.#held - 1)
    }
    this.#held = 0
    if (this.#decodedBytes === 0) throw new NoImageError()
    return this.take()
  }

  /**
   * The data in `piece` from `from` on, decoded into the reused buffer after the bytes not yet taken; returns where
   * it stopped: the end, or with `alphabetOnly` the first byte outside the alphabet. Runs of whole quanta go to Node's
   * decoder while it is trusted (above). Otherwise runs of whole quanta of alphabet characters are read sixteen bytes
   * at a time, as 32-bit words (a DataView: a piece may start anywhere in memory), and written as words; anything
   * else (whitespace, padding, a quantum that spans two pieces, a byte outside the alphabet) a byte at a time. 20 MB
   * in 64 KB pieces take 3.1 ms through Node's decoder in these runs, 7.2 ms through the words alone, and 3.4–4.1 ms as
   * strings of whole pieces decoded by Node (a microbenchmark, 5 × 15 MB, on one host).
   */
  #decode (piece: Uint8Array, from: number, alphabetOnly: boolean): number {
    const length = piece.length
    const output = this.#room(Math.floor((this.#held + length - from) / 4) * 3)
    const out = this.#outputView
    const view = new DataView(piece.buffer, piece.byteOffset, length)
    const first = this.#written
    let at = from
    let written = first
    let quantum = this.#quantum
    let held = this.#held
    // Node's decoder also takes base64url's two characters: a piece holding either is left to the checks below. A
    // piece too short for a run is not searched at all.
    let native = this.#native && length - from >= MIN_NATIVE_RUN &&
      piece.indexOf(HYPHEN, from) < 0 && piece.indexOf(UNDERSCORE, from) < 0
    const bytes = native ? Buffer.from(piece.buffer, piece.byteOffset, length) : undefined
    while (at < length) {
      if (held === 0 && this.#padding === 0) {
        while (native && length - at >= MIN_NATIVE_RUN) {
          const run = Math.min(length - at, NATIVE_RUN) & ~3
          const expected = (run >> 2) * 3
          // Whole quanta decode to exactly three bytes each: fewer means a character was skipped, and the run is read
          // again below, which says which (checked over every string of up to eight characters from a hostile set).
          if (output.write(bytes!.toString('latin1', at, at + run), written, expected, 'base64') !== expected) {
            native = this.#native = false
            break
          }
          written += expected
          at += run
        }
        const end = length - ((length - at) % GROUP)
        while (at < end) {
          const word0 = view.getUint32(at, true)
          const word1 = view.getUint32(at + 4, true)
          const word2 = view.getUint32(at + 8, true)
          const word3 = view.getUint32(at + 12, true)
          const a = PAIR[word0 & 0xffff]! | (PAIR[word0 >>> 16]! >> 12)
          const b = PAIR[word1 & 0xffff]! | (PAIR[word1 >>> 16]! >> 12)
          const c = PAIR[word2 & 0xffff]! | (PAIR[word2 >>> 16]! >> 12)
          const d = PAIR[word3 & 0xffff]! | (PAIR[word3 >>> 16]! >> 12)
          if ((a | b | c | d) < 0) break
          // Twelve bytes, big-endian: a's three, b's three, c's three, d's three.
          out.setUint32(written, (a << 8) | (b >>> 16))
          out.setUint32(written + 4, (b << 16) | (c >>> 8))
          out.setUint32(written + 8, (c << 24) | d)
          written += 12
          at += GROUP
        }
        if (at === length) break
      }
      const byte = piece[at]!
      const value = SEXTET[byte]!
      if (value === INVALID && alphabetOnly) break
      at++
      if (value !== INVALID) {
        if (this.#padding > 0) throw new InvalidBase64Error()
        quantum = (quantum << 6) | value
        if (++held === 4) {
          output[written] = quantum >> 16
          output[written + 1] = quantum >> 8
          output[written + 2] = quantum
          written += 3
          quantum = 0
          held = 0
        }
      } else if (byte === PADDING) {
        if (++this.#padding > 2) throw new InvalidBase64Error()
      } else if (WHITESPACE[byte] === 0) {
        throw new InvalidBase64Error()
      }
    }
    this.#quantum = quantum
    this.#held = held
    this.#written = written
    this.#counted(written - first)
    return at
  }

  /** The reused buffer, with room for `size` bytes after those not yet taken, which it keeps. */
  #room (size: number): Buffer {
    const needed = this.#written + size
    if (this.#output.length < needed) {
      const larger = Buffer.allocUnsafeSlow(Math.max(needed, 2 * this.#output.length))
      this.#output.copy(larger, 0, 0, this.#written)
      this.#output = larger
      this.#outputView = new DataView(this.#output.buffer, this.#output.byteOffset, this.#output.length)
    }
    return this.#output
  }

  #counted (bytes: number): void {
    this.#decodedBytes += bytes
    if (this.#decodedBytes > this.#maxBytes) throw new ImageTooLargeError(this.#maxBytes)
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

/**
 * A JSON body carrying an image as a data URI, read chunk by chunk: the scanner checks the JSON as the service's
 * buffered JSON parser would (plugins/json-body.ts), and hands the top-level `image` string, its escapes resolved, to
 * the decoder, which turns its base64 into bytes in the same pass. What `write` returns is the image's bytes decoded
 * from that chunk, valid until the next call. Refusals do not throw: the body's own fault is kept in `bodyError` (and
 * nothing more is decoded), the image's in `imageError` (the rest of the body is still checked), so that a caller
 * reports them in the order a body read whole would give them: the body's first.
 */
export class JsonDataUri {
  /**
   * INVALID_JSON, FORBIDDEN_KEY, or VALIDATION_ERROR for `image` given twice or nesting too deep. A syntax error is
   * known at once; the others only at `end`.
   */
  bodyError: Error | undefined
  /**
   * INVALID_DATA_URI, NOT_AN_IMAGE_MEDIA_TYPE, INVALID_BASE64, NO_IMAGE or IMAGE_TOO_LARGE, or what `refuseImage`
   * was given: the first thing wrong with the image.
   */
  imageError: Error | undefined
  /** The `image` string has ended, and every byte decoded from it has been returned. */
  imageEnded = false

  readonly #scanner: JsonBodyScanner
  readonly #decoder: DataUriDecoder
  /** The image is to be decoded: false when the body is only checked. */
  readonly #decodes: boolean
  /** Bytes of the image string are being decoded: it has not ended, nor been refused. */
  #decoding: boolean

  /** With `decode` false, the body is only checked: its image is neither decoded nor refused. */
  constructor (maxImageBytes: number, { decode = true }: { decode?: boolean } = {}) {
    this.#decodes = decode
    this.#decoding = decode
    this.#decoder = new DataUriDecoder(maxImageBytes)
    // The decoder keeps what each call decodes; the bytes of one chunk are taken once it has been scanned.
    this.#scanner = new JsonBodyScanner((bytes) => {
      try {
        this.#decoder.append(bytes)
      } catch (error) {
        this.refuseImage(error as Error)
      }
    }, (run) => {
      try {
        return this.#decoder.appendAlphabet(run)
      } catch (error) {
        this.refuseImage(error as Error)
        return 0
      }
    })
    if (!decode) this.#scanner.ignoreImage()
  }

  /** The `image` string has begun (and is decoded, unless the body is only checked). */
  get imageBegun (): boolean {
    return this.#decodes && this.#scanner.imageOpened
  }

  /**
   * The body as its schema should see it, without its contents: each value of the right kind, `image` a string
   * standing for the data URI (its header, or empty), the members besides `image` left out.
   */
  get shape (): unknown {
    const scanner = this.#scanner
    if (scanner.bodyKind !== 'object') return standIn(scanner.bodyKind, '')
    return scanner.imageKind === undefined ? {} : { image: standIn(scanner.imageKind, this.#decoder.header ?? '') }
  }

  /** Reads the next chunk of the body; the image's bytes decoded from it (until the next call), if any. */
  write (chunk: Buffer): Buffer | undefined {
    if (this.bodyError !== undefined) return undefined
    try {
      this.#scanner.write(chunk)
    } catch (error) {
      this.bodyError = error as Error
      this.#decoding = false
      return undefined
    }
    if (!this.#decoding) return undefined
    if (!this.#scanner.imageClosed) return this.#decoder.take()
    this.imageEnded = true
    this.#decoding = false
    try {
      return this.#decoder.end()
    } catch (error) {
      this.refuseImage(error as Error)
      return undefined
    }
  }

  /** The body has ended: `bodyError` says whether it was whole and valid. */
  end (): void {
    if (this.bodyError !== undefined) return
    try {
      this.#scanner.end()
    } catch (error) {
      this.bodyError = error as Error
    }
  }

  /** The image is refused (first reason kept): the rest of its string is checked but no longer decoded. */
  refuseImage (error: Error): void {
    this.imageError ??= error
    this.#decoding = false
    this.#scanner.ignoreImage()
  }
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
