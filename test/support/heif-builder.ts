// Builds small, structurally valid HEIF-family still images in memory for tests.
//
// The coded data in `mdat` is dummy bytes: nothing in the toolchain here can
// encode HEVC (sharp's prebuilt libheif has no HEVC encoder), and the tests only
// need the container. The structure is still complete enough (hdlr, pitm, iinf,
// iprp, iloc with correct absolute offsets, mdat) for ExifTool to identify the
// file and rewrite it with EXIF.

export interface HeifItemSpec { width: number, height: number }

export interface HeifBuildOptions {
  majorBrand: string // 'heic' | 'mif1' | 'avif' | ...
  compatibleBrands?: string[] // default: ['mif1', majorBrand]
  primary: HeifItemSpec
  thumbnail?: HeifItemSpec // a second coded item referenced from the primary by an iref 'thmb'
  thumbnailPropertiesFirst?: boolean // put the thumbnail's ispe before the primary's in ipco (the image-size trap)
  codec?: 'hvc1' | 'av01' // default hvc1 unless majorBrand is avif/avis
  // Knobs for exercising less common encodings of the same structure.
  omitPitm?: boolean
  pitmVersion?: 0 | 1 // 1 → 32-bit item_ID
  ipmaVersion?: 0 | 1 // 1 → 32-bit item_ID per entry
  ipmaFlags?: 0 | 1 // 1 → 16-bit property associations
  ilocVersion?: 0 | 1
}

const PRIMARY_ID = 1
const THUMBNAIL_ID = 2
const DUMMY_DATA_LENGTH = 16

function u8 (value: number): Buffer {
  return Buffer.from([value & 0xff])
}

export function u16 (value: number): Buffer {
  const b = Buffer.alloc(2)
  b.writeUInt16BE(value)
  return b
}

export function u32 (value: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeUInt32BE(value)
  return b
}

function ascii (text: string): Buffer {
  return Buffer.from(text, 'latin1')
}

function fourcc (text: string): Buffer {
  if (text.length !== 4) throw new Error(`not a four-character code: ${JSON.stringify(text)}`)
  return ascii(text)
}

/** A plain box: 32-bit size, type, payload. */
export function box (type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload)
  return Buffer.concat([u32(8 + body.length), fourcc(type), body])
}

/** A FullBox: box header, then version (8 bits) and flags (24 bits). */
export function fullBox (type: string, version: number, flags: number, ...payload: Buffer[]): Buffer {
  return box(type, u8(version), u8(flags >> 16), u16(flags & 0xffff), ...payload)
}

// HEVCDecoderConfigurationRecord for Main profile, level 3.0, 4:2:0 8-bit, with no
// parameter-set arrays: plausible enough for parsers that peek at it.
function hvcC (): Buffer {
  return box('hvcC',
    u8(1), // configurationVersion
    u8(0x01), // profile_space 0, tier 0, profile_idc 1 (Main)
    u32(0x60000000), // profile compatibility flags
    Buffer.from([0x90, 0, 0, 0, 0, 0]), // constraint indicator flags
    u8(90), // level_idc
    u16(0xf000), // reserved + min_spatial_segmentation_idc 0
    u8(0xfc), // reserved + parallelismType 0
    u8(0xfd), // reserved + chroma_format_idc 1 (4:2:0)
    u8(0xf8), // reserved + bit_depth_luma_minus8 0
    u8(0xf8), // reserved + bit_depth_chroma_minus8 0
    u16(0), // avgFrameRate
    u8(0x0f), // constantFrameRate 0, numTemporalLayers 1, temporalIdNested 1, lengthSizeMinusOne 3
    u8(0) // numOfArrays
  )
}

// AV1CodecConfigurationRecord: profile 0, level 8, 4:2:0 8-bit, no config OBUs.
function av1C (): Buffer {
  return box('av1C', Buffer.from([0x81, 0x08, 0x0c, 0x00]))
}

function ispe (spec: HeifItemSpec): Buffer {
  return fullBox('ispe', 0, 0, u32(spec.width), u32(spec.height))
}

function itemId (version: number, id: number): Buffer {
  return version === 0 ? u16(id) : u32(id)
}

interface Item { id: number, spec: HeifItemSpec }

function buildMeta (options: Required<Pick<HeifBuildOptions, 'pitmVersion' | 'ipmaVersion' | 'ipmaFlags' | 'ilocVersion'>> & {
  items: Item[]
  codec: 'hvc1' | 'av01'
  omitPitm: boolean
  thumbnailPropertiesFirst: boolean
  dataStart: number
}): Buffer {
  const { items, codec } = options
  const hasThumbnail = items.length > 1

  const hdlr = fullBox('hdlr', 0, 0, u32(0), fourcc('pict'), u32(0), u32(0), u32(0), u8(0))
  const pitm = options.omitPitm ? Buffer.alloc(0) : fullBox('pitm', options.pitmVersion, 0, itemId(options.pitmVersion, PRIMARY_ID))

  const infes = items.map(item => fullBox('infe', 2, 0, u16(item.id), u16(0), fourcc(codec), u8(0)))
  const iinf = fullBox('iinf', 0, 0, u16(infes.length), ...infes)

  // The thumbnail points at the image it is a thumbnail of.
  const iref = hasThumbnail
    ? fullBox('iref', 0, 0, box('thmb', u16(THUMBNAIL_ID), u16(1), u16(PRIMARY_ID)))
    : Buffer.alloc(0)

  // Each item gets [codec config, ispe]; ipco indexes are 1-based in this order.
  const propertyOrder = options.thumbnailPropertiesFirst ? [...items].reverse() : items
  const properties: Buffer[] = []
  const indexes = new Map<number, { config: number, size: number }>()
  for (const item of propertyOrder) {
    properties.push(codec === 'av01' ? av1C() : hvcC())
    const config = properties.length
    properties.push(ispe(item.spec))
    indexes.set(item.id, { config, size: properties.length })
  }
  const ipco = box('ipco', ...properties)

  const wide = options.ipmaFlags === 1
  const association = (index: number, essential: boolean): Buffer => wide
    ? u16((essential ? 0x8000 : 0) | index)
    : u8((essential ? 0x80 : 0) | index)
  const entries = items.map(item => {
    const index = indexes.get(item.id)
    if (index === undefined) throw new Error('unreachable: every item has properties')
    return Buffer.concat([
      itemId(options.ipmaVersion, item.id),
      u8(2),
      association(index.config, true),
      association(index.size, false)
    ])
  })
  const ipma = fullBox('ipma', options.ipmaVersion, options.ipmaFlags, u32(entries.length), ...entries)
  const iprp = box('iprp', ipco, ipma)

  // offset_size 4, length_size 4, base_offset_size 0; version 1 adds index_size (0)
  // and a 16-bit construction_method (0 = file offset) per item.
  const ilocEntries = items.map((item, i) => Buffer.concat([
    u16(item.id),
    options.ilocVersion === 1 ? u16(0) : Buffer.alloc(0),
    u16(0), // data_reference_index: this file
    u16(1), // extent_count
    u32(options.dataStart + i * DUMMY_DATA_LENGTH),
    u32(DUMMY_DATA_LENGTH)
  ]))
  const iloc = fullBox('iloc', options.ilocVersion, 0, u8(0x44), u8(0x00), u16(items.length), ...ilocEntries)

  return fullBox('meta', 0, 0, hdlr, pitm, iinf, iref, iprp, iloc)
}

export function buildHeif (options: HeifBuildOptions): Buffer {
  const majorBrand = options.majorBrand
  const compatibleBrands = options.compatibleBrands ?? ['mif1', majorBrand]
  const codec = options.codec ?? (majorBrand === 'avif' || majorBrand === 'avis' ? 'av01' : 'hvc1')
  const items: Item[] = [{ id: PRIMARY_ID, spec: options.primary }]
  if (options.thumbnail !== undefined) items.push({ id: THUMBNAIL_ID, spec: options.thumbnail })

  const ftyp = box('ftyp', fourcc(majorBrand), u32(0), ...compatibleBrands.map(fourcc))
  const metaOptions = {
    items,
    codec,
    omitPitm: options.omitPitm ?? false,
    thumbnailPropertiesFirst: options.thumbnailPropertiesFirst ?? false,
    pitmVersion: options.pitmVersion ?? 0,
    ipmaVersion: options.ipmaVersion ?? 0,
    ipmaFlags: options.ipmaFlags ?? 0,
    ilocVersion: options.ilocVersion ?? 0
  }
  // iloc fields have a fixed width, so meta's length does not depend on the
  // offsets: build once to measure, then again with the real absolute offsets.
  const metaLength = buildMeta({ ...metaOptions, dataStart: 0 }).length
  const dataStart = ftyp.length + metaLength + 8
  const meta = buildMeta({ ...metaOptions, dataStart })

  // Distinct filler per item so a wrong iloc offset would be noticeable.
  const data = items.map((item, i) => Buffer.alloc(DUMMY_DATA_LENGTH, 0x10 * (i + 1) + item.id))
  const mdat = box('mdat', ...data)
  return Buffer.concat([ftyp, meta, mdat])
}
