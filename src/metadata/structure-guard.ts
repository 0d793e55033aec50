// The cheap first line before ExifTool: walks the structure of an upload that has been sniffed and stored, counting
// what ExifTool would visit (TIFF directories and their entries, maker notes, ISO BMFF boxes, JUMBF boxes and their
// CBOR, XMP nesting, CIFF heaps) against the limits in structure-limits.ts, and recognising the few structures that
// crash ExifTool on every read. It reads headers and counts only, a window at a time, so its time is linear in the
// file's size and its memory a few windows, whatever the file claims.

import { asciiAt, bytesAt, fourcc, readAcross, readWithin, u16, u32, type Extent, type ReadAt } from './binary-reader.ts'
import { checkCiffHeap, ciffRootHeap } from './ciff.ts'
import { isTiffBased, type ImageFormat } from './formats.ts'
import { boxesAt, type Box } from './iso-bmff.ts'
import { checkJumbf } from './jumbf.ts'
import { MAX_BOX_DEPTH, StructureRefusal, StructureTally } from './structure-limits.ts'
import { checkTiffStructure, isExifPayload } from './tiff-structure.ts'
import { checkCompressedXmp, checkXmp, XmpDepthScanner } from './xmp-depth.ts'

/**
 * Why the structure of the stored image (read through `file`, `sizeBytes` long) is beyond what the service reads, in
 * words for the client; undefined when it is within the limits. Damage is not refused here: ExifTool reports damaged
 * files itself, and cheaply.
 */
export async function imageStructureProblem (format: ImageFormat, file: ReadAt, sizeBytes: number): Promise<string | undefined> {
  const tally = new StructureTally()
  try {
    if (isTiffBased(format)) await checkTiffStructure(file, tally, { embedded: false })
    else {
      switch (format) {
        case 'jpeg': await checkJpeg(file, 0, sizeBytes, tally); break
        case 'png': await checkPng(file, sizeBytes, tally); break
        case 'webp': await checkWebp(file, sizeBytes, tally); break
        case 'heic': case 'heif': case 'avif': case 'cr3': case 'jxl': await checkBmff(file, sizeBytes, tally); break
        case 'crw': await checkCrw(file, sizeBytes, tally); break
        case 'raf': await checkRaf(file, sizeBytes, tally); break
        case 'mrw': await checkMrw(file, sizeBytes, tally); break
        // GIF and X3F: nothing here is known to cost ExifTool much.
      }
    }
  } catch (error) {
    if (error instanceof StructureRefusal) return error.message
    throw error
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------------------------
// JPEG

const XMP_SIGNATURE = 'http://ns.adobe.com/xap/1.0/\0'
const EXTENDED_XMP_SIGNATURE = 'http://ns.adobe.com/xmp/extension/\0'
/** After the extended-XMP signature: a 32-character GUID, the full length and this chunk's offset. */
const EXTENDED_XMP_HEADER = EXTENDED_XMP_SIGNATURE.length + 32 + 8
/** Longest segment prefix read to tell what a segment holds. */
const SEGMENT_PREFIX_BYTES = 64

/** Checks the metadata segments of the JPEG in [start, end) of `file`, up to its first scan. */
async function checkJpeg (file: ReadAt, start: number, end: number, tally: StructureTally): Promise<void> {
  const extendedXmp = new XmpDepthScanner()
  /** JUMBF boxes by type, split across APP11 segments: the first segment's box header, then each segment's data. */
  const jumbf = new Map<string, Extent[]>()
  let at = start + 2
  while (at + 4 <= end) {
    const header = await file(at, 4)
    // Damage ends the walk; what was gathered so far is still checked.
    if (header[0] !== 0xff) break
    const marker = header[1]!
    // Fill bytes before a marker.
    if (marker === 0xff) {
      at++
      continue
    }
    if (marker === 0xda || marker === 0xd9) break
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2
      continue
    }
    const length = u16(header, 2)
    if (length === undefined || length < 2) break
    const payload = at + 4
    const payloadEnd = Math.min(at + 2 + length, end)
    const prefix = await file(payload, Math.min(SEGMENT_PREFIX_BYTES, payloadEnd - payload))
    if (marker === 0xe1 && isExifPayload(prefix)) {
      await checkTiffStructure(readWithin(file, payload + 6, payloadEnd), tally, { embedded: true })
    } else if (marker === 0xe1 && asciiAt(prefix, 0, XMP_SIGNATURE)) {
      await checkXmp(file, payload + XMP_SIGNATURE.length, payloadEnd)
    } else if (marker === 0xe1 && asciiAt(prefix, 0, EXTENDED_XMP_SIGNATURE)) {
      await checkXmp(file, payload + EXTENDED_XMP_HEADER, payloadEnd, extendedXmp)
    } else if (marker === 0xeb && asciiAt(prefix, 0, 'JP') && prefix.length >= 16) {
      addJumbfSegment(jumbf, prefix, payload, payloadEnd)
    } else if (marker === 0xe0 && (asciiAt(prefix, 0, 'II') || asciiAt(prefix, 0, 'MM')) && asciiAt(prefix, 6, 'HEAPJPGM')) {
      const ciff = readWithin(file, payload, payloadEnd)
      const root = ciffRootHeap(prefix, payloadEnd - payload)
      if (root !== undefined) await checkCiffHeap(ciff, root.start, root.end, tally)
    }
    at = at + 2 + length
  }
  for (const extents of jumbf.values()) {
    const total = extents.reduce((sum, extent) => sum + extent.length, 0)
    await checkJumbf(readAcross(file, extents), 0, total, tally)
  }
}

/**
 * One APP11 segment of a JUMBF box: 'JP', the box instance, the sequence number, then the box header again and the
 * next part of the box's data. ExifTool fails on every read of a segment whose box has a 64-bit size.
 */
function addJumbfSegment (jumbf: Map<string, Extent[]>, prefix: Uint8Array, payload: number, payloadEnd: number): void {
  const size = u32(prefix, 8)!
  const type = fourcc(prefix, 12)!
  if (size === 1) throw new StructureRefusal('a JUMBF box with a 64-bit size in a JPEG APP11 segment, which ExifTool cannot read')
  const extents = jumbf.get(type)
  if (extents === undefined) jumbf.set(type, [{ offset: payload + 8, length: payloadEnd - payload - 8 }])
  else extents.push({ offset: payload + 16, length: payloadEnd - payload - 16 })
}

// ---------------------------------------------------------------------------------------------------------------------
// PNG

const XMP_KEYWORD = 'XML:com.adobe.xmp'
/** Longest text-chunk header read: keyword (at most 79 bytes), flags, language tag and translated keyword. */
const TEXT_HEADER_BYTES = 512

async function checkPng (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  for (let at = 8; at + 12 <= size;) {
    const header = await file(at, 8)
    const length = u32(header, 0)
    const type = fourcc(header, 4)
    if (length === undefined || type === undefined) return
    const data = at + 8
    const dataEnd = Math.min(data + length, size)
    switch (type) {
      case 'eXIf': await checkTiffStructure(readWithin(file, data, dataEnd), tally, { embedded: true }); break
      case 'caBX': await checkJumbf(file, data, dataEnd, tally); break
      case 'iTXt': case 'zTXt': case 'tEXt': await checkPngText(file, type, data, dataEnd); break
      case 'IEND': return
    }
    at = data + length + 4
  }
}

/** An XMP packet in a PNG text chunk: plain in tEXt and iTXt, compressed in zTXt and in iTXt when flagged. */
async function checkPngText (file: ReadAt, type: string, data: number, end: number): Promise<void> {
  const header = await file(data, Math.min(TEXT_HEADER_BYTES, end - data))
  if (!asciiAt(header, 0, `${XMP_KEYWORD}\0`)) return
  let at = XMP_KEYWORD.length + 1
  if (type === 'tEXt') return await checkXmp(file, data + at, end)
  if (type === 'zTXt') return await checkCompressedXmp(file, data + at + 1, end)
  const compressed = header[at] === 1
  at += 2
  // Language tag and translated keyword, each NUL-terminated.
  for (let nul = 0; nul < 2; nul++) {
    const found = header.indexOf(0, at)
    if (found < 0) return
    at = found + 1
  }
  if (compressed) await checkCompressedXmp(file, data + at, end)
  else await checkXmp(file, data + at, end)
}

// ---------------------------------------------------------------------------------------------------------------------
// WebP

async function checkWebp (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  for (let at = 12; at + 8 <= size;) {
    const header = await file(at, 8)
    const type = fourcc(header, 0)
    const length = u32(header, 4, true)
    if (type === undefined || length === undefined) return
    const data = at + 8
    const dataEnd = Math.min(data + length, size)
    switch (type) {
      case 'EXIF': {
        // Some writers keep JPEG's 'Exif\0\0' before the TIFF header.
        const skip = isExifPayload(await file(data, 6)) ? 6 : 0
        await checkTiffStructure(readWithin(file, data + skip, dataEnd), tally, { embedded: true })
        break
      }
      case 'XMP ': await checkXmp(file, data, dataEnd); break
      case 'C2PA': await checkJumbf(file, data, dataEnd, tally); break
    }
    at = data + length + (length % 2)
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// ISO BMFF: HEIF, AVIF, CR3, the JPEG XL container

/** Boxes made only of other boxes, which ExifTool descends into. */
const CONTAINERS = new Set(['moov', 'trak', 'mdia', 'minf', 'stbl', 'dinf', 'udta', 'edts', 'iprp', 'ipco', 'grpl', 'mvex', 'moof', 'traf'])
/** Containers that start with a FullBox header (version and flags), and for iinf an entry count. */
const FULL_CONTAINERS: Readonly<Record<string, (version: number) => number>> = {
  meta: () => 4,
  iref: () => 4,
  iinf: (version) => version === 0 ? 6 : 8
}
const UUID_C2PA = Buffer.from('d8fec3d61b0e483c92975828877ec481', 'hex')
const UUID_XMP = Buffer.from('be7acfcb97a942e89c71999491e3afac', 'hex')
const UUID_CANON = Buffer.from('85c0b687820f11e08111f4ce462b6a48', 'hex')
/** Canon's CR3 metadata boxes, each a TIFF block: IFD0, Exif, maker notes, GPS. */
const CANON_TIFF_BOXES = new Set(['CMT1', 'CMT2', 'CMT3', 'CMT4'])

/** What a HEIF's item boxes say about where its Exif and XMP items lie. */
interface Items {
  types: Map<number, string>
  locations: Map<number, { method: number, extents: Extent[] }>
  idat: number | undefined
}

async function checkBmff (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  const items: Items = { types: new Map(), locations: new Map(), idat: undefined }
  await walkBoxes(file, 0, size, tally, 1, items)
  for (const [id, type] of items.types) {
    const location = items.locations.get(id)
    const extent = location?.extents[0]
    if (extent === undefined) continue
    const base = location!.method === 1 ? items.idat : 0
    if (base === undefined) continue
    const start = base + extent.offset
    const end = start + extent.length
    if (type === 'Exif') {
      // The item starts with the offset of its TIFF header.
      const offset = u32(await file(start, 4), 0)
      if (offset !== undefined) await checkTiffStructure(readWithin(file, start + 4 + offset, end), tally, { embedded: true })
    } else if (type === 'mime') {
      await checkXmp(file, start, end)
    }
  }
}

async function walkBoxes (file: ReadAt, start: number, end: number, tally: StructureTally, depth: number, items: Items): Promise<void> {
  if (depth > MAX_BOX_DEPTH) throw new StructureRefusal(`ISO BMFF boxes nested more than ${MAX_BOX_DEPTH} deep`)
  let headerAt = start
  for await (const box of boxesAt(file, start, end)) {
    tally.box()
    await visitBox(file, box, headerAt, tally, depth, items)
    headerAt = box.end
  }
}

async function visitBox (file: ReadAt, box: Box, headerAt: number, tally: StructureTally, depth: number, items: Items): Promise<void> {
  if (CONTAINERS.has(box.type)) return await walkBoxes(file, box.start, box.end, tally, depth + 1, items)
  const full = FULL_CONTAINERS[box.type]
  if (full !== undefined) {
    const version = (await file(box.start, 1))[0] ?? 0
    return await walkBoxes(file, box.start + full(version), box.end, tally, depth + 1, items)
  }
  switch (box.type) {
    case 'infe': return await readItemInfo(file, box, items)
    case 'iloc': return await readItemLocations(file, box, items)
    case 'idat': items.idat = box.start; return
    case 'uuid': return await visitUuidBox(file, box, tally, depth, items)
    case 'Exif': {
      // JPEG XL: the offset of the TIFF header, then the TIFF data.
      const offset = u32(await file(box.start, 4), 0)
      if (offset !== undefined) await checkTiffStructure(readWithin(file, box.start + 4 + offset, box.end), tally, { embedded: true })
      return
    }
    case 'xml ': return await checkXmp(file, box.start, box.end)
    case 'jumb': return await checkJumbf(file, headerAt, box.end, tally)
  }
  if (CANON_TIFF_BOXES.has(box.type)) await checkTiffStructure(readWithin(file, box.start, box.end), tally, { embedded: true })
}

/** C2PA's manifest box, an XMP box, or Canon's CR3 metadata box. */
async function visitUuidBox (file: ReadAt, box: Box, tally: StructureTally, depth: number, items: Items): Promise<void> {
  const head = await file(box.start, 16 + 4 + 64)
  if (bytesAt(head, 0, UUID_XMP)) return await checkXmp(file, box.start + 16, box.end)
  if (bytesAt(head, 0, UUID_CANON)) return await walkBoxes(file, box.start + 16, box.end, tally, depth + 1, items)
  if (!bytesAt(head, 0, UUID_C2PA)) return
  // A FullBox header, the purpose ('manifest' or 'merkle'), and for a manifest the offset of its Merkle data.
  const nul = head.indexOf(0, 20)
  if (nul < 0) return
  const purpose = new TextDecoder('latin1').decode(head.subarray(20, nul))
  if (purpose === 'manifest') await checkJumbf(file, box.start + nul + 1 + 8, box.end, tally)
}

/** An item's type (infe version 2 and 3), and its content type for 'mime' items: only XMP's is checked. */
async function readItemInfo (file: ReadAt, box: Box, items: Items): Promise<void> {
  const bytes = await file(box.start, 128)
  const version = bytes[0] ?? 0
  if (version < 2) return
  const idBytes = version === 2 ? 2 : 4
  const id = version === 2 ? u16(bytes, 4) : u32(bytes, 4)
  const type = fourcc(bytes, 4 + idBytes + 2)
  if (id === undefined || type === undefined) return
  if (type === 'mime') {
    // item_name, then content_type, each NUL-terminated.
    const nameEnd = bytes.indexOf(0, 4 + idBytes + 6)
    const contentType = nameEnd < 0 ? '' : new TextDecoder('latin1').decode(bytes.subarray(nameEnd + 1, bytes.indexOf(0, nameEnd + 1)))
    if (contentType !== 'application/rdf+xml') return
  } else if (type !== 'Exif') return
  items.types.set(id, type)
}

/** An iloc box is read whole only up to this size: a few hundred items take a few kilobytes. */
const MAX_ILOC_BYTES = 1024 * 1024

/** Where each item's data lies (iloc versions 0 to 2); only the items whose type is checked are kept. */
async function readItemLocations (file: ReadAt, box: Box, items: Items): Promise<void> {
  const bytes = new Uint8Array(await file(box.start, Math.min(box.end - box.start, MAX_ILOC_BYTES)))
  const version = bytes[0] ?? 0
  if (version > 2 || bytes.length < 8) return
  const offsetSize = (bytes[4]! >> 4)
  const lengthSize = bytes[4]! & 0x0f
  const baseOffsetSize = bytes[5]! >> 4
  const indexSize = version === 0 ? 0 : bytes[5]! & 0x0f
  let at = 6
  const count = version < 2 ? u16(bytes, at) : u32(bytes, at)
  at += version < 2 ? 2 : 4
  const sized = (width: number): number | undefined => {
    if (width === 0) return 0
    const value = width === 4 ? u32(bytes, at) : width === 8 ? u32(bytes, at + 4) : undefined
    if (width === 8 && u32(bytes, at) !== 0) return undefined
    at += width
    return value
  }
  for (let item = 0; item < (count ?? 0) && at < bytes.length; item++) {
    const id = version < 2 ? u16(bytes, at) : u32(bytes, at)
    at += version < 2 ? 2 : 4
    const method = version === 0 ? 0 : (u16(bytes, at) ?? 0) & 0x0f
    if (version > 0) at += 2
    at += 2
    const base = sized(baseOffsetSize)
    const extentCount = u16(bytes, at)
    at += 2
    if (id === undefined || base === undefined || extentCount === undefined) return
    const extents: Extent[] = []
    for (let e = 0; e < extentCount; e++) {
      if (sized(indexSize) === undefined) return
      const offset = sized(offsetSize)
      const length = sized(lengthSize)
      if (offset === undefined || length === undefined) return
      extents.push({ offset: base + offset, length })
    }
    if (items.types.has(id) || !items.locations.has(id)) items.locations.set(id, { method, extents })
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Canon CRW, Fujifilm RAF, Minolta MRW

async function checkCrw (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  const root = ciffRootHeap(await file(0, 14), size)
  if (root !== undefined) await checkCiffHeap(file, root.start, root.end, tally)
}

/** RAF keeps its Exif in an embedded JPEG, whose offset and length follow the 84-byte header. */
async function checkRaf (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  const header = await file(84, 8)
  const offset = u32(header, 0)
  const length = u32(header, 4)
  if (offset === undefined || length === undefined || offset + length > size) return
  await checkJpeg(file, offset, offset + length, tally)
}

/** MRW: named blocks after an 8-byte header; the TTW block is a TIFF. */
async function checkMrw (file: ReadAt, size: number, tally: StructureTally): Promise<void> {
  const dataStart = 8 + (u32(await file(4, 4), 0) ?? 0)
  for (let at = 8; at + 8 <= Math.min(dataStart, size);) {
    const header = await file(at, 8)
    const length = u32(header, 4)
    if (length === undefined) return
    if (asciiAt(header, 0, '\0TTW')) await checkTiffStructure(readWithin(file, at + 8, at + 8 + length), tally, { embedded: true })
    at += 8 + length
  }
}
