// Files whose structure makes ExifTool (or c2pa-rs) spend gigabytes or seconds, or crash, built in code: the shapes an
// outside probe sent, and the real-world layouts the service must keep reading. Each builder takes the bytes of an
// ordinary image of its format (made by sharp or heif-builder) and adds the structure under test.

import { deflateSync } from 'node:zlib'
import { be16, be32, le16, le32 } from './bytes.ts'
import { ciffHeap, type CiffRecord } from './raw-builder.ts'

/** The C2PA manifest store's JUMBF type: 'c2pa' + ISO/IEC 19566-5's suffix. */
const C2PA_STORE_TYPE = Buffer.from('6332706100110010800000aa00389b71', 'hex')
/** A JUMBF CBOR content box's type: 'cbor' + the same suffix. */
const CBOR_TYPE = Buffer.from('63626f7200110010800000aa00389b71', 'hex')

// ---------------------------------------------------------------------------------------------------------------------
// Byte helpers

/** An ISO BMFF / JUMBF box with a 32-bit size. */
export function box (type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload)
  return Buffer.concat([be32(8 + body.length), Buffer.from(type, 'latin1'), body])
}

// ---------------------------------------------------------------------------------------------------------------------
// TIFF

export interface TiffEntry {
  tag: number
  /** TIFF field type: 1 BYTE, 2 ASCII, 3 SHORT, 4 LONG, 7 UNDEFINED, 13 IFD. */
  type: number
  count: number
  /** The value's bytes (in the TIFF's byte order); inline when 4 bytes or fewer. */
  value: Buffer
}

/** One directory: its entries, and entries pointing to directories built here (Exif, SubIFDs, maker notes…). */
export interface TiffDirectory {
  entries: TiffEntry[]
  /** Sub-directories written after this one, each pointed to by an entry of this tag (type LONG). */
  children?: Array<{ tag: number, directory: TiffDirectory, type?: number }>
  /** Undefined-type blobs whose contents are a directory, prefixed by `header` (maker notes): offsets stay TIFF-relative. */
  makerNotes?: { header: Buffer, directory: TiffDirectory }
}

/**
 * A little-endian TIFF block (header, then directories, each followed by its values and sub-directories): IFD0 and
 * `chained` directories linked by next-IFD offsets. Offsets are relative to the block's start, as in Exif.
 */
export function tiffBlock (ifd0: TiffDirectory, chained: TiffDirectory[] = []): Buffer {
  const parts: Buffer[] = [Buffer.from('II*\0', 'latin1'), le32(8)]
  let cursor = 8
  let previous: { bytes: Buffer, nextAt: number } | undefined
  for (const directory of [ifd0, ...chained]) {
    const laid = layoutDirectory(directory, cursor)
    if (previous !== undefined) previous.bytes.writeUInt32LE(cursor, previous.nextAt)
    parts.push(laid.bytes)
    previous = laid
    cursor += laid.bytes.length
  }
  return Buffer.concat(parts)
}

/** A directory laid out at `start`: the IFD, then its out-of-line values, maker notes and sub-directories. */
function layoutDirectory (directory: TiffDirectory, start: number): { bytes: Buffer, nextAt: number } {
  type Slot = TiffEntry & { child?: TiffDirectory, notes?: NonNullable<TiffDirectory['makerNotes']> }
  const slots: Slot[] = [...directory.entries]
  for (const { tag, directory: child, type } of directory.children ?? []) slots.push({ tag, type: type ?? 4, count: 1, value: le32(0), child })
  if (directory.makerNotes !== undefined) slots.push({ tag: 0x927c, type: 7, count: 0, value: le32(0), notes: directory.makerNotes })
  slots.sort((a, b) => a.tag - b.tag)
  const ifd = Buffer.alloc(2 + slots.length * 12 + 4)
  ifd.writeUInt16LE(slots.length, 0)
  const parts: Buffer[] = [ifd]
  let cursor = start + ifd.length
  const place = (bytes: Buffer): number => {
    const at = cursor
    const padded = bytes.length % 2 === 1 ? Buffer.concat([bytes, Buffer.alloc(1)]) : bytes
    parts.push(padded)
    cursor += padded.length
    return at
  }
  slots.forEach((slot, i) => {
    const o = 2 + i * 12
    ifd.writeUInt16LE(slot.tag, o)
    ifd.writeUInt16LE(slot.type, o + 2)
    ifd.writeUInt32LE(slot.count, o + 4)
    if (slot.child !== undefined) {
      ifd.writeUInt32LE(place(layoutDirectory(slot.child, cursor).bytes), o + 8)
    } else if (slot.notes !== undefined) {
      const blob = Buffer.concat([slot.notes.header, layoutDirectory(slot.notes.directory, cursor + slot.notes.header.length).bytes])
      ifd.writeUInt32LE(blob.length, o + 4)
      ifd.writeUInt32LE(place(blob), o + 8)
    } else if (slot.value.length <= 4) {
      slot.value.copy(ifd, o + 8)
    } else {
      ifd.writeUInt32LE(place(slot.value), o + 8)
    }
  })
  return { bytes: Buffer.concat(parts), nextAt: 2 + slots.length * 12 }
}

/**
 * `count` filler entries (SHORT, one value each) with tags from `first` on, cycling through 4,096 tags that no reader
 * treats as a pointer or a block (a 60,000-entry directory repeats them).
 */
export function fillerEntries (count: number, first = 0xa500): TiffEntry[] {
  return Array.from({ length: count }, (_, i) => ({ tag: first + (i % 0x1000), type: 3, count: 1, value: le16(i & 0xffff) }))
}

export function ascii (tag: number, text: string): TiffEntry {
  const value = Buffer.from(`${text}\0`, 'latin1')
  return { tag, type: 2, count: value.length, value }
}

/** An Exif block (IFD0 with Make and Model, an Exif IFD with DateTimeOriginal) plus extra IFD0 entries. */
export function exifBlock (options: { ifd0?: TiffEntry[], exif?: TiffEntry[], makerNotes?: TiffDirectory['makerNotes'] } = {}): Buffer {
  const exif: TiffDirectory = {
    entries: [ascii(0x9003, '2008:10:22 16:38:20'), ...(options.exif ?? [])],
    ...(options.makerNotes === undefined ? {} : { makerNotes: options.makerNotes })
  }
  return tiffBlock({
    entries: [ascii(0x010f, 'NIKON'), ascii(0x0110, 'COOLPIX P6000'), ...(options.ifd0 ?? [])],
    children: [{ tag: 0x8769, directory: exif }]
  })
}

/** An Exif block whose Exif IFD holds a ProfileIFD (0xC6F5, a DNG tag) pointing to a small directory. */
export function exifWithProfileIfd (): Buffer {
  return tiffBlock({
    entries: [ascii(0x010f, 'NIKON'), ascii(0x0110, 'COOLPIX P6000')],
    children: [
      { tag: 0x8769, directory: { entries: [ascii(0x9003, '2008:10:22 16:38:20')] } },
      { tag: 0xc6f5, directory: { entries: [ascii(0xc6f8, 'Profile'), ...fillerEntries(4)] }, type: 13 }
    ]
  })
}

// ---------------------------------------------------------------------------------------------------------------------
// JPEG

/** A JPEG segment: marker, big-endian length, payload (at most 65,533 bytes). */
export function jpegSegment (marker: number, payload: Buffer): Buffer {
  if (payload.length > 0xfffd) throw new Error(`a JPEG segment holds at most 65533 bytes, not ${payload.length}`)
  return Buffer.concat([Buffer.from([0xff, marker]), be16(payload.length + 2), payload])
}

/** The JPEG with `segments` inserted right after its SOI marker. */
export function withJpegSegments (jpeg: Buffer, ...segments: Buffer[]): Buffer {
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)])
}

export function jpegExifSegment (tiff: Buffer): Buffer {
  return jpegSegment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]))
}

export function jpegXmpSegment (xmp: string): Buffer {
  return jpegSegment(0xe1, Buffer.concat([Buffer.from('http://ns.adobe.com/xap/1.0/\0', 'latin1'), Buffer.from(xmp, 'utf8')]))
}

/**
 * APP11 segments carrying one JUMBF box, split as C2PA does: each segment 'JP', instance 1, its sequence number, then
 * the box's own header again and the next part of its payload.
 */
export function jpegJumbfSegments (jumbf: Buffer): Buffer[] {
  const header = jumbf.subarray(0, jumbf.readUInt32BE(0) === 1 ? 16 : 8)
  const payload = jumbf.subarray(header.length)
  const room = 0xfffd - 8 - header.length
  const segments: Buffer[] = []
  for (let at = 0, sequence = 1; at < payload.length || at === 0; at += room, sequence++) {
    segments.push(jpegSegment(0xeb, Buffer.concat([Buffer.from('JP', 'latin1'), be16(1), be32(sequence), header, payload.subarray(at, at + room)])))
    if (at + room >= payload.length) break
  }
  return segments
}

// ---------------------------------------------------------------------------------------------------------------------
// JUMBF and CBOR

/** A JUMBF description box: type, toggles (requestable + label), label. */
export function jumd (type: Buffer, label: string): Buffer {
  return box('jumd', type, Buffer.from([0x03]), Buffer.from(`${label}\0`, 'utf8'))
}

/** A JUMBF superbox: its description, then its content boxes. */
export function jumb (type: Buffer, label: string, ...content: Buffer[]): Buffer {
  return box('jumb', jumd(type, label), ...content)
}

/** A manifest store whose one CBOR box holds `cbor`. */
export function storeWithCbor (cbor: Buffer): Buffer {
  return jumb(C2PA_STORE_TYPE, 'c2pa', jumb(CBOR_TYPE, 'c2pa.hash.data', box('cbor', cbor)))
}

/** CBOR arrays nested `depth` deep around a null: 0x81 × depth, 0xf6. */
export function nestedCbor (depth: number): Buffer {
  return Buffer.concat([Buffer.alloc(depth, 0x81), Buffer.from([0xf6])])
}

/** A flat CBOR array of `count` small integers. */
export function wideCbor (count: number): Buffer {
  return Buffer.concat([Buffer.from([0x9a]), be32(count), Buffer.alloc(count, 0x01)])
}

/** A manifest store of JUMBF superboxes nested `depth` deep (built in one pass: each level is a header before the next). */
export function nestedJumbf (depth: number): Buffer {
  const inner = box('cbor', Buffer.from([0xf6]))
  const description = jumd(CBOR_TYPE, 'n')
  const headers: Buffer[] = []
  let size = inner.length
  for (let level = 0; level < depth; level++) {
    size += 8 + description.length
    headers.push(Buffer.concat([be32(size), Buffer.from('jumb', 'latin1'), description]))
  }
  return jumb(C2PA_STORE_TYPE, 'c2pa', Buffer.concat([...headers.reverse(), inner]))
}

/** A manifest store of `count` sibling superboxes. */
export function wideJumbf (count: number): Buffer {
  const child = jumb(CBOR_TYPE, 'n', box('cbor', Buffer.from([0xf6])))
  return jumb(C2PA_STORE_TYPE, 'c2pa', ...Array.from({ length: count }, () => child))
}

/** The manifest store with its superbox's size written as a 64-bit largesize (size field 1). */
export function jumbfWithLargeSize (store: Buffer): Buffer {
  const payload = store.subarray(8)
  const header = Buffer.alloc(16)
  header.writeUInt32BE(1, 0)
  header.write('jumb', 4, 'latin1')
  header.writeBigUInt64BE(BigInt(16 + payload.length), 8)
  return Buffer.concat([header, payload])
}

// ---------------------------------------------------------------------------------------------------------------------
// XMP

/** An XMP packet whose description holds elements nested `depth` deep. */
export function nestedXmp (depth: number): string {
  return '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
    '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:subject>' +
    '<rdf:Bag><rdf:li>'.repeat(depth) + 'x' + '</rdf:li></rdf:Bag>'.repeat(depth) +
    '</dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>'
}

// ---------------------------------------------------------------------------------------------------------------------
// PNG

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = (c & 1) !== 0 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})

function crc32 (bytes: Buffer): number {
  let c = 0xffffffff
  for (const byte of bytes) c = CRC_TABLE[(c ^ byte) & 0xff]! ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}

export function pngChunk (type: string, data: Buffer): Buffer {
  const typed = Buffer.concat([Buffer.from(type, 'latin1'), data])
  return Buffer.concat([be32(data.length), typed, be32(crc32(typed))])
}

/** The PNG with `chunks` inserted after IHDR. */
export function withPngChunks (png: Buffer, ...chunks: Buffer[]): Buffer {
  const afterIhdr = 8 + 8 + png.readUInt32BE(8) + 4
  return Buffer.concat([png.subarray(0, afterIhdr), ...chunks, png.subarray(afterIhdr)])
}

export function pngXmpChunk (xmp: string, compressed = false): Buffer {
  const text = Buffer.from(xmp, 'utf8')
  return pngChunk('iTXt', Buffer.concat([
    Buffer.from('XML:com.adobe.xmp\0', 'latin1'), Buffer.from([compressed ? 1 : 0, 0]), Buffer.from('\0\0', 'latin1'),
    compressed ? deflateSync(text) : text
  ]))
}

// ---------------------------------------------------------------------------------------------------------------------
// WebP (RIFF)

/** The WebP with `chunks` appended, as an extended (VP8X) file whose flags announce Exif and XMP. */
export function withWebpChunks (webp: Buffer, ...chunks: Array<{ type: string, data: Buffer }>): Buffer {
  const riffChunks: Buffer[] = []
  const body = webp.subarray(12)
  let hasVp8x = false
  for (let at = 0; at + 8 <= body.length;) {
    const size = body.readUInt32LE(at + 4)
    const chunk = Buffer.from(body.subarray(at, at + 8 + size + (size % 2)))
    if (chunk.toString('latin1', 0, 4) === 'VP8X') {
      hasVp8x = true
      chunk[8] = chunk[8]! | 0x0c
    }
    riffChunks.push(chunk)
    at += 8 + size + (size % 2)
  }
  if (!hasVp8x) riffChunks.unshift(vp8x(riffChunks[0]!))
  for (const { type, data } of chunks) {
    riffChunks.push(Buffer.concat([Buffer.from(type, 'latin1'), le32(data.length), data, Buffer.alloc(data.length % 2)]))
  }
  const all = Buffer.concat(riffChunks)
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), le32(4 + all.length), Buffer.from('WEBP', 'latin1'), all])
}

/** A VP8X chunk (Exif and XMP flags set) for a simple lossy WebP, sized from its VP8 frame header. */
function vp8x (vp8: Buffer): Buffer {
  if (vp8.toString('latin1', 0, 4) !== 'VP8 ') throw new Error('withWebpChunks needs a lossy or an extended WebP')
  const width = (vp8.readUInt16LE(8 + 6) & 0x3fff) - 1
  const height = (vp8.readUInt16LE(8 + 8) & 0x3fff) - 1
  const data = Buffer.alloc(10)
  data[0] = 0x0c
  data.writeUIntLE(width, 4, 3)
  data.writeUIntLE(height, 7, 3)
  return Buffer.concat([Buffer.from('VP8X', 'latin1'), le32(10), data])
}

// ---------------------------------------------------------------------------------------------------------------------
// CIFF (Canon CRW, and the CIFF block of early PowerShot JPEGs)

/** A CIFF file header: byte order, header length, the type and subtype ('HEAP' + `subtype`), version. */
export function ciffHeader (subtype: 'CCDR' | 'JPGM'): Buffer {
  return Buffer.concat([Buffer.from('II', 'latin1'), le32(26), Buffer.from(`HEAP${subtype}`, 'latin1'), le32(0x00010002), Buffer.alloc(8)])
}

/** The camera records ExifTool reads: make and model, and the capture time (seconds since 1970, no zone). */
export function ciffCameraRecords (make: string, model: string, capturedAt: Date): CiffRecord[] {
  const seconds = Math.floor(capturedAt.getTime() / 1000)
  const timeStamp = Buffer.concat([le32(seconds), le32(0), le32(0)])
  const makeModel = Buffer.from(`${make}\0${model}\0`, 'latin1')
  return [
    { tag: 0x180e, data: timeStamp },
    { tag: 0x3004, data: ciffHeap([{ tag: 0x080a, data: makeModel }]) }
  ]
}

/**
 * A CRW of heaps nested `depth` deep (type 0x3000 subdirectories), built in one pass: each heap is its one sub-heap
 * followed by its record table.
 */
export function crwWithNestedHeaps (depth: number): Buffer {
  const innermost = ciffHeap([{ tag: 0x080a, data: Buffer.from('Canon\0Canon EOS D60\0', 'latin1') }])
  const tables: Buffer[] = []
  let size = innermost.length
  for (let level = 0; level < depth; level++) {
    tables.push(Buffer.concat([le16(1), le16(0x300a), le32(size), le32(0), le32(size)]))
    size += 16
  }
  return Buffer.concat([ciffHeader('CCDR'), innermost, ...tables])
}

/** A CRW whose heaps hold `count` records in all: a root of `count` empty subdirectories. */
export function crwWithManyRecords (count: number): Buffer {
  const empty = ciffHeap([])
  return Buffer.concat([ciffHeader('CCDR'), ciffHeap(Array.from({ length: count }, () => ({ tag: 0x300a, data: empty })))])
}

// ---------------------------------------------------------------------------------------------------------------------
// ISO BMFF

/** The HEIF followed by `count` empty `free` boxes. */
export function withFreeBoxes (heif: Buffer, count: number): Buffer {
  return Buffer.concat([heif, Buffer.concat(Array.from({ length: count }, () => box('free')))])
}

/**
 * An early PowerShot's layout: JFIF APP0, then an APP0 holding a CIFF heap ('HEAPJPGM') with the camera's make, model
 * and capture time, and no Exif at all.
 */
export function jpegWithCiff (jpeg: Buffer, make: string, model: string, capturedAt: Date): Buffer {
  const jfif = jpegSegment(0xe0, Buffer.from([0x4a, 0x46, 0x49, 0x46, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0]))
  const heap = ciffHeap([{ tag: 0x300a, data: ciffHeap(ciffCameraRecords(make, model, capturedAt)) }])
  const ciff = jpegSegment(0xe0, Buffer.concat([ciffHeader('JPGM'), heap]))
  let body = jpeg.subarray(2)
  // sharp writes its own JFIF APP0 first: replaced by the camera's two.
  if (body[0] === 0xff && body[1] === 0xe0) body = body.subarray(2 + body.readUInt16BE(2))
  return Buffer.concat([jpeg.subarray(0, 2), jfif, ciff, body])
}

/** A JUMBF type: four characters and ISO/IEC 19566-5's suffix. */
function jumbfType (fourcc: string): Buffer {
  return Buffer.concat([Buffer.from(fourcc, 'latin1'), Buffer.from('00110010800000aa00389b71', 'hex')])
}

/**
 * A manifest store as C2PA's pre-release (0.7) writers made it: the claim and its assertions in JSON boxes, not CBOR.
 * c2pa-rs refuses such a store as pre-release; ExifTool reads its fields.
 */
export function prereleaseManifestStore (claimGenerator: string): Buffer {
  const json = (value: unknown): Buffer => box('json', Buffer.from(JSON.stringify(value)))
  return jumb(jumbfType('c2pa'), 'c2pa',
    jumb(jumbfType('c2ma'), 'urn:uuid:5a1f6c0e-8d7e-4d5f-9a1b-2c3d4e5f6a7b',
      jumb(jumbfType('c2as'), 'c2pa.assertions', jumb(jumbfType('json'), 'c2pa.actions', json({ actions: [{ action: 'c2pa.created' }] }))),
      jumb(jumbfType('c2cl'), 'c2pa.claim', json({
        claim_generator: claimGenerator,
        signature: 'self#jumbf=c2pa.signature',
        assertions: [{ url: 'self#jumbf=c2pa.assertions/c2pa.actions', hash: 'AAAA' }],
        alg: 'sha256'
      })),
      jumb(jumbfType('c2cs'), 'c2pa.signature', box('cbor', Buffer.from([0xf6])))))
}
