// Minimal, defensive reader for HEIF-family (HEIC/HEIF/AVIF) still images.
//
// Exists because generic readers take the first `ispe` in `ipco`, which in real
// grid-coded iPhone files belongs to a tile or the thumbnail. Here the size comes
// from the `ispe` associated (via `ipma`) with the item named by `pitm`.
//
// Input is untrusted: every read is bounds-checked, boxes must fit inside their
// parent, and the total number of boxes visited is capped, so the functions
// return `undefined` on anything odd instead of throwing or spinning.

export type HeifFormat = 'heic' | 'heif' | 'avif'

export interface HeifInfo { format: HeifFormat, width: number, height: number }

// Plenty for real files (iPhone grids have ~50 tiles, each with a few properties)
// while bounding the work a hostile file can cause.
const MAX_BOXES = 10_000
// Real ftyp boxes list a handful of brands; a huge one (or size 0 = whole file)
// would turn the cheap brand check into a scan of the upload.
const MAX_FTYP_SIZE = 4096

const HEIC_BRANDS = new Set(['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis'])
const AVIF_BRANDS = new Set(['avif', 'avis'])
const GENERIC_BRANDS = new Set(['mif1', 'msf1'])

interface Box {
  type: string
  /** Offset of the first payload byte (after size/type/largesize). */
  start: number
  /** Offset one past the last byte of the box. */
  end: number
}

interface Budget { remaining: number }

function fourcc (bytes: Uint8Array, offset: number): string {
  return String.fromCharCode(bytes[offset] ?? 0, bytes[offset + 1] ?? 0, bytes[offset + 2] ?? 0, bytes[offset + 3] ?? 0)
}

/**
 * Reads the box header at `offset`. The box must lie entirely within `limit`
 * (the end of the enclosing box, or of the buffer at top level): a box claiming
 * more than its parent is treated as corrupt rather than clamped, so a truncated
 * file never yields a half-read structure.
 */
function readBox (view: DataView, bytes: Uint8Array, offset: number, limit: number): Box | undefined {
  if (limit - offset < 8) return undefined
  const size32 = view.getUint32(offset)
  const type = fourcc(bytes, offset + 4)
  let headerSize = 8
  let size: number
  if (size32 === 1) {
    if (limit - offset < 16) return undefined
    const high = view.getUint32(offset + 8)
    // Anything above 2^53 cannot be represented exactly, and could never fit anyway.
    if (high > 0x1fffff) return undefined
    size = high * 0x1_0000_0000 + view.getUint32(offset + 12)
    headerSize = 16
  } else if (size32 === 0) {
    size = limit - offset
  } else {
    size = size32
  }
  if (size < headerSize || size > limit - offset) return undefined
  return { type, start: offset + headerSize, end: offset + size }
}

/** Iterates the boxes in [start, end); stops at the first malformed box or when the budget runs out. */
function * childBoxes (view: DataView, bytes: Uint8Array, start: number, end: number, budget: Budget): Generator<Box> {
  let offset = start
  while (offset < end && budget.remaining > 0) {
    budget.remaining--
    const box = readBox(view, bytes, offset, end)
    if (box === undefined) return
    yield box
    // Always advances: a valid box is at least 8 bytes.
    offset = box.end
  }
}

function findChild (view: DataView, bytes: Uint8Array, start: number, end: number, type: string, budget: Budget): Box | undefined {
  for (const box of childBoxes(view, bytes, start, end, budget)) {
    if (box.type === type) return box
  }
  return undefined
}

function viewOf (input: Uint8Array): DataView {
  return new DataView(input.buffer, input.byteOffset, input.byteLength)
}

/** The `ftyp` box must start the file; returns it only when it is complete. */
function readFtyp (view: DataView, input: Uint8Array): Box | undefined {
  if (input.byteLength < 16 || fourcc(input, 4) !== 'ftyp') return undefined
  const box = readBox(view, input, 0, input.byteLength)
  // major_brand + minor_version are required.
  if (box === undefined || box.end - box.start < 8 || box.end > MAX_FTYP_SIZE) return undefined
  return box
}

function formatFromFtyp (input: Uint8Array, ftyp: Box): HeifFormat | undefined {
  const major = fourcc(input, ftyp.start)
  if (HEIC_BRANDS.has(major)) return 'heic'
  if (AVIF_BRANDS.has(major)) return 'avif'
  if (!GENERIC_BRANDS.has(major)) return undefined

  const compatible: string[] = []
  // A trailing partial brand (box size not a multiple of 4) is ignored.
  for (let offset = ftyp.start + 8; offset + 4 <= ftyp.end; offset += 4) {
    compatible.push(fourcc(input, offset))
  }
  if (compatible.some(brand => HEIC_BRANDS.has(brand))) return 'heic'
  if (compatible.some(brand => AVIF_BRANDS.has(brand))) return 'avif'
  return 'heif'
}

/** Cheap check used before anything else: ftyp at offset 4 with a HEIF-family brand. */
export function heifFormatFromBrands (input: Uint8Array): HeifFormat | undefined {
  const view = viewOf(input)
  const ftyp = readFtyp(view, input)
  return ftyp === undefined ? undefined : formatFromFtyp(input, ftyp)
}

function readPrimaryItemId (view: DataView, pitm: Box): number | undefined {
  if (pitm.end - pitm.start < 4) return undefined
  const version = view.getUint8(pitm.start)
  const at = pitm.start + 4
  if (version === 0) return at + 2 <= pitm.end ? view.getUint16(at) : undefined
  return at + 4 <= pitm.end ? view.getUint32(at) : undefined
}

/** Property indexes (1-based into ipco) associated with `itemId` in one ipma box. */
function readAssociations (view: DataView, ipma: Box, itemId: number): number[] {
  const found: number[] = []
  if (ipma.end - ipma.start < 8) return found
  const version = view.getUint8(ipma.start)
  const wideIndex = (view.getUint8(ipma.start + 3) & 1) === 1
  const idSize = version === 0 ? 2 : 4
  const assocSize = wideIndex ? 2 : 1
  const entryCount = view.getUint32(ipma.start + 4)
  let offset = ipma.start + 8
  // entry_count is attacker-controlled; the byte bounds end the loop long before it could matter.
  for (let entry = 0; entry < entryCount; entry++) {
    if (offset + idSize + 1 > ipma.end) break
    const id = idSize === 2 ? view.getUint16(offset) : view.getUint32(offset)
    offset += idSize
    const count = view.getUint8(offset)
    offset += 1
    if (offset + count * assocSize > ipma.end) break
    if (id === itemId) {
      for (let i = 0; i < count; i++) {
        const raw = assocSize === 2 ? view.getUint16(offset + i * 2) : view.getUint8(offset + i)
        // Top bit is the `essential` flag; index 0 means "no property".
        const index = assocSize === 2 ? raw & 0x7fff : raw & 0x7f
        if (index !== 0) found.push(index)
      }
    }
    offset += count * assocSize
  }
  return found
}

/** Reads the ftyp brands and the primary item's ispe. undefined when the bytes are not a HEIF-family file or have no size for the primary item. */
export function readHeifInfo (input: Uint8Array): HeifInfo | undefined {
  const view = viewOf(input)
  const ftyp = readFtyp(view, input)
  if (ftyp === undefined) return undefined
  const format = formatFromFtyp(input, ftyp)
  if (format === undefined) return undefined

  const budget: Budget = { remaining: MAX_BOXES }
  const meta = findChild(view, input, ftyp.end, input.byteLength, 'meta', budget)
  // meta is a FullBox: skip version/flags.
  if (meta === undefined || meta.end - meta.start < 4) return undefined

  let primaryId: number | undefined
  let iprp: Box | undefined
  for (const box of childBoxes(view, input, meta.start + 4, meta.end, budget)) {
    if (box.type === 'pitm' && primaryId === undefined) primaryId = readPrimaryItemId(view, box)
    else if (box.type === 'iprp' && iprp === undefined) iprp = box
  }
  if (primaryId === undefined || iprp === undefined) return undefined

  let properties: Box[] | undefined
  const associations: number[] = []
  for (const box of childBoxes(view, input, iprp.start, iprp.end, budget)) {
    if (box.type === 'ipco' && properties === undefined) {
      properties = [...childBoxes(view, input, box.start, box.end, budget)]
    } else if (box.type === 'ipma') {
      // Several ipma boxes (one per version/flags combination) are allowed.
      associations.push(...readAssociations(view, box, primaryId))
    }
  }
  if (properties === undefined) return undefined

  for (const index of associations) {
    const property = properties[index - 1]
    if (property?.type !== 'ispe') continue
    // FullBox header, then 32-bit width and height.
    if (property.end - property.start < 12) return undefined
    const width = view.getUint32(property.start + 4)
    const height = view.getUint32(property.start + 8)
    if (width === 0 || height === 0) return undefined
    return { format, width, height }
  }
  return undefined
}
