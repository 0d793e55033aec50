// ISO base media file format boxes (HEIF, AVIF, CR3, the JPEG XL container, and JUMBF, which uses the same box
// layout): one reader of box headers, used by sniffing (over the head in memory) and the structure guard (over the
// whole file).

import { fourcc, u32, u64, type ReadAt } from './binary-reader.ts'

export interface Box {
  type: string
  /** Offset of the first payload byte (after size, type and any 64-bit size). */
  start: number
  /** Offset one past the box's last byte. */
  end: number
  /** The size was written as a 64-bit value (size field 1). */
  largeSize: boolean
}

/** The most header a box has: 32-bit size, type, 64-bit size. */
export const MAX_BOX_HEADER_BYTES = 16

/**
 * The box whose header is at `offset` of `bytes` (which start at file offset `base`). The header must be in the
 * bytes; the box must end by `limit`, the end of its parent (or of the file), which may lie beyond the bytes. Size 0
 * means "to the end of the parent". A box claiming more than its parent is damage, not something to clamp: undefined.
 */
export function boxAt (bytes: Uint8Array, offset: number, limit: number, base = 0): Box | undefined {
  const size32 = u32(bytes, offset - base)
  const type = fourcc(bytes, offset - base + 4)
  if (size32 === undefined || type === undefined) return undefined
  let headerSize = 8
  let size: number
  if (size32 === 1) {
    const large = u64(bytes, offset - base + 8)
    if (large === undefined) return undefined
    size = large
    headerSize = 16
  } else {
    size = size32 === 0 ? limit - offset : size32
  }
  if (size < headerSize || size > limit - offset) return undefined
  return { type, start: offset + headerSize, end: offset + size, largeSize: size32 === 1 }
}

/** Bounds the boxes a walk may visit, shared by the walks over one file. */
export interface BoxBudget { remaining: number }

/** The boxes in [start, end) of bytes in memory, in order; stops at the first malformed one or when the budget ends. */
export function * childBoxes (bytes: Uint8Array, start: number, end: number, budget: BoxBudget): Generator<Box> {
  let offset = start
  while (offset < Math.min(end, bytes.length) && budget.remaining > 0) {
    budget.remaining--
    const box = boxAt(bytes, offset, end)
    if (box === undefined) return
    yield box
    // Always advances: a valid box is at least 8 bytes.
    offset = box.end
  }
}

export function findChildBox (bytes: Uint8Array, start: number, end: number, budget: BoxBudget, wanted: (box: Box) => boolean): Box | undefined {
  for (const box of childBoxes(bytes, start, end, budget)) {
    if (wanted(box)) return box
  }
  return undefined
}

/** The boxes in [start, end) of data read through `readAt`, in order; stops at the first malformed one. */
export async function * boxesAt (readAt: ReadAt, start: number, end: number): AsyncGenerator<Box> {
  let offset = start
  while (offset < end) {
    const header = await readAt(offset, Math.min(MAX_BOX_HEADER_BYTES, end - offset))
    const box = boxAt(header, offset, end, offset)
    if (box === undefined) return
    yield box
    offset = box.end
  }
}
