// The one place where the service reads numbers and byte ranges out of untrusted image bytes. Every read is checked
// against the bytes it has: a value that lies outside them is `undefined`, never an exception and never a read of
// memory that is not the file's (a Buffer can be a slice of a larger pool). Sniffing reads the head of a file in
// memory (the synchronous readers); the structure guard reads anywhere in the file through `ReadAt`.

import type { FileHandle } from 'node:fs/promises'

export function u8 (bytes: Uint8Array, at: number): number | undefined {
  return at >= 0 && at < bytes.length ? bytes[at] : undefined
}

export function u16 (bytes: Uint8Array, at: number, little = false): number | undefined {
  if (at < 0 || at + 2 > bytes.length) return undefined
  const a = bytes[at]!
  const b = bytes[at + 1]!
  return little ? a | (b << 8) : (a << 8) | b
}

export function u32 (bytes: Uint8Array, at: number, little = false): number | undefined {
  if (at < 0 || at + 4 > bytes.length) return undefined
  const a = bytes[at]!
  const b = bytes[at + 1]!
  const c = bytes[at + 2]!
  const d = bytes[at + 3]!
  // Multiplication keeps the top byte unsigned (<< 24 would go negative).
  return little ? a + b * 0x100 + c * 0x10000 + d * 0x1000000 : a * 0x1000000 + b * 0x10000 + c * 0x100 + d
}

/** A 64-bit value, or undefined when it is out of bounds or beyond 2^53 (no file offset or size is that large). */
export function u64 (bytes: Uint8Array, at: number, little = false): number | undefined {
  const first = u32(bytes, at, little)
  const second = u32(bytes, at + 4, little)
  if (first === undefined || second === undefined) return undefined
  const [high, low] = little ? [second, first] : [first, second]
  return high > 0x1fffff ? undefined : high * 0x1_0000_0000 + low
}

/** Four bytes as Latin-1 text (a box or chunk type); undefined when they are not all there. */
export function fourcc (bytes: Uint8Array, at: number): string | undefined {
  if (at < 0 || at + 4 > bytes.length) return undefined
  return String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!)
}

/** Whether `text` (ASCII) is at `at`. */
export function asciiAt (bytes: Uint8Array, at: number, text: string): boolean {
  if (at < 0 || at + text.length > bytes.length) return false
  for (let i = 0; i < text.length; i++) {
    if (bytes[at + i] !== text.charCodeAt(i)) return false
  }
  return true
}

/** Whether `expected` is at `at`. */
export function bytesAt (bytes: Uint8Array, at: number, expected: ArrayLike<number>): boolean {
  if (at < 0 || at + expected.length > bytes.length) return false
  for (let i = 0; i < expected.length; i++) {
    if (bytes[at + i] !== expected[i]) return false
  }
  return true
}

/** TIFF's byte-order mark: true for 'II' (little-endian), false for 'MM', undefined for neither. */
export function tiffByteOrder (bytes: Uint8Array, at = 0): boolean | undefined {
  if (asciiAt(bytes, at, 'II')) return true
  if (asciiAt(bytes, at, 'MM')) return false
  return undefined
}

/**
 * Reads `length` bytes at `offset` of some data (a file, or a block inside one); fewer, or none, past its end. The
 * bytes returned may be a view of a buffer the reader reuses: use them before the next read.
 */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>

/** A ReadAt over bytes in memory. */
export function readFromBytes (bytes: Uint8Array): ReadAt {
  return async (offset, length) => bytes.subarray(Math.min(Math.max(offset, 0), bytes.length), Math.min(Math.max(offset + length, 0), bytes.length))
}

/** Reads from the file are made in blocks of at least this size: structure walks ask for a few bytes at a time. */
const FILE_BLOCK_BYTES = 64 * 1024

/**
 * A ReadAt over a file of `sizeBytes` whose first bytes (`head`) are already in memory: reads within the head cost
 * nothing, the rest are read from the file a block at a time, the last block kept for the next read nearby.
 */
export function readFromFile (handle: FileHandle, sizeBytes: number, head: Uint8Array): ReadAt {
  let block: { offset: number, bytes: Buffer } | undefined
  return async (offset, length) => {
    const start = Math.max(0, offset)
    const end = Math.min(start + Math.max(0, length), sizeBytes)
    if (start >= end) return new Uint8Array(0)
    if (end <= head.length) return head.subarray(start, end)
    if (block !== undefined && start >= block.offset && end <= block.offset + block.bytes.length) {
      return block.bytes.subarray(start - block.offset, end - block.offset)
    }
    const bytes = Buffer.allocUnsafe(Math.min(Math.max(end - start, FILE_BLOCK_BYTES), sizeBytes - start))
    let read = 0
    while (read < bytes.length) {
      const { bytesRead } = await handle.read(bytes, read, bytes.length - read, start + read)
      if (bytesRead === 0) break
      read += bytesRead
    }
    block = { offset: start, bytes: bytes.subarray(0, read) }
    return block.bytes.subarray(0, Math.min(end - start, read))
  }
}

/** The part [start, end) of the data behind `readAt`, as data of its own (offsets from `start`). */
export function readWithin (readAt: ReadAt, start: number, end: number): ReadAt {
  return async (offset, length) => {
    if (offset < 0 || start + offset >= end) return new Uint8Array(0)
    return await readAt(start + offset, Math.min(length, end - start - offset))
  }
}

/** Where one piece of scattered data lies: `length` bytes at `offset`. */
export interface Extent { offset: number, length: number }

/** Data kept in pieces (JPEG segments, a HEIF item's extents) read as one: offsets run on across the pieces. */
export function readAcross (readAt: ReadAt, extents: readonly Extent[]): ReadAt {
  return async (offset, length) => {
    const parts: Uint8Array[] = []
    let skipped = 0
    for (const extent of extents) {
      if (length <= 0) break
      if (offset >= skipped + extent.length) {
        skipped += extent.length
        continue
      }
      const within = Math.max(0, offset - skipped)
      const take = Math.min(length, extent.length - within)
      const bytes = await readAt(extent.offset + within, take)
      // Copied: a reader may reuse the buffer it answered with.
      parts.push(new Uint8Array(bytes))
      offset += bytes.length
      length -= bytes.length
      skipped += extent.length
      if (bytes.length < take) break
    }
    return parts.length === 1 ? parts[0]! : Buffer.concat(parts)
  }
}

/** How much a sequential scan asks for at a time. */
const SCAN_WINDOW_BYTES = 16 * 1024

/**
 * Reads data from start to end one byte (or run of bytes) at a time, a window at a time: for formats that are parsed
 * in order (CBOR, XML), so that a scan costs one read per window, however the data is split up.
 */
export class SequentialReader {
  readonly #readAt: ReadAt
  readonly #end: number
  #window = new Uint8Array(0)
  #windowStart = 0
  #position: number

  constructor (readAt: ReadAt, start: number, end: number) {
    this.#readAt = readAt
    this.#position = start
    this.#end = end
  }

  get position (): number {
    return this.#position
  }

  get remaining (): number {
    return Math.max(0, this.#end - this.#position)
  }

  /** The next byte, or undefined at the end. */
  async byte (): Promise<number | undefined> {
    if (this.#position >= this.#end) return undefined
    const at = this.#position - this.#windowStart
    if (at >= 0 && at < this.#window.length) {
      this.#position++
      return this.#window[at]
    }
    const window = await this.#readAt(this.#position, Math.min(SCAN_WINDOW_BYTES, this.#end - this.#position))
    if (window.length === 0) return undefined
    this.#window = new Uint8Array(window)
    this.#windowStart = this.#position
    this.#position++
    return this.#window[0]
  }

  /** The next `count` bytes as a big-endian number (count ≤ 6), or undefined when the data ends first. */
  async number (count: number): Promise<number | undefined> {
    let value = 0
    for (let i = 0; i < count; i++) {
      const byte = await this.byte()
      if (byte === undefined) return undefined
      value = value * 256 + byte
    }
    return value
  }

  /** Skips `count` bytes without reading them. */
  skip (count: number): void {
    this.#position = Math.min(this.#end, this.#position + count)
  }
}
