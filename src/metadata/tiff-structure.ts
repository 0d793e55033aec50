// A structural check of the TIFF IFDs in an image, made before ExifTool reads it. ExifTool's cost grows with the
// number of directory entries it visits (a 720 KB TIFF whose IFD claims 60,000 entries, or 21 MB of chained IFDs,
// held one ExifTool process for 20 s), so files whose structure no camera or editor writes are refused up front.
// Only counts and offsets are read: a few bytes per directory, at most MAX_DIRECTORIES of them.

/** Entries in one directory: real IFD0s and Exif IFDs have a few dozen to a few hundred. */
export const MAX_DIRECTORY_ENTRIES = 1000
/** Directories visited in all (IFD0 chain, SubIFDs, Exif, GPS, Interop): real files have fewer than twenty. */
export const MAX_DIRECTORIES = 64

const TAG_SUB_IFDS = 0x014a
const TAG_EXIF_IFD = 0x8769
const TAG_GPS_IFD = 0x8825
const TAG_INTEROP_IFD = 0xa005
const POINTER_TAGS = new Set([TAG_SUB_IFDS, TAG_EXIF_IFD, TAG_GPS_IFD, TAG_INTEROP_IFD])
const TYPE_LONG = 4
const TYPE_IFD = 13
/** SubIFDs lists more than one pointer in some raws (NEF, DNG); a longer list is read this far. */
const MAX_POINTERS_PER_ENTRY = 16

/** Reads `length` bytes at `offset` of the TIFF data; fewer (or none) past its end. */
export type ReadAt = (offset: number, length: number) => Promise<Uint8Array>

/** Why a structure is refused, in words for the client; undefined when it is within the limits. */
export type StructureProblem = string | undefined

/**
 * Walks the IFDs of TIFF data (a TIFF file, a TIFF-based raw, or a JPEG's Exif block) from its header, following
 * the next-IFD chain and the SubIFD, Exif, GPS and Interop pointers. Damage (offsets past the end, unknown byte
 * order, loops) is not this check's business: ExifTool reports damaged files itself, and cheaply.
 */
export async function checkTiffStructure (readAt: ReadAt): Promise<StructureProblem> {
  const header = await readAt(0, 8)
  if (header.length < 8) return undefined
  const little = header[0] === 0x49 && header[1] === 0x49
  if (!little && !(header[0] === 0x4d && header[1] === 0x4d)) return undefined
  const view = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)

  const pending = [view(header).getUint32(4, little)]
  const visited = new Set<number>()
  while (pending.length > 0) {
    const offset = pending.pop()!
    if (offset < 8 || visited.has(offset)) continue
    visited.add(offset)
    if (visited.size > MAX_DIRECTORIES) return `more than ${MAX_DIRECTORIES} TIFF directories`
    const countBytes = await readAt(offset, 2)
    if (countBytes.length < 2) continue
    const count = view(countBytes).getUint16(0, little)
    if (count > MAX_DIRECTORY_ENTRIES) return `a TIFF directory of ${count} entries (at most ${MAX_DIRECTORY_ENTRIES})`
    const entries = await readAt(offset + 2, count * 12 + 4)
    const directory = view(entries)
    const whole = Math.floor(entries.length / 12)
    for (let index = 0; index < Math.min(count, whole); index++) {
      const at = index * 12
      const tag = directory.getUint16(at, little)
      if (!POINTER_TAGS.has(tag)) continue
      const type = directory.getUint16(at + 2, little)
      const values = directory.getUint32(at + 4, little)
      if ((type !== TYPE_LONG && type !== TYPE_IFD) || values === 0) continue
      if (values === 1) {
        pending.push(directory.getUint32(at + 8, little))
        continue
      }
      const list = await readAt(directory.getUint32(at + 8, little), Math.min(values, MAX_POINTERS_PER_ENTRY) * 4)
      const pointers = view(list)
      for (let p = 0; p + 4 <= list.length; p += 4) pending.push(pointers.getUint32(p, little))
    }
    if (entries.length >= count * 12 + 4) pending.push(directory.getUint32(count * 12, little))
  }
  return undefined
}

/** The TIFF data inside a JPEG's Exif APP1 segment, when the head holds it whole. */
export function jpegExifBlock (head: Uint8Array): Uint8Array | undefined {
  let at = 2
  while (at + 4 <= head.length && head[at] === 0xff) {
    const marker = head[at + 1]!
    // Start of scan: the metadata segments are all before it.
    if (marker === 0xda) return undefined
    const length = (head[at + 2]! << 8) | head[at + 3]!
    if (length < 2) return undefined
    const end = at + 2 + length
    if (marker === 0xe1 && end <= head.length && isExifHeader(head, at + 4)) return head.subarray(at + 10, end)
    at = end
  }
  return undefined
}

function isExifHeader (bytes: Uint8Array, at: number): boolean {
  return bytes[at] === 0x45 && bytes[at + 1] === 0x78 && bytes[at + 2] === 0x69 && bytes[at + 3] === 0x66 &&
    bytes[at + 4] === 0 && bytes[at + 5] === 0
}

/** A ReadAt over bytes in memory. */
export function readFromBytes (bytes: Uint8Array): ReadAt {
  return async (offset, length) => bytes.subarray(Math.min(offset, bytes.length), Math.min(offset + length, bytes.length))
}
