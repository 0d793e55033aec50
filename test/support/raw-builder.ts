// Builds minimal camera raw files and JPEG XL images in memory for tests: no third-party sample files.
//
// Each raw is the smallest structure that ExifTool recognises as that file type when the file carries that
// extension, holding a small image of RAW_SIZE (dummy sensor data; a real JPEG from sharp where the format embeds
// one). ExifTool reads only the structure, so nothing here is decodable raw data.
//
// The camera tags are then written by the real ExifTool, which can write every one of these formats (3FR and SRF
// only under a .tif name, X3F only into its JPEG preview, CRW into its CIFF records plus XMP in a trailer). The few
// fields it cannot write are laid out here from the requested camera: the model in RAF's header, X3F's PROP
// section, and the CIFF Make/Model record, which ExifTool edits only in place.

import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ExifTool, WriteTags } from 'exiftool-vendored'
import sharp from 'sharp'
import type { CameraRawFormat } from '../../src/metadata/camera-raw.ts'
import { box, u32 } from './heif-builder.ts'
import { le16, le32 } from './bytes.ts'

/** The full-resolution image size of every built raw (previews and thumbnails are smaller or equal). */
export const RAW_SIZE = { width: 64, height: 48 }
const THUMBNAIL_SIZE = { width: 16, height: 12 }
/**
 * The size of the JPEG previews embedded in CRW, RAF and X3F: smaller than the sensor image, as in real files, so
 * a test can tell which of the two ExifTool's ImageSize reports.
 */
export const PREVIEW_SIZE = { width: 32, height: 24 }

/** A camera that really wrote each format; the maker (and for some formats the model) is what tells them apart. */
export const RAW_CAMERAS: Record<CameraRawFormat, { Make: string, Model: string }> = {
  dng: { Make: 'LEICA CAMERA AG', Model: 'LEICA M11' },
  cr2: { Make: 'Canon', Model: 'Canon EOS 5D Mark IV' },
  cr3: { Make: 'Canon', Model: 'Canon EOS R5' },
  crw: { Make: 'Canon', Model: 'Canon EOS D60' },
  nef: { Make: 'NIKON CORPORATION', Model: 'NIKON D850' },
  nrw: { Make: 'NIKON', Model: 'COOLPIX P6000' },
  arw: { Make: 'SONY', Model: 'ILCE-7M3' },
  srf: { Make: 'SONY', Model: 'DSC-F828' },
  sr2: { Make: 'SONY', Model: 'DSC-R1' },
  raf: { Make: 'FUJIFILM', Model: 'X-T3' },
  rw2: { Make: 'Panasonic', Model: 'DC-G9' },
  orf: { Make: 'OLYMPUS IMAGING CORP.', Model: 'E-M1' },
  pef: { Make: 'RICOH IMAGING COMPANY, LTD.', Model: 'PENTAX K-1' },
  srw: { Make: 'SAMSUNG', Model: 'NX300' },
  iiq: { Make: 'Phase One', Model: 'IQ180' },
  '3fr': { Make: 'Hasselblad', Model: 'H6D-100c' },
  erf: { Make: 'SEIKO EPSON CORP.', Model: 'R-D1' },
  mrw: { Make: 'KONICA MINOLTA', Model: 'DYNAX 7D' },
  x3f: { Make: 'SIGMA', Model: 'SIGMA DP2 Merrill' }
}

/**
 * A minimal `format` file with `tags` (ExifTool names) written into it by `exiftool`. The file is written as
 * `<scratch>.<format>` because ExifTool picks TIFF-based raw types by extension.
 */
export async function buildCameraRaw (format: CameraRawFormat, exiftool: ExifTool, tags: Record<string, string | number>): Promise<Buffer> {
  const camera = { ...RAW_CAMERAS[format], ...pick(tags, 'Make', 'Model') }
  const structure = await buildStructure(format, camera)
  // ExifTool will not write 3FR or SRF files ("Writing of 3FR files is not yet supported": %noWriteFile in
  // ExifTool.pm), though both are TIFF inside and it writes the same bytes named .tif: so write, then rename.
  const writeAs = format === '3fr' || format === 'srf' ? 'tif' : format
  const dir = await mkdtemp(join(tmpdir(), 'raw-builder-'))
  try {
    const path = join(dir, `raw.${writeAs}`)
    await writeFile(path, structure)
    if (Object.keys(tags).length > 0) {
      await exiftool.write(path, tags as WriteTags, { writeArgs: ['-overwrite_original'] })
    }
    const final = join(dir, `raw.${format}`)
    if (final !== path) await rename(path, final)
    return await readFile(final)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

interface Camera { Make: string, Model: string }

function pick (tags: Record<string, string | number>, ...names: Array<'Make' | 'Model'>): Partial<Camera> {
  const picked: Partial<Camera> = {}
  for (const name of names) {
    const value = tags[name]
    if (value !== undefined) picked[name] = String(value)
  }
  return picked
}

async function buildStructure (format: CameraRawFormat, camera: Camera): Promise<Buffer> {
  switch (format) {
    case 'cr2': return await buildCr2()
    case 'cr3': return buildCr3()
    case 'crw': return await buildCrw(camera)
    // Olympus's TIFF with 'RO' in place of 42.
    case 'orf': return tiffRaw('II', 0x4f52)
    case 'rw2': return buildRw2()
    case 'iiq': return buildIiq()
    case 'raf': return await buildRaf(camera)
    case 'mrw': return buildMrw()
    case 'x3f': return await buildX3f(camera)
    case 'dng': return tiffRaw('II', 0x2a, {
      extraIfd0: enc => [
        // DNGVersion 1.4, readable by DNG 1.1 readers; the unique model is what DNG readers show as the camera.
        enc.bytes(0xc612, [1, 4, 0, 0]),
        enc.bytes(0xc613, [1, 1, 0, 0]),
        enc.ascii(0xc614, `${camera.Make} ${camera.Model}`)
      ]
    })
    // Nikon and Pentax write big-endian raws, Sony and Samsung little-endian; 3FR and ERF are built big-endian
    // (ExifTool reads either order) so that both orders are exercised.
    case 'nef': case 'nrw': case 'pef': case '3fr': case 'erf': return tiffRaw('MM', 0x2a)
    case 'arw': case 'sr2': case 'srf': case 'srw': return tiffRaw('II', 0x2a)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Pixels

/** 8-bit samples with a gradient, so each built image has distinct, non-constant data. */
function samples (width: number, height: number, channels: number): Buffer {
  const data = Buffer.alloc(width * height * channels)
  for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff
  return data
}

async function jpeg (width: number, height: number): Promise<Buffer> {
  return await sharp(samples(width, height, 3), { raw: { width, height, channels: 3 } }).jpeg({ quality: 80 }).toBuffer()
}

// ---------------------------------------------------------------------------------------------------------------
// TIFF: a tiny writer for headers that sharp/libtiff cannot make (CR2, ORF, RW2, IIQ signatures) and for the
// preview + SubIFD layout of TIFF-based raws.

type ByteOrder = 'II' | 'MM'

const ASCII = 2
const SHORT = 3
const LONG = 4
const RATIONAL = 5
const UNDEFINED = 7

interface TiffEntry {
  tag: number
  type: number
  count: number
  /** The value in the file's byte order; stored in the entry when it fits in 4 bytes. */
  value?: Buffer
  /** Instead of a value: a LONG offset to these bytes, laid out after the directory (strips, previews); the same
   * Buffer in two entries is laid out once. */
  blob?: Buffer
  /** Instead of a value: a LONG offset to this sub-directory. */
  ifd?: TiffEntry[]
  /** Instead of a value: a LONG offset fixed by the caller (data the caller placed itself). */
  at?: number
}

class TiffEncoder {
  readonly order: ByteOrder
  readonly little: boolean
  readonly #placed = new Map<Buffer, number>()

  constructor (order: ByteOrder) {
    this.order = order
    this.little = order === 'II'
  }

  u16 (...values: number[]): Buffer {
    const b = Buffer.alloc(values.length * 2)
    values.forEach((value, i) => this.little ? b.writeUInt16LE(value, i * 2) : b.writeUInt16BE(value, i * 2))
    return b
  }

  u32 (...values: number[]): Buffer {
    const b = Buffer.alloc(values.length * 4)
    values.forEach((value, i) => this.little ? b.writeUInt32LE(value, i * 4) : b.writeUInt32BE(value, i * 4))
    return b
  }

  ascii (tag: number, text: string): TiffEntry {
    const value = Buffer.from(`${text}\0`, 'latin1')
    return { tag, type: ASCII, count: value.length, value }
  }

  short (tag: number, ...values: number[]): TiffEntry {
    return { tag, type: SHORT, count: values.length, value: this.u16(...values) }
  }

  long (tag: number, ...values: number[]): TiffEntry {
    return { tag, type: LONG, count: values.length, value: this.u32(...values) }
  }

  rational (tag: number, numerator: number, denominator: number): TiffEntry {
    return { tag, type: RATIONAL, count: 1, value: this.u32(numerator, denominator) }
  }

  bytes (tag: number, values: number[] | Buffer, type = 1): TiffEntry {
    const value = Buffer.from(values)
    return { tag, type, count: value.length, value }
  }

  /** One strip: StripOffsets pointing at `data`, and its StripByteCounts. */
  strip (data: Buffer): TiffEntry[] {
    return [{ tag: 0x111, type: LONG, count: 1, blob: data }, this.long(0x117, data.length)]
  }

  subIfd (tag: number, ifd: TiffEntry[]): TiffEntry {
    return { tag, type: LONG, count: 1, ifd }
  }

  /**
   * A TIFF file: header (byte order, `identifier`, IFD0 offset), then `afterHeader`, then the IFD chain with each
   * directory's out-of-line values, strips and sub-directories after it. Returns the bytes and each chained IFD's
   * offset (CR2 records the last one in its header).
   */
  encode (identifier: number, chain: TiffEntry[][], afterHeader: Buffer = Buffer.alloc(0)): { bytes: Buffer, ifdOffsets: number[] } {
    const out = new Output(8 + afterHeader.length)
    this.#placed.clear()
    const ifdOffsets: number[] = []
    let previousNext: { block: Buffer, at: number } | undefined
    for (const ifd of chain) {
      const { at, block } = this.#writeIfd(out, ifd)
      ifdOffsets.push(at)
      if (previousNext !== undefined) this.#put32(previousNext.block, previousNext.at, at)
      previousNext = { block, at: block.length - 4 }
    }
    const header = Buffer.concat([Buffer.from(this.order, 'latin1'), this.u16(identifier), this.u32(ifdOffsets[0] ?? 0), afterHeader])
    return { bytes: Buffer.concat([header, ...out.parts]), ifdOffsets }
  }

  #writeIfd (out: Output, entries: TiffEntry[]): { at: number, block: Buffer } {
    const sorted = [...entries].sort((a, b) => a.tag - b.tag)
    const block = Buffer.alloc(2 + sorted.length * 12 + 4)
    const at = out.append(block)
    this.#put16(block, 0, sorted.length)
    sorted.forEach((entry, index) => {
      const p = 2 + index * 12
      this.#put16(block, p, entry.tag)
      this.#put16(block, p + 2, entry.type)
      this.#put32(block, p + 4, entry.count)
      if (entry.ifd !== undefined) {
        this.#put32(block, p + 8, this.#writeIfd(out, entry.ifd).at)
      } else if (entry.blob !== undefined) {
        const placed = this.#placed.get(entry.blob) ?? out.append(entry.blob)
        this.#placed.set(entry.blob, placed)
        this.#put32(block, p + 8, placed)
      } else if (entry.at !== undefined) {
        this.#put32(block, p + 8, entry.at)
      } else if (entry.value !== undefined && entry.value.length <= 4) {
        entry.value.copy(block, p + 8)
      } else if (entry.value !== undefined) {
        this.#put32(block, p + 8, out.append(entry.value))
      }
    })
    return { at, block }
  }

  #put16 (b: Buffer, at: number, value: number): void {
    if (this.little) b.writeUInt16LE(value, at)
    else b.writeUInt16BE(value, at)
  }

  #put32 (b: Buffer, at: number, value: number): void {
    if (this.little) b.writeUInt32LE(value, at)
    else b.writeUInt32BE(value, at)
  }
}

/** Bytes appended at word-aligned file offsets (TIFF offsets should be even). */
class Output {
  readonly parts: Buffer[] = []
  #length: number

  constructor (start: number) {
    this.#length = start
  }

  append (bytes: Buffer): number {
    if (this.#length % 2 === 1) this.#push(Buffer.alloc(1))
    const at = this.#length
    this.#push(bytes)
    return at
  }

  #push (bytes: Buffer): void {
    this.parts.push(bytes)
    this.#length += bytes.length
  }
}

/** A reduced-resolution RGB preview, as raw files put in IFD0 (NewSubfileType 1 marks it as such). */
function previewIfd (enc: TiffEncoder): TiffEntry[] {
  const { width, height } = THUMBNAIL_SIZE
  return [
    enc.long(0xfe, 1),
    enc.long(0x100, width),
    enc.long(0x101, height),
    enc.short(0x102, 8, 8, 8),
    enc.short(0x103, 1),
    enc.short(0x106, 2),
    enc.short(0x112, 1),
    enc.short(0x115, 3),
    enc.long(0x116, height),
    enc.short(0x11c, 1),
    ...enc.strip(samples(width, height, 3))
  ]
}

/** The full-size sensor image: one 8-bit sample per pixel behind an RGGB colour filter array. */
function cfaIfd (enc: TiffEncoder): TiffEntry[] {
  const { width, height } = RAW_SIZE
  return [
    enc.long(0xfe, 0),
    enc.long(0x100, width),
    enc.long(0x101, height),
    enc.short(0x102, 8),
    enc.short(0x103, 1),
    enc.short(0x106, 32803),
    enc.short(0x115, 1),
    enc.long(0x116, height),
    enc.short(0x11c, 1),
    enc.short(0x828d, 2, 2), // CFARepeatPatternDim
    enc.bytes(0x828e, [0, 1, 1, 2]), // CFAPattern: R G / G B
    ...enc.strip(samples(width, height, 1))
  ]
}

/**
 * The layout most TIFF-based raws share (NEF, ARW, PEF, SRW, 3FR, ERF, DNG...): a small preview in IFD0 with the
 * sensor image in a SubIFD. Make and Model are left to ExifTool.
 */
function tiffRaw (order: ByteOrder, identifier: number, options: { extraIfd0?: (enc: TiffEncoder) => TiffEntry[] } = {}): Buffer {
  const enc = new TiffEncoder(order)
  const ifd0 = [...previewIfd(enc), enc.subIfd(0x14a, cfaIfd(enc)), ...(options.extraIfd0?.(enc) ?? [])]
  return enc.encode(identifier, [ifd0]).bytes
}

// ---------------------------------------------------------------------------------------------------------------
// CR2: a TIFF whose bytes 8..15 are 'CR', version 2.0 and the offset of the raw IFD (the last in the chain).
// IFD0 holds a full-size JPEG and the ExifIFD with ExifImageWidth/Height, which ExifTool's ImageSize uses for CR2.

async function buildCr2 (): Promise<Buffer> {
  const enc = new TiffEncoder('II')
  const { width, height } = RAW_SIZE
  const ifd0 = [
    enc.long(0x100, width),
    enc.long(0x101, height),
    enc.short(0x102, 8, 8, 8),
    enc.short(0x103, 6),
    enc.short(0x112, 1),
    ...enc.strip(await jpeg(width, height)),
    enc.subIfd(0x8769, [enc.long(0xa002, width), enc.long(0xa003, height)])
  ]
  const rawIfd = cfaIfd(enc)
  const signature = (lastIfd: number): Buffer => Buffer.concat([Buffer.from('CR\x02\0', 'latin1'), enc.u32(lastIfd)])
  // The header's last-IFD offset does not change the layout's length: lay out once to find it, then again.
  const { ifdOffsets } = enc.encode(0x2a, [ifd0, rawIfd], signature(0))
  return enc.encode(0x2a, [ifd0, rawIfd], signature(ifdOffsets[1] ?? 0)).bytes
}

// ---------------------------------------------------------------------------------------------------------------
// RW2: Panasonic's TIFF variant, identifier 0x55, then a 16-byte signature ExifTool checks before calling it RW2
// (without it, the file is Panasonic's older "RAW"). IFD0 uses Panasonic's own tags: the sensor size and borders
// (ExifTool derives ImageWidth/Height from the borders) and the raw strip via RawDataOffset.

const RW2_SIGNATURE = Buffer.from('88e774d8f8251d4d947a6e77822b5d6a', 'hex')

function buildRw2 (): Buffer {
  const enc = new TiffEncoder('II')
  const { width, height } = RAW_SIZE
  const raw = samples(width, height, 2)
  const ifd0 = [
    enc.bytes(0x01, Buffer.from('0310', 'latin1'), UNDEFINED), // PanasonicRawVersion
    enc.short(0x02, width), // SensorWidth
    enc.short(0x03, height), // SensorHeight
    enc.short(0x04, 0), // SensorTopBorder
    enc.short(0x05, 0), // SensorLeftBorder
    enc.short(0x06, height), // SensorBottomBorder
    enc.short(0x07, width), // SensorRightBorder
    enc.short(0x09, 1), // CFAPattern: RGGB
    enc.short(0x0a, 12), // BitsPerSample
    enc.short(0x0b, 34316), // Compression: Panasonic RAW 1
    enc.short(0x112, 1),
    // StripOffsets and RawDataOffset both at the sensor data, StripByteCounts 0: a combination PanasonicRaw.pm
    // accepts for rewriting (it then takes the sensor data to run to the end of the file).
    { tag: 0x111, type: LONG, count: 1, blob: raw },
    enc.long(0x117, 0),
    { tag: 0x118, type: LONG, count: 1, blob: raw }
  ]
  return enc.encode(0x55, [ifd0], RW2_SIGNATURE).bytes
}

// ---------------------------------------------------------------------------------------------------------------
// IIQ: a TIFF with Phase One's own directory right after the header ('IIII' + 'IwaR', then the offset of its
// entries), referenced as maker notes from the ExifIFD. Entries are 16 bytes: tag, value size class, byte count,
// value.

function phaseOneDirectory (): Buffer {
  const { width, height } = RAW_SIZE
  const entries: Array<[number, number]> = [
    [0x0108, width], // SensorWidth
    [0x0109, height], // SensorHeight
    [0x010c, width], // ImageWidth
    [0x010d, height] // ImageHeight
  ]
  const entriesStart = 16
  return Buffer.concat([
    Buffer.from('IIIIIwaR', 'latin1'),
    le32(entriesStart, 0), // offset of the entry count (from the directory start), padding
    le32(entries.length, 0), // entry count, unused
    ...entries.map(([tag, value]) => le32(tag, 4, 4, value))
  ])
}

function buildIiq (): Buffer {
  const directory = phaseOneDirectory()
  const enc = new TiffEncoder('II')
  // Placed by us right after the header, where ExifTool also keeps it when rewriting (PutFirst).
  const makerNotes: TiffEntry = { tag: 0x927c, type: UNDEFINED, count: directory.length, at: 8 }
  // Maker notes belong in the ExifIFD, the one sub-directory ExifTool lets keep its data next to the header.
  const ifd0 = [...previewIfd(enc), enc.subIfd(0x14a, cfaIfd(enc)), enc.subIfd(0x8769, [makerNotes])]
  return enc.encode(0x2a, [ifd0], directory).bytes
}

// ---------------------------------------------------------------------------------------------------------------
// CR3: ISO BMFF, `ftyp` with major brand `crx `, then `moov` holding Canon's uuid box. In it: CNCV (the
// compressor version, by which ExifTool tells CR3 from Canon's CRM movies), CTBO (offsets of the top-level
// XMP/preview/mdat, which ExifTool updates when it rewrites the file) and CMT1..CMT4, each a whole little TIFF:
// IFD0, ExifIFD, Canon maker notes and GPS. `mdat` holds dummy sensor data.

const CANON_UUID = Buffer.from('85c0b687820f11e08111f4ce462b6a48', 'hex')
export const CANON_EOS_R5_MODEL_ID = 0x80000421

function buildCr3 (): Buffer {
  const { width, height } = RAW_SIZE
  const cmt = (entries: (enc: TiffEncoder) => TiffEntry[]): Buffer => {
    const enc = new TiffEncoder('II')
    return enc.encode(0x2a, [entries(enc)]).bytes
  }
  const cmt1 = cmt(enc => [enc.long(0x100, width), enc.long(0x101, height), enc.short(0x112, 1)])
  const cmt2 = cmt(enc => [enc.long(0xa002, width), enc.long(0xa003, height)])
  // Canon maker notes: the model ID as a real camera writes it (ExifTool names 0x80000421 "EOS R5").
  const cmt3 = cmt(enc => [enc.long(0x0010, CANON_EOS_R5_MODEL_ID)])
  const cmt4 = cmt(enc => [enc.bytes(0x0000, [2, 3, 0, 0])]) // GPSVersionID
  const ftyp = box('ftyp', Buffer.from('crx ', 'latin1'), u32(1), Buffer.from('crx isom', 'latin1'))
  const mdatPayload = samples(width, height, 2)

  const build = (mdatOffset: number): Buffer => {
    // Entry 1 (XMP) is empty: ExifTool fills it in when it adds the XMP uuid box. Entry 3 is mdat.
    const ctbo = box('CTBO', u32(2), u32(1), u64(0), u64(0), u32(3), u64(mdatOffset), u64(8 + mdatPayload.length))
    const canon = box('uuid', CANON_UUID,
      box('CNCV', Buffer.from('CanonCR3_001/01.09.00/00.00.00', 'latin1')),
      ctbo,
      box('CMT1', cmt1), box('CMT2', cmt2), box('CMT3', cmt3), box('CMT4', cmt4))
    return Buffer.concat([ftyp, box('moov', canon)])
  }
  // CTBO's fields have a fixed width: measure, then build with the real mdat offset.
  const head = build(build(0).length)
  return Buffer.concat([head, box('mdat', mdatPayload)])
}

function u64 (value: number): Buffer {
  const b = Buffer.alloc(8)
  b.writeBigUInt64BE(BigInt(value))
  return b
}

// ---------------------------------------------------------------------------------------------------------------
// CRW: Canon's CIFF. A 26-byte header ('II', header length, 'HEAPCCDR', version), then the root heap. A heap is
// [record data][u16 count][10-byte records: tag, size, offset within the heap][u32 offset of the count]; the
// record type lives in the tag's top bits, and types 0x28/0x30 are nested heaps. ExifTool reads Make/Model from
// CanonRawMakeModel ("Canon\0<model>\0"), DateTimeOriginal from TimeStamp, ImageWidth/Height from ImageInfo.

export interface CiffRecord { tag: number, data: Buffer }

/** A CIFF heap: the records' data, their count, the 10-byte directory, and the offset of the count. */
export function ciffHeap (records: CiffRecord[]): Buffer {
  const data: Buffer[] = []
  const directory: Buffer[] = []
  let offset = 0
  for (const record of records) {
    // The CIFF spec aligns values to even offsets.
    const padded = record.data.length % 2 === 1 ? Buffer.concat([record.data, Buffer.alloc(1)]) : record.data
    directory.push(Buffer.concat([le16(record.tag), le32(record.data.length), le32(offset)]))
    data.push(padded)
    offset += padded.length
  }
  return Buffer.concat([...data, le16(records.length), ...directory, le32(offset)])
}

async function buildCrw (camera: Camera): Promise<Buffer> {
  const { width, height } = RAW_SIZE
  // Make is a fixed 6-byte field ("Canon\0"). ExifTool rewrites this record in place at its existing size (a longer
  // model would be cut short), so it is sized here for the model asked for.
  const makeModel = Buffer.from(`${camera.Make.padEnd(5).slice(0, 5)}\0${camera.Model}\0`, 'latin1')
  // Unix time 0 until ExifTool writes DateTimeOriginal; no time zone.
  const timeStamp = Buffer.concat([le32(0), le32(0), le32(0)])
  // ImageInfo: width, height, pixel aspect ratio (float 1.0), rotation, component and colour bit depth, colour.
  const imageInfo = Buffer.concat([le32(width), le32(height), Buffer.from([0, 0, 0x80, 0x3f]), le32(0), le32(8), le32(8), le32(1)])
  const cameraSpecification = ciffHeap([{ tag: 0x080a, data: makeModel }])
  const imageProps = ciffHeap([
    { tag: 0x1810, data: imageInfo },
    { tag: 0x180e, data: timeStamp },
    { tag: 0x3004, data: cameraSpecification }
  ])
  const root = ciffHeap([
    { tag: 0x2007, data: await jpeg(PREVIEW_SIZE.width, PREVIEW_SIZE.height) }, // JpgFromRaw
    { tag: 0x2005, data: samples(width, height, 2) }, // RawData
    { tag: 0x300a, data: imageProps }
  ])
  const header = Buffer.concat([Buffer.from('II', 'latin1'), le32(26), Buffer.from('HEAPCCDR', 'latin1'), le32(0x00010002), Buffer.alloc(8)])
  return Buffer.concat([header, root])
}

// ---------------------------------------------------------------------------------------------------------------
// MRW: '\0MRM' and the length of the metadata blocks that follow; the sensor data starts right after them. Each
// block is a 4-byte name, a length and data: PRD (sensor and image size), TTW (a whole TIFF: where ExifTool reads
// and writes the EXIF), WBG (white balance gains).

function buildMrw (): Buffer {
  const { width, height } = RAW_SIZE
  const prd = Buffer.concat([
    Buffer.from('21810002', 'latin1'), // FirmwareID
    u16be(height), u16be(width), // SensorHeight, SensorWidth
    u16be(height), u16be(width), // ImageHeight, ImageWidth
    Buffer.from([12, 12, 0x59, 0, 0, 0, 0, 1]) // RawDepth, BitDepth, StorageMethod (Linear), padding, BayerPattern RGGB
  ])
  const enc = new TiffEncoder('MM')
  const ttw = enc.encode(0x2a, [[enc.long(0x100, width), enc.long(0x101, height), enc.short(0x112, 1)]]).bytes
  const wbg = Buffer.from([0, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0])
  const block = (name: string, data: Buffer): Buffer => Buffer.concat([Buffer.from(`\0${name}`, 'latin1'), u32(data.length), data])
  const blocks = Buffer.concat([block('PRD', prd), block('TTW', ttw), block('WBG', wbg)])
  return Buffer.concat([Buffer.from('\0MRM', 'latin1'), u32(blocks.length), blocks, samples(width, height, 2)])
}

function u16be (value: number): Buffer {
  const b = Buffer.alloc(2)
  b.writeUInt16BE(value)
  return b
}

// ---------------------------------------------------------------------------------------------------------------
// RAF: a 0x94-byte big-endian header ('FUJIFILMCCD-RAW ', versions, camera ID and model, then offset/length
// pairs), the embedded JPEG preview (where the EXIF lives, and what ExifTool rewrites), the RAF directory of
// sizes (ExifTool's ImageSize is its RawImageCroppedSize) and the sensor data.

async function buildRaf (camera: Camera): Promise<Buffer> {
  const { width, height } = RAW_SIZE
  const headerLength = 0x94
  // ExifTool adds EXIF to the JPEG itself.
  const preview = await jpeg(PREVIEW_SIZE.width, PREVIEW_SIZE.height)
  // Fuji pads the JPEG to a 4-byte boundary, and ExifTool expects zero padding before the next block.
  const previewPadded = Buffer.concat([preview, Buffer.alloc((4 - preview.length % 4) % 4)])
  const rafEntry = (tag: number, ...values: number[]): Buffer => Buffer.concat([u16be(tag), u16be(values.length * 2), ...values.map(u16be)])
  const rafDirectory = Buffer.concat([
    u32(3),
    rafEntry(0x100, height, width), // RawImageFullSize
    rafEntry(0x110, 0, 0), // RawImageCropTopLeft
    rafEntry(0x111, height, width) // RawImageCroppedSize
  ])
  const sensor = samples(width, height, 2)
  const jpegAt = headerLength
  const directoryAt = jpegAt + previewPadded.length
  const sensorAt = directoryAt + rafDirectory.length

  const header = Buffer.alloc(headerLength)
  header.write('FUJIFILMCCD-RAW 0201FF383501', 0, 'latin1') // signature, format version, camera ID
  header.write(camera.Model.slice(0, 32), 0x1c, 'latin1')
  header.write('0100', 0x3c, 'latin1') // directory version: ExifTool writes only numeric versions
  header.writeUInt32BE(jpegAt, 0x54)
  header.writeUInt32BE(preview.length, 0x58)
  header.writeUInt32BE(directoryAt, 0x5c)
  header.writeUInt32BE(rafDirectory.length, 0x60)
  header.writeUInt32BE(sensorAt, 0x64)
  header.writeUInt32BE(sensor.length, 0x68)
  return Buffer.concat([header, previewPadded, rafDirectory, sensor])
}

// ---------------------------------------------------------------------------------------------------------------
// X3F: Sigma's 'FOVb' header (version 2.3: 104 bytes plus a 160-byte extended header) with the image size, then
// sections, then a 'SECd' directory of them and, in the last 4 bytes, the directory's offset. ExifTool writes
// metadata only into the JPEG preview (an IMA2 'SECi' section: version 2.0, type 2, format 18), and only if that
// JPEG already starts with an EXIF segment: so the JPEG gets a minimal one here. PROP holds Sigma's own
// properties (UTF-16 name/value pairs), among them the camera maker and model.

async function buildX3f (camera: Camera): Promise<Buffer> {
  const { width, height } = RAW_SIZE
  const header = Buffer.alloc(104 + 160)
  header.write('FOVb', 0, 'latin1')
  header.writeUInt32LE(0x00020003, 4) // version 2.3
  header.writeUInt32LE(width, 28)
  header.writeUInt32LE(height, 32)
  header.write('Auto', 40, 'latin1') // WhiteBalance
  header.write('Standard', 72, 'latin1') // SceneCaptureType

  const preview = await jpegWithExif(PREVIEW_SIZE.width, PREVIEW_SIZE.height)
  const imageSection = (type: number, format: number, size: { width: number, height: number }, data: Buffer, rowBytes: number): Buffer => {
    const sectionHeader = Buffer.concat([Buffer.from('SECi', 'latin1'), le32(0x00020000), le32(type), le32(format), le32(size.width), le32(size.height), le32(rowBytes)])
    return Buffer.concat([sectionHeader, data])
  }
  const sections: Array<{ tag: string, data: Buffer }> = [
    { tag: 'PROP', data: x3fProperties({ CAMMANUF: camera.Make, CAMMODEL: camera.Model }) },
    { tag: 'IMA2', data: imageSection(2, 18, PREVIEW_SIZE, preview, 0) }, // the JPEG preview (JpgFromRaw)
    { tag: 'IMAG', data: imageSection(3, 30, RAW_SIZE, samples(width, height, 2), width * 2) } // the sensor data
  ]
  const parts: Buffer[] = [header]
  const directory: Buffer[] = []
  let offset = header.length
  for (const section of sections) {
    // Section lengths include padding to 4 bytes (as Sigma's do, and as ExifTool writes them).
    const padded = Buffer.concat([section.data, Buffer.alloc((4 - section.data.length % 4) % 4)])
    directory.push(Buffer.concat([le32(offset), le32(padded.length), Buffer.from(section.tag, 'latin1')]))
    parts.push(padded)
    offset += padded.length
  }
  const secd = Buffer.concat([Buffer.from('SECd', 'latin1'), le32(0x00020000), le32(sections.length), ...directory])
  return Buffer.concat([...parts, secd, le32(offset)])
}

function x3fProperties (properties: Record<string, string>): Buffer {
  const chars: number[] = []
  const pointers: Buffer[] = []
  for (const [name, value] of Object.entries(properties)) {
    const namePos = chars.length
    chars.push(...[...name].map(c => c.charCodeAt(0)), 0)
    const valuePos = chars.length
    chars.push(...[...value].map(c => c.charCodeAt(0)), 0)
    pointers.push(Buffer.concat([le32(namePos), le32(valuePos)]))
  }
  const text = Buffer.concat(chars.map(le16))
  // 'SECp', version, entry count, character format 0 (UTF-16LE), reserved, length in characters.
  return Buffer.concat([Buffer.from('SECp', 'latin1'), le32(0x00020000), le32(pointers.length), le32(0), le32(0), le32(chars.length), ...pointers, text])
}

/** A sharp JPEG with an APP1 EXIF segment (a TIFF holding just Orientation) straight after SOI. */
async function jpegWithExif (width: number, height: number): Promise<Buffer> {
  const plain = await jpeg(width, height)
  const enc = new TiffEncoder('II')
  const exif = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), enc.encode(0x2a, [[enc.short(0x112, 1)]]).bytes])
  const app1 = Buffer.concat([Buffer.from([0xff, 0xe1]), u16be(exif.length + 2), exif])
  return Buffer.concat([plain.subarray(0, 2), app1, plain.subarray(2)])
}

// ---------------------------------------------------------------------------------------------------------------
// JPEG XL: sharp here has no JXL encoder, so this is a hand-made codestream: the 0xFF0A signature and a
// SizeHeader (LSB-first bits) for the requested size, then filler. Decoders would reject the rest, but ExifTool
// and image-size read only the size. `container` wraps it as ISO BMFF: the 'JXL ' signature box, `ftyp` with
// brand 'jxl ', and `jxlc` holding the codestream.

export function buildJpegXl (options: { width: number, height: number, container: boolean }): Buffer {
  const codestream = Buffer.concat([Buffer.from([0xff, 0x0a]), jxlSizeHeader(options.width, options.height), Buffer.alloc(16)])
  if (!options.container) return codestream
  return Buffer.concat([
    box('JXL ', Buffer.from([0x0d, 0x0a, 0x87, 0x0a])),
    box('ftyp', Buffer.from('jxl ', 'latin1'), u32(0), Buffer.from('jxl ', 'latin1')),
    box('jxlc', codestream)
  ])
}

/** The SizeHeader: `small` (both sides multiples of 8 up to 256) or explicit sizes, with aspect ratio 0 (explicit width). */
function jxlSizeHeader (width: number, height: number): Buffer {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 2 ** 30 || height > 2 ** 30) {
    throw new RangeError(`JPEG XL sizes are 1..2^30, not ${width}x${height}`)
  }
  const bits = new BitWriter()
  const small = width % 8 === 0 && height % 8 === 0 && width <= 256 && height <= 256
  const dimension = (value: number): void => {
    if (small) {
      bits.write(value / 8 - 1, 5)
      return
    }
    const sizeClass = [9, 13, 18, 30].findIndex(length => value - 1 < 2 ** length)
    bits.write(sizeClass, 2)
    bits.write(value - 1, [9, 13, 18, 30][sizeClass] ?? 30)
  }
  bits.write(small ? 1 : 0, 1)
  dimension(height)
  bits.write(0, 3) // ratio 0: the width follows
  dimension(width)
  return bits.bytes()
}

class BitWriter {
  readonly #bits: number[] = []

  write (value: number, length: number): void {
    // Division, not shifts: values can use all 30 bits.
    for (let i = 0; i < length; i++) this.#bits.push(Math.floor(value / 2 ** i) % 2)
  }

  bytes (): Buffer {
    const out = Buffer.alloc(Math.ceil(this.#bits.length / 8))
    this.#bits.forEach((bit, i) => {
      out[i >> 3] = (out[i >> 3] ?? 0) | (bit << (i & 7))
    })
    return out
  }
}
