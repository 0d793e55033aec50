// TIFF directories (IFDs): the one reader of their entries, used by the raw sniff (IFD0, from the head) and by the
// structure guard, which walks every directory ExifTool would (the IFD chain, SubIFDs, Exif, GPS, Interop and the
// maker notes) and counts their entries before ExifTool sees the file. Its cost grows with the entries it visits: a
// 720 KB TIFF whose IFD claims 60,000 entries, 21 MB of chained IFDs or three 60,000-entry maker notes each held a
// child for 20 s. Only counts and offsets are read, a few bytes per directory.

import { asciiAt, bytesAt, tiffByteOrder, u16, u32, type ReadAt } from './binary-reader.ts'
import { checkJumbf } from './jumbf.ts'
import { StructureRefusal, type StructureTally } from './structure-limits.ts'
import { checkXmp } from './xmp-depth.ts'

export const TAG_SUB_IFDS = 0x014a
const TAG_XMP = 0x02bc
const TAG_EXIF_IFD = 0x8769
const TAG_GPS_IFD = 0x8825
const TAG_MAKER_NOTE = 0x927c
const TAG_INTEROP_IFD = 0xa005
const TAG_PROFILE_IFD = 0xc6f5
const TAG_C2PA = 0xcd41
const POINTER_TAGS = new Set([TAG_SUB_IFDS, TAG_EXIF_IFD, TAG_GPS_IFD, TAG_INTEROP_IFD])
/** The entries the walk looks into; every other entry is only counted. */
const CHECKED_TAGS = new Set([...POINTER_TAGS, TAG_PROFILE_IFD, TAG_MAKER_NOTE, TAG_XMP, TAG_C2PA])

export const TYPE_ASCII = 2
export const TYPE_SHORT = 3
export const TYPE_LONG = 4
const TYPE_UNDEFINED = 7
const TYPE_IFD = 13
/** Bytes per value of each TIFF field type (1 BYTE … 13 IFD); 0 for unknown types. */
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
/** SubIFDs lists more than one pointer in some raws (NEF, DNG); a longer list is read this far. */
const MAX_POINTERS_PER_ENTRY = 16
const ENTRY_BYTES = 12

/** One directory entry; `valueAt` is where its value lies (inside the entry when it fits in four bytes). */
export interface IfdEntry {
  tag: number
  type: number
  count: number
  /** Offset of the value in the TIFF data; undefined for an unknown type. */
  valueAt: number | undefined
  /** The four value bytes read as one number: the value itself for a single SHORT or LONG, else an offset. */
  value: number
}

/** The TIFF header: byte order (any magic number: ORF, RW2 and others use their own) and the first IFD's offset. */
export function tiffHeader (bytes: Uint8Array): { little: boolean, firstIfd: number } | undefined {
  const little = tiffByteOrder(bytes)
  const firstIfd = little === undefined ? undefined : u32(bytes, 4, little)
  return little === undefined || firstIfd === undefined ? undefined : { little, firstIfd }
}

/**
 * The entries of the directory whose entries start at `at` of `bytes` (which start at offset `base` of the TIFF
 * data), as many of `count` as the bytes hold.
 */
export function ifdEntries (bytes: Uint8Array, at: number, count: number, little: boolean, base = 0): IfdEntry[] {
  const entries: IfdEntry[] = []
  for (let index = 0; index < count; index++) {
    const entry = at + index * ENTRY_BYTES
    if (entry + ENTRY_BYTES > bytes.length) break
    const type = u16(bytes, entry + 2, little)!
    const valueCount = u32(bytes, entry + 4, little)!
    const value = u32(bytes, entry + 8, little)!
    const size = (TYPE_SIZES[type] ?? 0) * valueCount
    entries.push({
      tag: u16(bytes, entry, little)!,
      type,
      count: valueCount,
      valueAt: size === 0 && valueCount > 0 ? undefined : size <= 4 ? base + entry + 8 : value,
      value: type === TYPE_SHORT ? u16(bytes, entry + 8, little)! : value
    })
  }
  return entries
}

interface Walk {
  readAt: ReadAt
  little: boolean
  tally: StructureTally
  /** Exif inside another format (JPEG, PNG, WebP, HEIF, JPEG XL, CR3): ExifTool reads it from memory. */
  embedded: boolean
}

/**
 * Walks the directories of TIFF data (a TIFF file, a TIFF-based raw, an Exif block) from its header, counting them
 * and their entries, and checks the XMP and C2PA blocks they hold; throws StructureRefusal. Damage (offsets past the
 * end, unknown byte order, loops) is not this check's business: ExifTool reports damaged files itself, and cheaply.
 */
export async function checkTiffStructure (readAt: ReadAt, tally: StructureTally, options: { embedded: boolean }): Promise<void> {
  const header = tiffHeader(await readAt(0, 8))
  if (header === undefined) return
  const walk: Walk = { readAt, little: header.little, tally, embedded: options.embedded }
  const pending = [header.firstIfd]
  const visited = new Set<number>()
  while (pending.length > 0) {
    const offset = pending.pop()!
    if (offset < 8 || visited.has(offset)) continue
    visited.add(offset)
    const countBytes = await readAt(offset, 2)
    if (countBytes.length < 2) continue
    const count = u16(countBytes, 0, walk.little)!
    tally.directory(count)
    const bytes = new Uint8Array(await readAt(offset + 2, count * ENTRY_BYTES + 4))
    const next = u32(bytes, count * ENTRY_BYTES, walk.little)
    const pointers: number[] = []
    for (const entry of ifdEntries(bytes, 0, count, walk.little, offset + 2)) {
      if (CHECKED_TAGS.has(entry.tag)) pointers.push(...await visitEntry(walk, entry))
    }
    pending.push(...pointers.reverse())
    if (next !== undefined) pending.push(next)
  }
  tally.directoriesDone()
}

/** Checks what one entry holds; the directories it points to. */
async function visitEntry (walk: Walk, entry: IfdEntry): Promise<number[]> {
  switch (entry.tag) {
    case TAG_PROFILE_IFD:
      // ExifTool reads a DNG's camera profiles from the file, and crashes on one in Exif it holds in memory.
      if (walk.embedded) throw new StructureRefusal('an Exif ProfileIFD (tag 0xC6F5), a DNG tag ExifTool cannot read in this format')
      return []
    case TAG_MAKER_NOTE:
      if (entry.valueAt !== undefined && entry.count > 0) await countMakerNotes(walk, entry.valueAt, entry.count)
      return []
    case TAG_XMP:
      if (entry.valueAt !== undefined && entry.count > 0) await checkXmp(walk.readAt, entry.valueAt, entry.valueAt + entry.count)
      return []
    case TAG_C2PA:
      if (entry.type === TYPE_UNDEFINED && entry.valueAt !== undefined) await checkJumbf(walk.readAt, entry.valueAt, entry.valueAt + entry.count, walk.tally)
      return []
  }
  if (!POINTER_TAGS.has(entry.tag) || (entry.type !== TYPE_LONG && entry.type !== TYPE_IFD) || entry.count === 0) return []
  if (entry.count === 1) return [entry.value]
  const list = await walk.readAt(entry.value, Math.min(entry.count, MAX_POINTERS_PER_ENTRY) * 4)
  const pointers: number[] = []
  for (let at = 0; at + 4 <= list.length; at += 4) pointers.push(u32(list, at, walk.little)!)
  return pointers
}

/** Where the directory inside a maker note starts, by the note's own header (as ExifTool's MakerNotes.pm finds it). */
function makerNoteDirectory (head: Uint8Array, little: boolean): { at: number, little: boolean } | undefined {
  const order = (at: number): boolean => tiffByteOrder(head, at) ?? little
  if (asciiAt(head, 0, 'Nikon\0\x02')) {
    // An embedded TIFF header at 10; its offsets count from there.
    const inner = tiffHeader(head.subarray(10))
    return inner === undefined ? undefined : { at: 10 + inner.firstIfd, little: inner.little }
  }
  if (asciiAt(head, 0, 'Nikon\0\x01')) return { at: 8, little }
  if (asciiAt(head, 0, 'OLYMPUS\0') || asciiAt(head, 0, 'OM SYSTEM\0')) return { at: asciiAt(head, 0, 'OLYMPUS\0') ? 12 : 16, little: order(asciiAt(head, 0, 'OLYMPUS\0') ? 8 : 12) }
  if (asciiAt(head, 0, 'Apple iOS\0')) return { at: 14, little: false }
  if (asciiAt(head, 0, 'FUJIFILM') || asciiAt(head, 0, 'GENERALE')) {
    const at = u32(head, 8, true)
    return at === undefined ? undefined : { at, little: true }
  }
  if (asciiAt(head, 0, 'PENTAX \0')) return { at: 10, little: order(8) }
  if (asciiAt(head, 0, 'AOC\0')) return { at: 6, little: order(4) }
  for (const [prefix, at] of [['SONY ', 12], ['Panasonic\0', 12], ['LEICA', 8], ['SIGMA\0', 10], ['FOVEON\0', 10], ['SANYO\0', 8],
    ['OLYMP\0', 8], ['EPSON\0', 8], ['MINOL\0', 8], ['CAMER\0', 8], ['QVC\0', 6], ['Ricoh', 8], ['RICOH\0', 8], ['KDK', 8]] as const) {
    if (asciiAt(head, 0, prefix)) return { at, little }
  }
  // Canon, Samsung, Kodak, Minolta and others write a bare directory.
  return { at: 0, little }
}

/** Bytes of a maker note read to find its directory: every header ExifTool knows is shorter. */
const MAKER_NOTE_HEAD_BYTES = 32
/** Entries whose types are checked before a maker note is taken to hold a directory (as ExifTool's LocateIFD does). */
const ENTRIES_CHECKED = 4

/**
 * Counts the directory inside the maker note of `size` bytes at `offset`: only a directory that fits in the note and
 * whose first entries have valid types counts (text or binary notes are not directories, and ExifTool reads them
 * whole and cheaply). The note's own sub-directories are left uncounted.
 */
async function countMakerNotes (walk: Walk, offset: number, size: number): Promise<void> {
  const head = await walk.readAt(offset, Math.min(size, MAKER_NOTE_HEAD_BYTES))
  const directory = makerNoteDirectory(head, walk.little)
  if (directory === undefined || directory.at + 2 > size) return
  const start = offset + directory.at
  const count = u16(await walk.readAt(start, 2), 0, directory.little)
  if (count === undefined || count === 0 || directory.at + 2 + count * ENTRY_BYTES > size) return
  const first = await walk.readAt(start + 2, Math.min(count, ENTRIES_CHECKED) * ENTRY_BYTES)
  for (let at = 0; at + ENTRY_BYTES <= first.length; at += ENTRY_BYTES) {
    const type = u16(first, at + 2, directory.little)!
    if (type < 1 || type > TYPE_IFD) return
  }
  walk.tally.directory(count)
}

/** Where the TIFF data of a JPEG's Exif APP1 payload starts, when the payload is one ('Exif\0\0'). */
export function isExifPayload (bytes: Uint8Array): boolean {
  return bytesAt(bytes, 0, [0x45, 0x78, 0x69, 0x66, 0, 0])
}
