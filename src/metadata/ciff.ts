// Canon's CIFF (Camera Image File Format): the structure of a CRW, and the block early PowerShot cameras wrote into
// their JPEGs. A heap ends with the offset of its record table; records of types 0x28 and 0x30 are heaps in turn.
// ExifTool's memory grows with their nesting (a CRW of heaps nested 20,000 deep took 560 MB and timed out).

import { u16, u32, type ReadAt } from './binary-reader.ts'
import { MAX_CIFF_DEPTH, StructureRefusal, type StructureTally } from './structure-limits.ts'

/** The CIFF header: byte order, header length (where the root heap starts), then 'HEAP' and the file type. */
export function ciffRootHeap (header: Uint8Array, size: number): { start: number, end: number } | undefined {
  const start = u32(header, 2, true)
  return start === undefined || start < 14 || start >= size ? undefined : { start, end: size }
}

const RECORD_BYTES = 10

/**
 * Checks the heap in [start, end) of the CIFF data behind `readAt` and the heaps inside it (throws StructureRefusal).
 * CIFF data is little-endian (the only byte order Canon wrote); damage ends the walk quietly.
 */
export async function checkCiffHeap (readAt: ReadAt, start: number, end: number, tally: StructureTally, depth = 1): Promise<void> {
  if (depth > MAX_CIFF_DEPTH) throw new StructureRefusal(`CIFF heaps nested more than ${MAX_CIFF_DEPTH} deep`)
  if (end - start < 6) return
  const tableOffset = u32(await readAt(end - 4, 4), 0, true)
  if (tableOffset === undefined || start + tableOffset + 2 > end) return
  const table = start + tableOffset
  const count = u16(await readAt(table, 2), 0, true)
  if (count === undefined) return
  tally.ciffRecords(count)
  const records = await readAt(table + 2, Math.min(count * RECORD_BYTES, end - table - 2))
  const heaps: Array<{ start: number, end: number }> = []
  for (let at = 0; at + RECORD_BYTES <= records.length; at += RECORD_BYTES) {
    const tag = u16(records, at, true)!
    // ExifTool stops at a record with the top bit set.
    if ((tag & 0x8000) !== 0) break
    const type = (tag >> 8) & 0x38
    const valueInRecord = (tag & 0x4000) !== 0
    if ((type !== 0x28 && type !== 0x30) || valueInRecord) continue
    const size = u32(records, at + 2, true)!
    const offset = u32(records, at + 6, true)!
    if (start + offset + size <= end) heaps.push({ start: start + offset, end: start + offset + size })
  }
  // The records are all read before descending: a heap's records hold only offsets, so one read of the table each.
  for (const heap of heaps) await checkCiffHeap(readAt, heap.start, heap.end, tally, depth + 1)
}
