// Counts how deep the elements of an XMP packet nest, in one pass over its bytes, before ExifTool parses it: its XMP
// parser slows down steeply with nesting (a 68 KB packet nested 1,700 deep held a child for over 20 s).

import { Readable } from 'node:stream'
import { createInflate } from 'node:zlib'
import { type ReadAt } from './binary-reader.ts'
import { MAX_INFLATED_XMP_BYTES, MAX_XMP_DEPTH, StructureRefusal } from './structure-limits.ts'

const LT = 0x3c
const GT = 0x3e
const SLASH = 0x2f
const QUESTION = 0x3f
const BANG = 0x21
const DASH = 0x2d
const BRACKET = 0x5d
const QUOTE = 0x22
const APOSTROPHE = 0x27

/** Where the scanner is: in text, just after '<', inside a start or end tag, or inside a construct without markup. */
const State = { Text: 0, Open: 1, StartTag: 2, EndTag: 3, Instruction: 4, Bang: 5, Comment: 6, CData: 7, Declaration: 8 } as const
type State = typeof State[keyof typeof State]

/**
 * A linear scanner of XML nesting, fed a packet in pieces. It knows only what changes the depth: start tags (not
 * self-closing ones), end tags, and the constructs in which a '<' is not markup (comments, CDATA, processing
 * instructions, quoted attribute values). Malformed XML is ExifTool's to report: the scanner never fails on it.
 */
export class XmpDepthScanner {
  #state: State = State.Text
  #depth = 0
  #quote = 0
  /** The previous byte that is not whitespace inside a tag (a '/' before '>' closes the element at once). */
  #lastInTag = 0
  /** The last two bytes seen, for the ends of comments ('-->'), CDATA (']]>') and instructions ('?>'). */
  #previous = 0
  #beforePrevious = 0
  /** Bytes after '<!' so far, to tell a comment or CDATA from a declaration. */
  #bang = ''

  get depth (): number {
    return this.#depth
  }

  feed (bytes: Uint8Array): void {
    for (let index = 0; index < bytes.length; index++) {
      if (this.#state === State.Text) {
        // Text is most of a packet: skip to the next '<' at native speed.
        const next = bytes.indexOf(LT, index)
        if (next < 0) break
        index = next
      }
      const byte = bytes[index]!
      switch (this.#state) {
        case State.Text:
          this.#state = State.Open
          break
        case State.Open:
          if (byte === SLASH) this.#state = State.EndTag
          else if (byte === QUESTION) this.#state = State.Instruction
          else if (byte === BANG) {
            this.#state = State.Bang
            this.#bang = ''
          } else {
            this.#state = State.StartTag
            this.#quote = 0
            this.#lastInTag = byte
          }
          break
        case State.StartTag:
          if (this.#quote !== 0) {
            if (byte === this.#quote) this.#quote = 0
          } else if (byte === QUOTE || byte === APOSTROPHE) {
            this.#quote = byte
          } else if (byte === GT) {
            this.#state = State.Text
            if (this.#lastInTag !== SLASH && ++this.#depth > MAX_XMP_DEPTH) {
              throw new StructureRefusal(`XMP elements nested more than ${MAX_XMP_DEPTH} deep`)
            }
          } else if (byte > 0x20) {
            this.#lastInTag = byte
          }
          break
        case State.EndTag:
          if (byte === GT) {
            this.#state = State.Text
            if (this.#depth > 0) this.#depth--
          }
          break
        case State.Instruction:
          if (byte === GT && this.#previous === QUESTION) this.#state = State.Text
          break
        case State.Bang:
          this.#bang += String.fromCharCode(byte)
          if (this.#bang === '--') this.#state = State.Comment
          else if (this.#bang === '[CDATA[') this.#state = State.CData
          else if (!'--'.startsWith(this.#bang) && !'[CDATA['.startsWith(this.#bang)) {
            this.#state = byte === GT ? State.Text : State.Declaration
          }
          break
        case State.Comment:
          if (byte === GT && this.#previous === DASH && this.#beforePrevious === DASH) this.#state = State.Text
          break
        case State.CData:
          if (byte === GT && this.#previous === BRACKET && this.#beforePrevious === BRACKET) this.#state = State.Text
          break
        case State.Declaration:
          if (byte === GT) this.#state = State.Text
          break
      }
      this.#beforePrevious = this.#previous
      this.#previous = byte
    }
  }
}

/** How much of a packet is read at a time. */
const READ_BYTES = 64 * 1024

/** Checks the XMP packet in [start, end) of the data behind `readAt` (throws StructureRefusal). */
export async function checkXmp (readAt: ReadAt, start: number, end: number, scanner = new XmpDepthScanner()): Promise<void> {
  for (let offset = start; offset < end;) {
    const bytes = await readAt(offset, Math.min(READ_BYTES, end - offset))
    if (bytes.length === 0) return
    scanner.feed(bytes)
    offset += bytes.length
  }
}

/**
 * Checks a zlib-compressed XMP packet in [start, end) (a PNG iTXt or zTXt chunk), inflating it a piece at a time: the
 * packet is never held whole. Data that does not inflate is ExifTool's to report.
 */
export async function checkCompressedXmp (readAt: ReadAt, start: number, end: number): Promise<void> {
  async function * compressed (): AsyncGenerator<Buffer> {
    for (let offset = start; offset < end;) {
      const bytes = await readAt(offset, Math.min(READ_BYTES, end - offset))
      if (bytes.length === 0) return
      offset += bytes.length
      yield Buffer.from(bytes)
    }
  }
  const input = Readable.from(compressed())
  const inflate = createInflate()
  input.on('error', (error) => inflate.destroy(error))
  input.pipe(inflate)
  const scanner = new XmpDepthScanner()
  let inflated = 0
  try {
    for await (const chunk of inflate as AsyncIterable<Buffer>) {
      inflated += chunk.length
      if (inflated > MAX_INFLATED_XMP_BYTES) throw new StructureRefusal(`a compressed XMP packet of more than ${MAX_INFLATED_XMP_BYTES / (1024 * 1024)} MiB`)
      scanner.feed(chunk)
    }
  } catch (error) {
    if (error instanceof StructureRefusal) throw error
    // A corrupt stream: ExifTool reports it.
  } finally {
    input.destroy()
    inflate.destroy()
  }
}
