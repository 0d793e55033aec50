// A deterministic, seeded mutation engine for fuzzing POST /v1/metadata, and the parts of the fuzz harness shared
// by test/integration/fuzz.test.ts (1,000 cases) and scripts/fuzz.ts (the long run): the base images, the case plan, the HTTP
// call and the judgement of each answer.
//
// Every case is reproducible from (seed base, case index): the index picks the base image and the mutation kind,
// and a seed derived from both drives a PRNG of our own (mulberry32; never Math.random) that picks every parameter.
// A case's description names all of that, so a failure replays with `npm run fuzz -- --seed S --case I`.
//
// The mutations know the formats' structure: a small walker per container (JPEG segments, PNG chunks, RIFF chunks,
// GIF blocks, ISO-BMFF boxes, a few raw headers) finds the length fields to corrupt, the chunks to duplicate and the
// places where a new chunk can go; a TIFF walker finds every IFD of every TIFF in the file (the file itself, EXIF in
// a JPEG APP1, PNG eXIf, WebP EXIF, HEIF Exif items, CR3's CMT boxes, raw previews) for the IFD mutations. Nothing
// here trusts the bytes it walks: every read is bounds-checked and every loop capped.

import { crc32 } from 'node:zlib'
import { ExifTool } from 'exiftool-vendored'
import { CAMERA_RAW_FORMATS } from '../../src/metadata/camera-raw.ts'
import type { ImageFormat } from '../../src/metadata/formats.ts'
import { CAMERA_TAGS, ImageFactory, PICTURE_FORMATS } from './images.ts'
import { buildCameraRaw, buildJpegXl, RAW_CAMERAS } from './raw-builder.ts'
import { Rng } from './rng.ts'
import { be16, be32, le32 } from './bytes.ts'

/** The seed of case `index` under `seedBase`: a 32-bit mix (murmur3's finaliser), so neighbouring cases differ. */
export function caseSeed (seedBase: number, index: number): number {
  let x = (seedBase ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

// ---------------------------------------------------------------------------------------------------------------
// Mutation kinds and the structures they understand

export const MUTATION_KINDS = [
  'bit-flip', // 1..n bits anywhere, biased to the headers
  'byte-run', // runs of 0x00, 0xFF, 0x7F, 0x80 or random bytes written over the file
  'truncate', // cut at a random length, 0 and 1 byte included, often at a structure boundary
  'length-field', // a container's own length field set to an absurd value
  'ifd-count', // an IFD's entry count inflated (0xFFFF…) or zeroed
  'ifd-entry', // an IFD entry's type, count, value offset or tag made wrong
  'ifd-loop', // next-IFD or sub-IFD offsets pointing at the same or an earlier IFD
  'ifd-chain', // a long chain of IFDs appended (and sometimes closed into a loop)
  'chunk-duplicate', // a segment, chunk, box, block or IFD repeated
  'chunk-insert' // a new chunk inserted: foreign metadata, garbage, deep nesting, a flood of tiny ones
] as const
export type MutationKind = typeof MUTATION_KINDS[number]

/** The container each base image is, for the walkers. */
export type Structure = 'jpeg' | 'png' | 'riff' | 'gif' | 'bmff' | 'tiff' | 'raf' | 'mrw' | 'x3f' | 'crw' | 'jxl-codestream'

/** A length (or count) field: where it is, how wide, in which byte order. */
interface Field {
  at: number
  size: 1 | 2 | 4 | 8
  little: boolean
  label: string
}

/** What must be fixed when bytes are inserted inside a container: its length fields grow, PNG chunks get new CRCs. */
type Fixup = { kind: 'add', field: Field } | { kind: 'png-crc', chunk: number }

/** A chunk that can be duplicated: a copy goes right after it, with the enclosing containers' lengths fixed. */
interface Part {
  start: number
  end: number
  label: string
  enclosing: Fixup[]
}

type ChunkFamily = 'jpeg' | 'png' | 'riff' | 'gif' | 'bmff' | 'mrw'

/** A place where a new chunk of `family` can be inserted. */
interface InsertionPoint {
  at: number
  label: string
  family: ChunkFamily
  enclosing: Fixup[]
}

/** A TIFF inside the file; `grow`: how to insert bytes at its end (undefined: it cannot grow). */
interface TiffBlock {
  start: number
  end: number
  label: string
  grow?: Fixup[]
}

interface Layout {
  fields: Field[]
  parts: Part[]
  inserts: InsertionPoint[]
  tiffs: TiffBlock[]
}

export interface Mutation {
  bytes: Buffer
  /** The kind that was applied: the requested one, or a fallback when the file has nothing it applies to. */
  kind: MutationKind
  /** Parameters, short: e.g. `JPEG APP1 length @0x4: 4660 → 65535`. */
  detail: string
}

/** No mutation makes a file larger than this (floods and chains are capped to fit). */
const MAX_MUTATED_BYTES = 4 * 1024 * 1024

/**
 * Mutates `image` (a valid file of `structure`) with `kind`, every choice drawn from `seed`. When the file has
 * nothing the kind applies to (no TIFF for an IFD mutation, no length field…), a fallback kind is used and named.
 */
export function mutate (image: Buffer, structure: Structure, kind: MutationKind, seed: number): Mutation {
  const rng = new Rng(seed)
  const layout = describeLayout(image, structure)
  for (const candidate of [kind, ...FALLBACKS[kind]]) {
    const result = apply(candidate, image, layout, rng)
    if (result !== undefined && result.bytes.length <= MAX_MUTATED_BYTES) return { ...result, kind: candidate }
  }
  // byte-run always applies to a non-empty file; an empty one stays empty.
  return { bytes: Buffer.from(image), kind: 'truncate', detail: 'empty file left empty' }
}

const FALLBACKS: Record<MutationKind, MutationKind[]> = {
  'bit-flip': ['byte-run'],
  'byte-run': [],
  truncate: ['byte-run'],
  'length-field': ['byte-run'],
  'ifd-count': ['length-field', 'byte-run'],
  'ifd-entry': ['length-field', 'byte-run'],
  'ifd-loop': ['length-field', 'byte-run'],
  'ifd-chain': ['ifd-loop', 'length-field', 'byte-run'],
  'chunk-duplicate': ['byte-run'],
  'chunk-insert': ['byte-run']
}

function apply (kind: MutationKind, image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  switch (kind) {
    case 'bit-flip': return bitFlip(image, rng)
    case 'byte-run': return byteRun(image, rng)
    case 'truncate': return truncate(image, layout, rng)
    case 'length-field': return lengthField(image, layout, rng)
    case 'ifd-count': case 'ifd-entry': case 'ifd-loop': case 'ifd-chain': return tiffMutation(kind, image, layout, rng)
    case 'chunk-duplicate': return duplicate(image, layout, rng)
    case 'chunk-insert': return insertChunk(image, layout, rng)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Structure-blind mutations

function bitFlip (image: Buffer, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  if (image.length === 0) return undefined
  const bytes = Buffer.from(image)
  const count = rng.pick([1, 1, 1, 2, 3, 4, 8, 16, 32, 64])
  const positions: string[] = []
  for (let i = 0; i < count; i++) {
    // Half the flips land in the first KiB, where the headers and directories are.
    const at = rng.chance(0.5) ? rng.int(Math.min(1024, bytes.length)) : rng.int(bytes.length)
    const bit = rng.int(8)
    bytes[at] = (bytes[at] ?? 0) ^ (1 << bit)
    positions.push(`${hex(at)}.${bit}`)
  }
  return { bytes, detail: `${count} bit(s) at ${list(positions)}` }
}

function byteRun (image: Buffer, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  if (image.length === 0) return undefined
  const bytes = Buffer.from(image)
  const runs: string[] = []
  for (let run = rng.range(1, 3); run > 0; run--) {
    const length = Math.min(bytes.length, rng.pick([1, 2, 4, 8, rng.range(1, 64)]))
    const at = rng.chance(0.5) ? rng.int(Math.min(512, bytes.length)) : rng.int(bytes.length)
    const fill = rng.pick(['00', 'ff', '7f', '80', 'random'] as const)
    const data = fill === 'random' ? rng.bytes(length) : Buffer.alloc(length, Number.parseInt(fill, 16))
    data.copy(bytes, at, 0, Math.min(length, bytes.length - at))
    runs.push(`${length}×${fill}@${hex(at)}`)
  }
  return { bytes, detail: runs.join(', ') }
}

function truncate (image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  const boundaries = [
    ...layout.parts.flatMap((part) => [part.start, part.end]),
    ...layout.tiffs.map((tiff) => tiff.start),
    ...layout.fields.map((field) => field.at)
  ].filter((at) => at > 0 && at < image.length)
  const choice = rng.pick(['zero', 'one', 'tiny', 'random', 'last-byte', 'half', 'boundary', 'boundary'] as const)
  let length: number
  switch (choice) {
    case 'zero': length = 0; break
    case 'one': length = 1; break
    case 'tiny': length = rng.range(2, 32); break
    case 'random': length = rng.int(image.length); break
    case 'last-byte': length = image.length - 1; break
    case 'half': length = Math.floor(image.length / 2); break
    case 'boundary': length = boundaries.length === 0 ? rng.int(image.length) : rng.pick(boundaries) + rng.range(-2, 6); break
  }
  length = Math.max(0, Math.min(image.length - 1, length))
  return { bytes: Buffer.from(image.subarray(0, length)), detail: `${image.length} → ${length} bytes (${choice})` }
}

// ---------------------------------------------------------------------------------------------------------------
// Length fields

function lengthField (image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  let fields = layout.fields.filter((field) => field.at + field.size <= image.length)
  // Formats without container lengths (TIFF and the TIFF-based raws, a bare JPEG XL codestream): the TIFF's own
  // entry counts, else a word of the header.
  if (fields.length === 0) fields = tiffCountFields(image, layout)
  if (fields.length === 0) {
    if (image.length < 4) return undefined
    const size = rng.pick([2, 4] as const)
    fields = [{ at: rng.int(Math.min(64, image.length - size + 1)), size, little: rng.chance(0.5), label: 'header word' }]
  }
  const field = rng.pick(fields)
  const bytes = Buffer.from(image)
  const old = readField(bytes, field)
  const value = rng.pick(absurdValues(field, old, image.length - field.at))
  writeField(bytes, field, value)
  return { bytes, detail: `${field.label} @${hex(field.at)}: ${old} → ${readField(bytes, field)}` }
}

/** Values a length field should never hold for this file, and some it could almost hold. */
function absurdValues (field: Field, old: number, remaining: number): number[] {
  const max = field.size === 8 ? Number.MAX_SAFE_INTEGER : 2 ** (8 * field.size) - 1
  const values = [0, 1, old - 1, old + 1, old * 2, Math.floor(old / 2), remaining, remaining + 1, max, Math.floor(max / 2), max - 7]
  if (field.label.includes('box')) values.push(1, 7, 8) // 1: a 64-bit size follows; 7: smaller than the header
  // Wrapped into the field's range; the value it already holds would be no mutation.
  return [...new Set(values.map((value) => ((value % (max + 1)) + (max + 1)) % (max + 1)))].filter((value) => value !== old)
}

function readField (bytes: Buffer, field: Field): number {
  switch (field.size) {
    case 1: return bytes.readUInt8(field.at)
    case 2: return field.little ? bytes.readUInt16LE(field.at) : bytes.readUInt16BE(field.at)
    case 4: return field.little ? bytes.readUInt32LE(field.at) : bytes.readUInt32BE(field.at)
    case 8: return Number(field.little ? bytes.readBigUInt64LE(field.at) : bytes.readBigUInt64BE(field.at))
  }
}

function writeField (bytes: Buffer, field: Field, value: number): void {
  switch (field.size) {
    case 1: bytes.writeUInt8(value & 0xff, field.at); break
    case 2: field.little ? bytes.writeUInt16LE(value & 0xffff, field.at) : bytes.writeUInt16BE(value & 0xffff, field.at); break
    case 4: field.little ? bytes.writeUInt32LE(value >>> 0, field.at) : bytes.writeUInt32BE(value >>> 0, field.at); break
    case 8: field.little ? bytes.writeBigUInt64LE(BigInt(value), field.at) : bytes.writeBigUInt64BE(BigInt(value), field.at); break
  }
}

/** Inserts `data` at `at`, growing the enclosing length fields (all before `at`); undefined when one would overflow. */
function insertBytes (image: Buffer, at: number, data: Buffer, fixups: Fixup[]): Buffer | undefined {
  const out = Buffer.concat([image.subarray(0, at), data, image.subarray(at)])
  for (const fixup of fixups) {
    if (fixup.kind !== 'add') continue
    const { field } = fixup
    const grown = readField(out, field) + data.length
    if (field.at + field.size > at || grown >= 2 ** Math.min(53, 8 * field.size)) return undefined
    writeField(out, field, grown)
  }
  // After the lengths: a PNG chunk's CRC covers its type and data, found through its (new) length.
  for (const fixup of fixups) {
    if (fixup.kind !== 'png-crc') continue
    const length = out.readUInt32BE(fixup.chunk)
    const crcAt = fixup.chunk + 8 + length
    if (crcAt + 4 > out.length) return undefined
    out.writeUInt32BE(crc32(out.subarray(fixup.chunk + 4, crcAt)), crcAt)
  }
  return out
}

// ---------------------------------------------------------------------------------------------------------------
// Duplication and insertion

function duplicate (image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  if (image.length === 0) return undefined
  // A TIFF-only file has no chunks: its directories are what repeats.
  if (layout.parts.length === 0 || (layout.tiffs.length > 0 && rng.chance(0.25))) {
    const ifdCopy = duplicateIfd(image, layout, rng)
    if (ifdCopy !== undefined) return ifdCopy
  }
  if (layout.parts.length > 0) {
    const part = rng.pick(layout.parts)
    const chunk = image.subarray(part.start, part.end)
    // Mostly one copy; sometimes a crowd of a small one.
    const copies = chunk.length <= 4096 && rng.chance(0.2) ? rng.range(2, 200) : 1
    const data = Buffer.concat(Array.from({ length: copies }, () => chunk))
    const bytes = insertBytes(image, part.end, data, part.enclosing)
    if (bytes !== undefined) return { bytes, detail: `${part.label} (${chunk.length} bytes at ${hex(part.start)}) ×${copies + 1}` }
  }
  // Any byte range, copied elsewhere.
  const length = rng.range(1, Math.min(1024, image.length))
  const from = rng.int(image.length - length + 1)
  const to = rng.int(image.length + 1)
  return {
    bytes: Buffer.concat([image.subarray(0, to), image.subarray(from, from + length), image.subarray(to)]),
    detail: `bytes ${hex(from)}+${length} copied to ${hex(to)}`
  }
}

function insertChunk (image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  if (layout.inserts.length > 0) {
    const point = rng.pick(layout.inserts)
    const { data, what } = newChunk(point.family, rng)
    const bytes = insertBytes(image, point.at, data, point.enclosing)
    if (bytes !== undefined) return { bytes, detail: `${what} (${data.length} bytes) at ${point.label} ${hex(point.at)}` }
  }
  // No chunks to speak of: foreign bytes at any place.
  const at = rng.int(image.length + 1)
  const data = rng.chance(0.5) ? rng.bytes(rng.range(1, 512)) : image.subarray(0, Math.min(image.length, rng.range(4, 64)))
  return { bytes: Buffer.concat([image.subarray(0, at), data, image.subarray(at)]), detail: `${data.length} bytes inserted at ${hex(at)}` }
}

/** A new chunk of `family`, well-formed on the outside (lengths, CRCs) with hostile contents. */
function newChunk (family: ChunkFamily, rng: Rng): { data: Buffer, what: string } {
  switch (family) {
    case 'jpeg': {
      const segment = (marker: number, payload: Buffer): Buffer => Buffer.concat([Buffer.from([0xff, marker]), be16(payload.length + 2), payload])
      const choice = rng.pick(['app', 'com', 'exif', 'xmp', 'flood'] as const)
      switch (choice) {
        case 'app': {
          const n = rng.int(16)
          return { data: segment(0xe0 + n, rng.bytes(rng.range(0, 512))), what: `APP${n} of random bytes` }
        }
        case 'com': return { data: segment(0xfe, Buffer.from('fuzz '.repeat(rng.range(1, 200)), 'latin1')), what: 'COM segment' }
        case 'exif': return { data: segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), hostileTiff(rng)])), what: 'second APP1 Exif with a hostile TIFF' }
        case 'xmp': return { data: segment(0xe1, Buffer.concat([Buffer.from('http://ns.adobe.com/xap/1.0/\0<x:xmpmeta><rdf:RDF>', 'latin1'), rng.bytes(rng.range(0, 256))])), what: 'APP1 XMP, unterminated' }
        case 'flood': {
          const count = rng.range(500, 3000)
          return { data: Buffer.concat(Array.from({ length: count }, () => segment(0xef, Buffer.alloc(0)))), what: `${count} empty APP15 segments` }
        }
      }
      break
    }
    case 'png': {
      const chunk = (type: string, data: Buffer): Buffer => {
        const typed = Buffer.concat([Buffer.from(type, 'latin1'), data])
        return Buffer.concat([be32(data.length), typed, be32(crc32(typed))])
      }
      const choice = rng.pick(['ancillary', 'critical', 'text', 'exif', 'xmp', 'flood'] as const)
      switch (choice) {
        case 'ancillary': return { data: chunk('fuZz', rng.bytes(rng.range(0, 512))), what: 'unknown ancillary chunk fuZz' }
        case 'critical': return { data: chunk('FUZZ', rng.bytes(rng.range(0, 64))), what: 'unknown critical chunk FUZZ' }
        case 'text': return { data: chunk('tEXt', Buffer.from(`Comment\0${'x'.repeat(rng.range(0, 300))}`, 'latin1')), what: 'tEXt chunk' }
        case 'exif': return { data: chunk('eXIf', hostileTiff(rng)), what: 'second eXIf with a hostile TIFF' }
        case 'xmp': return { data: chunk('iTXt', Buffer.from(`XML:com.adobe.xmp\0\0\0\0\0<x:xmpmeta>${'<rdf:RDF>'.repeat(rng.range(1, 50))}`, 'latin1')), what: 'iTXt XMP, unterminated' }
        case 'flood': {
          const count = rng.range(500, 2000)
          const one = chunk('tEXt', Buffer.from('k\0v', 'latin1'))
          return { data: Buffer.concat(Array.from({ length: count }, () => one)), what: `${count} tiny tEXt chunks` }
        }
      }
      break
    }
    case 'riff': {
      const chunk = (fourcc: string, data: Buffer): Buffer => Buffer.concat([Buffer.from(fourcc, 'latin1'), le32(data.length), data, Buffer.alloc(data.length % 2)])
      const choice = rng.pick(['exif', 'xmp', 'iccp', 'unknown', 'flood'] as const)
      switch (choice) {
        case 'exif': return { data: chunk('EXIF', hostileTiff(rng)), what: 'second EXIF with a hostile TIFF' }
        case 'xmp': return { data: chunk('XMP ', Buffer.from(`<x:xmpmeta>${'<rdf:Description '.repeat(rng.range(1, 100))}`, 'latin1')), what: 'XMP chunk, unterminated' }
        case 'iccp': return { data: chunk('ICCP', rng.bytes(rng.range(0, 256))), what: 'ICCP of random bytes' }
        case 'unknown': return { data: chunk('FUZZ', rng.bytes(rng.range(0, 512))), what: 'unknown chunk FUZZ' }
        case 'flood': {
          const count = rng.range(500, 2000)
          return { data: Buffer.concat(Array.from({ length: count }, () => chunk('JUNK', Buffer.alloc(0)))), what: `${count} empty JUNK chunks` }
        }
      }
      break
    }
    case 'gif': {
      const subBlocks = (data: Buffer): Buffer => {
        const blocks: Buffer[] = []
        for (let at = 0; at < data.length; at += 255) {
          const piece = data.subarray(at, at + 255)
          blocks.push(Buffer.from([piece.length]), piece)
        }
        return Buffer.concat([...blocks, Buffer.from([0])])
      }
      const choice = rng.pick(['comment', 'xmp', 'unknown', 'flood'] as const)
      switch (choice) {
        case 'comment': return { data: Buffer.concat([Buffer.from([0x21, 0xfe]), subBlocks(rng.bytes(rng.range(0, 1000)))]), what: 'comment extension' }
        case 'xmp': return {
          data: Buffer.concat([Buffer.from([0x21, 0xff, 0x0b]), Buffer.from('XMP DataXMP', 'latin1'), subBlocks(Buffer.from(`<x:xmpmeta>${'<rdf:RDF>'.repeat(rng.range(1, 50))}`, 'latin1'))]),
          what: 'XMP application extension, unterminated XML'
        }
        case 'unknown': return { data: Buffer.concat([Buffer.from([0x21, rng.range(0x02, 0xf8)]), subBlocks(rng.bytes(rng.range(0, 300)))]), what: 'unknown extension' }
        case 'flood': {
          const count = rng.range(500, 3000)
          return { data: Buffer.concat(Array.from({ length: count }, () => Buffer.from([0x21, 0xfe, 0x00]))), what: `${count} empty comment extensions` }
        }
      }
      break
    }
    case 'bmff': {
      const box = (type: string, payload: Buffer): Buffer => Buffer.concat([be32(8 + payload.length), Buffer.from(type, 'latin1'), payload])
      const choice = rng.pick(['free', 'unknown', 'nested-meta', 'exif', 'undersized', 'ftyp'] as const)
      switch (choice) {
        case 'free': return { data: box('free', rng.bytes(rng.range(0, 512))), what: 'free box' }
        case 'unknown': return { data: box('fuzz', rng.bytes(rng.range(0, 512))), what: 'unknown box fuzz' }
        case 'nested-meta': {
          // meta (a FullBox) inside meta inside meta…: recursion depth for any box walker.
          const depth = rng.range(16, 600)
          let inner: Buffer = Buffer.alloc(0)
          for (let level = 0; level < depth; level++) inner = box('meta', Buffer.concat([Buffer.alloc(4), inner]))
          return { data: inner, what: `meta boxes nested ${depth} deep` }
        }
        case 'exif': return { data: box('Exif', Buffer.concat([be32(6), Buffer.from('Exif\0\0', 'latin1'), hostileTiff(rng)])), what: 'Exif box with a hostile TIFF' }
        case 'undersized': return { data: Buffer.concat([be32(rng.range(2, 7)), Buffer.from('free', 'latin1')]), what: 'box smaller than its own header' }
        case 'ftyp': return { data: box('ftyp', Buffer.from('heicmif1', 'latin1')), what: 'second ftyp' }
      }
      break
    }
    case 'mrw': {
      const block = (name: string, data: Buffer): Buffer => Buffer.concat([Buffer.from(`\0${name}`, 'latin1'), be32(data.length), data])
      return rng.chance(0.5)
        ? { data: block('TTW', hostileTiff(rng)), what: 'second TTW block with a hostile TIFF' }
        : { data: block('FZZ', rng.bytes(rng.range(0, 256))), what: 'unknown block FZZ' }
    }
  }
  throw new Error(`no chunk maker for ${family}`)
}

/** A small TIFF whose IFD0 is already wrong in one of the ways the IFD mutations make existing ones wrong. */
function hostileTiff (rng: Rng): Buffer {
  const choice = rng.pick(['huge-count', 'self-loop', 'out-of-range', 'bad-type'] as const)
  const tiff = Buffer.alloc(8 + 2 + 12 + 4)
  tiff.write('II*\0', 0, 'latin1')
  tiff.writeUInt32LE(8, 4)
  tiff.writeUInt16LE(choice === 'huge-count' ? 0xffff : 1, 8)
  tiff.writeUInt16LE(0x010f, 10) // Make
  tiff.writeUInt16LE(choice === 'bad-type' ? 0xfff0 : 2, 12)
  tiff.writeUInt32LE(choice === 'out-of-range' ? 0x7ffffff0 : 4, 14)
  tiff.write('FZ\0\0', 18, 'latin1')
  tiff.writeUInt32LE(choice === 'self-loop' ? 8 : 0, 22)
  return tiff
}

// ---------------------------------------------------------------------------------------------------------------
// TIFF: the walker and the IFD mutations

interface IfdEntry {
  at: number
  tag: number
  type: number
  count: number
  /** Where the value (or its offset) is, and that 32-bit word. */
  valueAt: number
  value: number
}

interface Ifd {
  /** Absolute position of the entry count; `offset` is the same, relative to the TIFF header. */
  at: number
  offset: number
  label: string
  count: number
  entries: IfdEntry[]
  /** Absolute position of the next-IFD offset, when it lies within the TIFF. */
  nextAt?: number
  next: number
}

interface Tiff {
  block: TiffBlock
  little: boolean
  ifds: Ifd[]
  /** IFD0, IFD1…: the chain through next-IFD offsets (sub-IFDs are in `ifds` only). */
  chain: Ifd[]
}

// Tags whose value is the offset of another IFD: ExifIFD, GPS, Interoperability, SubIFDs.
const SUB_IFD_TAGS: Record<number, string> = { 0x8769: 'ExifIFD', 0x8825: 'GPS', 0xa005: 'InteropIFD', 0x014a: 'SubIFD' }
// Bytes per value of each TIFF type (1 BYTE … 13 IFD); 0 for an unknown type.
const TYPE_SIZES = [0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4]
// Real files have a few dozen entries per IFD and a handful of IFDs; the caps bound the walk of a hostile one.
const MAX_IFDS = 32
const MAX_WALKED_ENTRIES = 1000

function walkTiff (image: Buffer, block: TiffBlock): Tiff | undefined {
  const { start } = block
  const end = Math.min(block.end, image.length)
  if (start + 8 > end) return undefined
  const order = image.toString('latin1', start, start + 2)
  if (order !== 'II' && order !== 'MM') return undefined
  const little = order === 'II'
  const u16 = (at: number): number | undefined => at >= 0 && at + 2 <= end ? (little ? image.readUInt16LE(at) : image.readUInt16BE(at)) : undefined
  const u32 = (at: number): number | undefined => at >= 0 && at + 4 <= end ? (little ? image.readUInt32LE(at) : image.readUInt32BE(at)) : undefined
  const tiff: Tiff = { block, little, ifds: [], chain: [] }
  const seen = new Set<number>()
  const queue: Array<{ offset: number, label: string, chain: boolean }> = [{ offset: u32(start + 4) ?? 0, label: 'IFD0', chain: true }]
  let chainIndex = 0
  while (queue.length > 0 && tiff.ifds.length < MAX_IFDS) {
    const { offset, label, chain } = queue.shift()!
    const at = start + offset
    const count = u16(at)
    if (offset < 8 || seen.has(offset) || count === undefined) continue
    seen.add(offset)
    const ifd: Ifd = { at, offset, label, count, entries: [], next: 0 }
    for (let i = 0; i < Math.min(count, MAX_WALKED_ENTRIES); i++) {
      const entryAt = at + 2 + 12 * i
      const tag = u16(entryAt)
      const type = u16(entryAt + 2)
      const valueCount = u32(entryAt + 4)
      const value = u32(entryAt + 8)
      if (tag === undefined || type === undefined || valueCount === undefined || value === undefined) break
      ifd.entries.push({ at: entryAt, tag, type, count: valueCount, valueAt: entryAt + 8, value })
      const subLabel = SUB_IFD_TAGS[tag]
      if (subLabel !== undefined && valueCount === 1) queue.push({ offset: value, label: `${label}/${subLabel}`, chain: false })
    }
    const nextAt = at + 2 + 12 * count
    const next = u32(nextAt)
    if (next !== undefined && ifd.entries.length === count) {
      ifd.nextAt = nextAt
      ifd.next = next
      if (next !== 0 && chain) queue.push({ offset: next, label: `IFD${++chainIndex}`, chain: true })
    }
    tiff.ifds.push(ifd)
    if (chain) tiff.chain.push(ifd)
  }
  return tiff.ifds.length > 0 ? tiff : undefined
}

function tiffsOf (image: Buffer, layout: Layout): Tiff[] {
  return layout.tiffs.map((block) => walkTiff(image, block)).filter((tiff): tiff is Tiff => tiff !== undefined)
}

/** The count fields of the TIFFs' entries: the length fields of a TIFF. */
function tiffCountFields (image: Buffer, layout: Layout): Field[] {
  return tiffsOf(image, layout).flatMap((tiff) => tiff.ifds.flatMap((ifd) => ifd.entries.map((entry) => ({
    at: entry.at + 4,
    size: 4 as const,
    little: tiff.little,
    label: `${tiff.block.label} ${ifd.label} tag ${hex(entry.tag)} count`
  }))))
}

function tiffMutation (kind: 'ifd-count' | 'ifd-entry' | 'ifd-loop' | 'ifd-chain', image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  const tiffs = tiffsOf(image, layout)
  if (tiffs.length === 0) return undefined
  const tiff = rng.pick(tiffs)
  const bytes = Buffer.from(image)
  const w16 = (at: number, value: number): void => { tiff.little ? bytes.writeUInt16LE(value & 0xffff, at) : bytes.writeUInt16BE(value & 0xffff, at) }
  const w32 = (at: number, value: number): void => { tiff.little ? bytes.writeUInt32LE(value >>> 0, at) : bytes.writeUInt32BE(value >>> 0, at) }
  const where = (ifd: Ifd): string => `${tiff.block.label} ${ifd.label}@${hex(ifd.offset)}`
  const tiffLength = tiff.block.end - tiff.block.start

  switch (kind) {
    case 'ifd-count': {
      const ifd = rng.pick(tiff.ifds)
      const value = rng.pick([0xffff, 0xffff, 0x8000, 0x7fff, 0x1000, ifd.count + 1, ifd.count + rng.range(2, 64), 0, 1])
      w16(ifd.at, value)
      return { bytes, detail: `${where(ifd)} entry count ${ifd.count} → ${value & 0xffff}` }
    }
    case 'ifd-entry': {
      const ifd = rng.pick(tiff.ifds.filter((candidate) => candidate.entries.length > 0))
      if (ifd === undefined) return undefined
      const entry = rng.pick(ifd.entries)
      const name = `${where(ifd)} tag ${hex(entry.tag)}`
      // An offset only means something for a value that does not fit in the entry, or a sub-IFD pointer.
      const pointsOut = (TYPE_SIZES[entry.type] ?? 0) * entry.count > 4 || SUB_IFD_TAGS[entry.tag] !== undefined
      const field = rng.pick(pointsOut ? ['type', 'count', 'offset', 'offset', 'tag'] as const : ['type', 'count', 'count', 'tag'] as const)
      switch (field) {
        case 'type': {
          const value = rng.pick([0, 14, 0xffff, 13, rng.range(1, 12), rng.int(0x10000)])
          w16(entry.at + 2, value)
          return { bytes, detail: `${name} type ${entry.type} → ${value}` }
        }
        case 'count': {
          const value = rng.pick([0xffffffff, 0x7fffffff, 0x40000000, 0x10000000, 0x00100000, entry.count + 1, entry.count * 4096, 0])
          w32(entry.at + 4, value)
          return { bytes, detail: `${name} count ${entry.count} → ${value >>> 0}` }
        }
        case 'offset': {
          const value = rng.pick([0xffffffff, 0x80000000, tiffLength, tiffLength + 1, tiffLength - 1, tiffLength - 2, 0, 1, 3, entry.at - tiff.block.start, ifd.offset])
          w32(entry.valueAt, value)
          return { bytes, detail: `${name} value offset ${entry.value} → ${value >>> 0} (TIFF is ${tiffLength} bytes)` }
        }
        case 'tag': {
          // A duplicate of another entry's tag, or 0xFFFF: entries out of order.
          const value = ifd.entries.length > 1 && rng.chance(0.5) ? rng.pick(ifd.entries).tag : 0xffff
          w16(entry.at, value)
          return { bytes, detail: `${name} tag → ${hex(value)}` }
        }
      }
      break
    }
    case 'ifd-loop': {
      const loops: Array<{ at: number, to: number, what: string }> = []
      const ifd0 = tiff.chain[0]
      for (const ifd of tiff.ifds) {
        if (ifd.nextAt === undefined) continue
        loops.push({ at: ifd.nextAt, to: ifd.offset, what: `${where(ifd)} next → itself` })
        if (ifd0 !== undefined && ifd !== ifd0) loops.push({ at: ifd.nextAt, to: ifd0.offset, what: `${where(ifd)} next → IFD0@${hex(ifd0.offset)}` })
        const index = tiff.chain.indexOf(ifd)
        if (index > 1) {
          const earlier = tiff.chain[rng.int(index)]!
          loops.push({ at: ifd.nextAt, to: earlier.offset, what: `${where(ifd)} next → earlier ${earlier.label}@${hex(earlier.offset)}` })
        }
      }
      for (const ifd of tiff.ifds) {
        for (const entry of ifd.entries) {
          const sub = SUB_IFD_TAGS[entry.tag]
          if (sub === undefined) continue
          loops.push({ at: entry.valueAt, to: ifd.offset, what: `${where(ifd)} ${sub} pointer → its own IFD` })
          if (ifd0 !== undefined) loops.push({ at: entry.valueAt, to: ifd0.offset, what: `${where(ifd)} ${sub} pointer → IFD0@${hex(ifd0.offset)}` })
        }
      }
      if (loops.length === 0) return undefined
      const loop = rng.pick(loops)
      w32(loop.at, loop.to)
      // Sometimes two at once: a loop through a sub-IFD and one through the chain.
      if (loops.length > 1 && rng.chance(0.25)) {
        const second = rng.pick(loops.filter((other) => other.at !== loop.at))
        w32(second.at, second.to)
        return { bytes, detail: `${loop.what}; ${second.what}` }
      }
      return { bytes, detail: loop.what }
    }
    case 'ifd-chain': return ifdChain(bytes, tiff, rng)
  }
}

/** Appends a chain of N one-entry IFDs to the TIFF, linked from its last IFD; sometimes the chain loops. */
function ifdChain (bytes: Buffer, tiff: Tiff, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  const { block, little } = tiff
  const last = tiff.chain.at(-1)
  if (block.grow === undefined || last?.nextAt === undefined) return undefined
  const ending = rng.pick(['end', 'loop-to-chain', 'loop-to-ifd0'] as const)
  for (let length = rng.pick([16, 64, 256, 1024, 4096]); length >= 2; length = Math.floor(length / 4)) {
    // IFDs start on a word boundary; the padding is kept even so that RIFF chunk padding stays right.
    const relative = block.end - block.start
    const pad = relative % 2
    const first = relative + pad
    const chain = Buffer.alloc(pad + 18 * length + pad)
    const w16 = (at: number, value: number): void => { little ? chain.writeUInt16LE(value, at) : chain.writeUInt16BE(value, at) }
    const w32 = (at: number, value: number): void => { little ? chain.writeUInt32LE(value >>> 0, at) : chain.writeUInt32BE(value >>> 0, at) }
    for (let i = 0; i < length; i++) {
      const at = pad + 18 * i
      w16(at, 1) // one entry: NewSubfileType = 1 (a reduced image), harmless on its own
      w16(at + 2, 0x00fe)
      w16(at + 4, 4)
      w32(at + 6, 1)
      w32(at + 10, 1)
      const next = i < length - 1 ? first + 18 * (i + 1) : ending === 'end' ? 0 : ending === 'loop-to-chain' ? first : (tiff.chain[0]?.offset ?? 0)
      w32(at + 14, next)
    }
    const linked = Buffer.from(bytes)
    little ? linked.writeUInt32LE(first, last.nextAt) : linked.writeUInt32BE(first, last.nextAt)
    const out = insertBytes(linked, block.end, chain, block.grow)
    if (out !== undefined) return { bytes: out, detail: `${block.label}: ${length} IFDs chained after ${last.label}@${hex(last.offset)}, ${ending}` }
  }
  return undefined
}

/** Copies an IFD (its entries still pointing at the same data) to the TIFF's end, linked as the chain's last IFD. */
function duplicateIfd (image: Buffer, layout: Layout, rng: Rng): Omit<Mutation, 'kind'> | undefined {
  const tiffs = tiffsOf(image, layout).filter((tiff) => tiff.block.grow !== undefined && tiff.chain.at(-1)?.nextAt !== undefined)
  if (tiffs.length === 0) return undefined
  const tiff = rng.pick(tiffs)
  const ifd = rng.pick(tiff.ifds.filter((candidate) => candidate.nextAt !== undefined))
  const last = tiff.chain.at(-1)!
  if (ifd === undefined || last.nextAt === undefined || ifd.nextAt === undefined) return undefined
  const relative = tiff.block.end - tiff.block.start
  const pad = relative % 2
  const copy = Buffer.concat([Buffer.alloc(pad), image.subarray(ifd.at, ifd.nextAt), Buffer.alloc(4), Buffer.alloc(pad)])
  const linked = Buffer.from(image)
  tiff.little ? linked.writeUInt32LE(relative + pad, last.nextAt) : linked.writeUInt32BE(relative + pad, last.nextAt)
  const bytes = insertBytes(linked, tiff.block.end, copy, tiff.block.grow!)
  if (bytes === undefined) return undefined
  return { bytes, detail: `${tiff.block.label} ${ifd.label}@${hex(ifd.offset)} (${ifd.count} entries) copied after ${last.label}` }
}

// ---------------------------------------------------------------------------------------------------------------
// The walkers: where the length fields, chunks and TIFFs of each container are

function describeLayout (image: Buffer, structure: Structure): Layout {
  const layout: Layout = { fields: [], parts: [], inserts: [], tiffs: [] }
  switch (structure) {
    case 'jpeg': walkJpeg(image, 0, true, layout); break
    case 'png': walkPng(image, layout); break
    case 'riff': walkRiff(image, layout); break
    case 'gif': walkGif(image, layout); break
    case 'bmff': walkBoxes(image, 0, image.length, [], layout, 0, ''); break
    // TIFF and the TIFF-based raws (DNG, NEF, CR2, ORF, RW2…): the whole file is the TIFF, and can grow at its end.
    case 'tiff': layout.tiffs.push({ start: 0, end: image.length, label: 'TIFF', grow: [] }); break
    case 'raf': walkRaf(image, layout); break
    case 'mrw': walkMrw(image, layout); break
    case 'x3f': walkX3f(image, layout); break
    case 'crw': walkCrw(image, layout); break
    case 'jxl-codestream': break // a bit-packed header: no byte-aligned lengths to walk
  }
  // JPEG previews inside raws and TIFFs, and TIFFs the walkers did not reach (HEIF Exif items, raw previews' EXIF):
  // their lengths can be corrupted in place, though they cannot grow.
  for (const start of findJpegs(image)) walkJpeg(image, start, false, layout)
  for (const start of findTiffs(image, layout)) layout.tiffs.push({ start, end: image.length, label: `TIFF@${hex(start)}` })
  return layout
}

const STANDALONE_JPEG_MARKERS = new Set([0x01, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8])

/** JPEG: SOI, then segments (0xFF, marker, 16-bit length counting itself) up to SOS, where entropy-coded data starts. */
function walkJpeg (image: Buffer, start: number, topLevel: boolean, layout: Layout): void {
  const prefix = topLevel ? 'JPEG' : `JPEG@${hex(start)}`
  let at = start + 2
  for (let segments = 0; at + 4 <= image.length && segments < 256; segments++) {
    if (image[at] !== 0xff) return
    const marker = image[at + 1] ?? 0
    if (marker === 0xff) { at++; continue } // fill byte
    if (STANDALONE_JPEG_MARKERS.has(marker)) { at += 2; continue }
    if (marker === 0xd9) return // EOI
    if (topLevel) layout.inserts.push({ at, label: `before ${markerName(marker)}`, family: 'jpeg', enclosing: [] })
    const lengthField: Field = { at: at + 2, size: 2, little: false, label: `${prefix} ${markerName(marker)} length` }
    const end = at + 2 + image.readUInt16BE(at + 2)
    layout.fields.push(lengthField)
    if (end > image.length) return
    if (topLevel) layout.parts.push({ start: at, end, label: `${prefix} ${markerName(marker)} segment`, enclosing: [] })
    if (marker === 0xe1 && image.toString('latin1', at + 4, at + 10) === 'Exif\0\0') {
      layout.tiffs.push({ start: at + 10, end, label: `${prefix} APP1 Exif`, ...(topLevel ? { grow: [{ kind: 'add', field: lengthField }] } : {}) })
    }
    if (marker === 0xda) return // SOS
    at = end
  }
}

function markerName (marker: number): string {
  if (marker >= 0xe0 && marker <= 0xef) return `APP${marker - 0xe0}`
  const names: Record<number, string> = { 0xc0: 'SOF0', 0xc2: 'SOF2', 0xc4: 'DHT', 0xdb: 'DQT', 0xda: 'SOS', 0xdd: 'DRI', 0xfe: 'COM' }
  return names[marker] ?? `marker ${hex(marker)}`
}

/** PNG: the signature, then chunks (32-bit length, type, data, CRC); EXIF is the eXIf chunk, a bare TIFF. */
function walkPng (image: Buffer, layout: Layout): void {
  let at = 8
  for (let chunks = 0; at + 12 <= image.length && chunks < 1024; chunks++) {
    const type = image.toString('latin1', at + 4, at + 8)
    const lengthField: Field = { at, size: 4, little: false, label: `PNG ${type} length` }
    const end = at + 12 + image.readUInt32BE(at)
    layout.fields.push(lengthField)
    layout.inserts.push({ at, label: `before ${type}`, family: 'png', enclosing: [] })
    if (end > image.length) return
    layout.parts.push({ start: at, end, label: `PNG ${type} chunk`, enclosing: [] })
    if (type === 'eXIf') {
      layout.tiffs.push({ start: at + 8, end: end - 4, label: 'PNG eXIf', grow: [{ kind: 'add', field: lengthField }, { kind: 'png-crc', chunk: at }] })
    }
    at = end
  }
}

/** WebP: RIFF (its size, 'WEBP'), then chunks (fourcc, 32-bit little-endian size, data padded to even); EXIF is a TIFF. */
function walkRiff (image: Buffer, layout: Layout): void {
  if (image.length < 12) return
  const riffSize: Field = { at: 4, size: 4, little: true, label: 'RIFF size' }
  layout.fields.push(riffSize)
  const enclosing: Fixup[] = [{ kind: 'add', field: riffSize }]
  let at = 12
  for (let chunks = 0; at + 8 <= image.length && chunks < 1024; chunks++) {
    const fourcc = image.toString('latin1', at, at + 4)
    const sizeField: Field = { at: at + 4, size: 4, little: true, label: `RIFF ${fourcc} size` }
    const size = image.readUInt32LE(at + 4)
    layout.fields.push(sizeField)
    layout.inserts.push({ at, label: `before ${fourcc}`, family: 'riff', enclosing })
    const end = at + 8 + size + (size % 2)
    if (at + 8 + size > image.length) return
    layout.parts.push({ start: at, end: Math.min(end, image.length), label: `RIFF ${fourcc} chunk`, enclosing })
    if (fourcc === 'EXIF') {
      const skip = image.toString('latin1', at + 8, at + 14) === 'Exif\0\0' ? 6 : 0
      layout.tiffs.push({ start: at + 8 + skip, end: at + 8 + size, label: 'WebP EXIF', grow: [{ kind: 'add', field: sizeField }, ...enclosing] })
    }
    at = end
  }
  layout.inserts.push({ at: Math.min(at, image.length), label: 'end', family: 'riff', enclosing })
}

/** GIF: header, screen descriptor, colour table, then extension and image blocks, their data in sized sub-blocks. */
function walkGif (image: Buffer, layout: Layout): void {
  if (image.length < 13) return
  const packed = image[10] ?? 0
  let at = 13 + ((packed & 0x80) !== 0 ? 3 * 2 ** ((packed & 7) + 1) : 0)
  for (let blocks = 0; at < image.length && blocks < 1024; blocks++) {
    layout.inserts.push({ at, label: `GIF block ${blocks}`, family: 'gif', enclosing: [] })
    const introducer = image[at]
    let data: number
    let label: string
    if (introducer === 0x21) {
      label = `GIF extension ${hex(image[at + 1] ?? 0)}`
      data = at + 2
    } else if (introducer === 0x2c) {
      label = 'GIF image'
      const local = image[at + 9] ?? 0
      data = at + 10 + ((local & 0x80) !== 0 ? 3 * 2 ** ((local & 7) + 1) : 0) + 1 // + LZW minimum code size
    } else {
      return // the trailer (0x3B), or not a block
    }
    // Sub-blocks: a size byte and that many bytes, until a size of 0. Their sizes are the GIF's length fields.
    let subBlocks = 0
    while (data < image.length) {
      const size = image[data] ?? 0
      if (subBlocks++ < 16) layout.fields.push({ at: data, size: 1, little: false, label: `${label} sub-block size` })
      data += 1 + size
      if (size === 0) break
    }
    if (data > image.length) return
    layout.parts.push({ start: at, end: data, label, enclosing: [] })
    at = data
  }
}

// Boxes whose payload is more boxes (`skip`: bytes before the first child: FullBox version and flags, entry counts).
const CONTAINER_BOXES: Record<string, number> = Object.fromEntries([
  ...['moov', 'trak', 'mdia', 'minf', 'stbl', 'dinf', 'edts', 'udta', 'iprp', 'ipco', 'grpl', 'jumb', 'moof', 'traf', 'mvex'].map((type) => [type, 0]),
  ['meta', 4], ['iref', 4], ['dref', 8], ['stsd', 8]
])
// Canon's metadata box in CR3: after its UUID, the CMT1…CMT4 boxes, each a whole TIFF.
const CANON_UUID = Buffer.from('85c0b687820f11e08111f4ce462b6a48', 'hex')

/** ISO BMFF (HEIF, AVIF, CR3, the JPEG XL container): boxes of 32-bit size (1: 64-bit size follows; 0: to the end). */
function walkBoxes (image: Buffer, start: number, end: number, enclosing: Fixup[], layout: Layout, depth: number, path: string): void {
  let at = start
  for (let boxes = 0; at + 8 <= end && boxes < 256; boxes++) {
    layout.inserts.push({ at, label: `${path || 'top'} box ${boxes}`, family: 'bmff', enclosing })
    const size32 = image.readUInt32BE(at)
    const type = image.toString('latin1', at + 4, at + 8)
    const name = `${path}/${type}`
    let header = 8
    let size = size32
    let sizeField: Field = { at, size: 4, little: false, label: `box ${name} size` }
    if (size32 === 1) {
      if (at + 16 > end) return
      header = 16
      size = Number(image.readBigUInt64BE(at + 8))
      sizeField = { at: at + 8, size: 8, little: false, label: `box ${name} largesize` }
    } else if (size32 === 0) {
      size = end - at
    }
    layout.fields.push(sizeField)
    if (size < header || at + size > end) return
    const boxEnd = at + size
    layout.parts.push({ start: at, end: boxEnd, label: `box ${name}`, enclosing })
    const own: Fixup[] = size32 === 0 ? enclosing : [...enclosing, { kind: 'add', field: sizeField }]
    const payload = at + header
    let children: number | undefined = CONTAINER_BOXES[type] === undefined ? undefined : payload + CONTAINER_BOXES[type]
    // QuickTime's meta has no FullBox header: its first child's type (hdlr) comes 4 bytes in, not 8.
    if (type === 'meta' && image.toString('latin1', payload + 4, payload + 8) === 'hdlr') children = payload
    if (type === 'uuid' && image.subarray(payload, payload + 16).equals(CANON_UUID)) children = payload + 16
    if (type === 'iinf' && payload + 6 <= boxEnd) {
      // FullBox, then an entry count of 16 bits (version 0) or 32.
      const wide = image[payload] !== 0
      layout.fields.push({ at: payload + 4, size: wide ? 4 : 2, little: false, label: `box ${name} entry count` })
      children = payload + 4 + (wide ? 4 : 2)
    }
    if (type === 'ipma' && payload + 8 <= boxEnd) layout.fields.push({ at: payload + 4, size: 4, little: false, label: `box ${name} entry count` })
    if (type === 'iloc' && payload + 8 <= boxEnd) {
      // FullBox, two bytes of field sizes, then the item count (16 bits before version 2).
      const version = image[payload] ?? 0
      layout.fields.push({ at: payload + 6, size: version < 2 ? 2 : 4, little: false, label: `box ${name} item count` })
    }
    if (/^CMT[1-4]$/.test(type)) layout.tiffs.push({ start: payload, end: boxEnd, label: `CR3 ${type}` })
    if (type === 'Exif' && payload + 4 <= boxEnd) {
      // JPEG XL's Exif box: the offset of the TIFF header, then the TIFF.
      layout.tiffs.push({ start: payload + 4 + image.readUInt32BE(payload), end: boxEnd, label: 'JXL Exif box' })
    }
    if (children !== undefined && depth < 8 && children <= boxEnd) walkBoxes(image, children, boxEnd, own, layout, depth + 1, name)
    at = boxEnd
  }
  if (at <= end) layout.inserts.push({ at, label: `${path || 'top'} end`, family: 'bmff', enclosing })
}

/** RAF: a big-endian header of offset/length pairs (JPEG preview, RAF directory, sensor data). */
function walkRaf (image: Buffer, layout: Layout): void {
  const names = ['JPEG offset', 'JPEG length', 'directory offset', 'directory length', 'sensor offset', 'sensor length']
  names.forEach((name, i) => {
    if (0x54 + 4 * i + 4 <= image.length) layout.fields.push({ at: 0x54 + 4 * i, size: 4, little: false, label: `RAF ${name}` })
  })
  if (image.length < 0x60) return
  // The RAF directory: an entry count, then (tag, size, data) entries.
  const directory = image.readUInt32BE(0x5c)
  if (directory + 4 > image.length) return
  layout.fields.push({ at: directory, size: 4, little: false, label: 'RAF directory entry count' })
  let at = directory + 4
  for (let entries = image.readUInt32BE(directory); entries > 0 && at + 4 <= image.length && entries < 256; entries--) {
    layout.fields.push({ at: at + 2, size: 2, little: false, label: `RAF entry ${hex(image.readUInt16BE(at))} size` })
    at += 4 + image.readUInt16BE(at + 2)
  }
}

/** MRW: '\0MRM' and the length of the blocks that follow, each a name, a length and data; TTW holds a TIFF. */
function walkMrw (image: Buffer, layout: Layout): void {
  if (image.length < 8) return
  const total: Field = { at: 4, size: 4, little: false, label: 'MRW blocks length' }
  layout.fields.push(total)
  const enclosing: Fixup[] = [{ kind: 'add', field: total }]
  const end = Math.min(image.length, 8 + image.readUInt32BE(4))
  let at = 8
  for (let blocks = 0; at + 8 <= end && blocks < 64; blocks++) {
    const name = image.toString('latin1', at + 1, at + 4)
    const lengthField: Field = { at: at + 4, size: 4, little: false, label: `MRW ${name} length` }
    layout.fields.push(lengthField)
    layout.inserts.push({ at, label: `before ${name}`, family: 'mrw', enclosing })
    const blockEnd = at + 8 + image.readUInt32BE(at + 4)
    if (blockEnd > end) return
    layout.parts.push({ start: at, end: blockEnd, label: `MRW ${name} block`, enclosing })
    if (name === 'TTW') layout.tiffs.push({ start: at + 8, end: blockEnd, label: 'MRW TTW', grow: [lengthField, total].map((field) => ({ kind: 'add', field })) })
    at = blockEnd
  }
}

/** X3F: sections, then a 'SECd' directory (offset, length, type per section) whose offset is in the last 4 bytes. */
function walkX3f (image: Buffer, layout: Layout): void {
  if (image.length < 8) return
  layout.fields.push({ at: image.length - 4, size: 4, little: true, label: 'X3F directory offset' })
  const directory = image.readUInt32LE(image.length - 4)
  if (directory + 12 > image.length || image.toString('latin1', directory, directory + 4) !== 'SECd') return
  layout.fields.push({ at: directory + 8, size: 4, little: true, label: 'X3F section count' })
  const count = Math.min(64, image.readUInt32LE(directory + 8))
  for (let i = 0; i < count && directory + 24 + 12 * i <= image.length; i++) {
    const entry = directory + 12 + 12 * i
    const type = image.toString('latin1', entry + 8, entry + 12)
    layout.fields.push({ at: entry, size: 4, little: true, label: `X3F ${type} offset` }, { at: entry + 4, size: 4, little: true, label: `X3F ${type} length` })
  }
}

/** CRW (CIFF): heaps of records (tag, size, offset within the heap); the last 4 bytes of a heap locate its table. */
function walkCrw (image: Buffer, layout: Layout): void {
  if (image.length < 26) return
  layout.fields.push({ at: 2, size: 4, little: true, label: 'CRW header length' })
  walkCiffHeap(image, image.readUInt32LE(2), image.length, layout, 0, 'root')
}

function walkCiffHeap (image: Buffer, start: number, end: number, layout: Layout, depth: number, name: string): void {
  if (end - start < 6 || end > image.length || depth > 4) return
  layout.fields.push({ at: end - 4, size: 4, little: true, label: `CRW ${name} heap table offset` })
  const table = start + image.readUInt32LE(end - 4)
  if (table + 2 > end) return
  layout.fields.push({ at: table, size: 2, little: true, label: `CRW ${name} heap record count` })
  const count = Math.min(64, image.readUInt16LE(table))
  for (let i = 0; i < count && table + 12 + 10 * i <= end; i++) {
    const record = table + 2 + 10 * i
    const tag = image.readUInt16LE(record)
    layout.fields.push(
      { at: record + 2, size: 4, little: true, label: `CRW ${name} record ${hex(tag)} size` },
      { at: record + 6, size: 4, little: true, label: `CRW ${name} record ${hex(tag)} offset` }
    )
    // Records of types 0x28 and 0x30 (the tag's bits 11-13) are heaps themselves.
    const type = tag & 0x3800
    if (type === 0x2800 || type === 0x3000) {
      const childStart = start + image.readUInt32LE(record + 6)
      walkCiffHeap(image, childStart, childStart + image.readUInt32LE(record + 2), layout, depth + 1, hex(tag))
    }
  }
}

/** Starts of JPEG files inside this one (raw previews, thumbnails): SOI followed by a marker segment. */
function findJpegs (image: Buffer): number[] {
  const starts: number[] = []
  for (let at = image.indexOf(0xff, 1); at >= 0 && at + 4 <= image.length && starts.length < 4; at = image.indexOf(0xff, at + 1)) {
    const marker = image[at + 3] ?? 0
    if (image[at + 1] === 0xd8 && image[at + 2] === 0xff && ((marker >= 0xe0 && marker <= 0xef) || marker === 0xdb || marker === 0xc4 || marker === 0xc0)) starts.push(at)
  }
  return starts
}

/** TIFF headers the walkers did not reach, accepted when their IFD0 looks like one (a few entries of known types). */
function findTiffs (image: Buffer, layout: Layout): number[] {
  const known = new Set(layout.tiffs.map((tiff) => tiff.start))
  const found: number[] = []
  for (const signature of [Buffer.from('II*\0', 'latin1'), Buffer.from('MM\0*', 'latin1')]) {
    for (let at = image.indexOf(signature); at >= 0 && found.length < 8; at = image.indexOf(signature, at + 1)) {
      if (known.has(at) || at + 8 > image.length) continue
      const little = signature[0] === 0x49
      const ifd0 = little ? image.readUInt32LE(at + 4) : image.readUInt32BE(at + 4)
      const entries = at + ifd0
      if (ifd0 < 8 || entries + 14 > image.length) continue
      const count = little ? image.readUInt16LE(entries) : image.readUInt16BE(entries)
      const type = little ? image.readUInt16LE(entries + 4) : image.readUInt16BE(entries + 4)
      if (count >= 1 && count <= 500 && type >= 1 && type <= 13) found.push(at)
    }
  }
  return found
}

// ---------------------------------------------------------------------------------------------------------------
// Small helpers

function hex (value: number): string {
  return `0x${value.toString(16)}`
}

function list (items: string[], max = 6): string {
  return items.length <= max ? items.join(',') : `${items.slice(0, max).join(',')},…+${items.length - max}`
}

// ---------------------------------------------------------------------------------------------------------------
// The fuzz harness: base images, the case plan, the HTTP call and the judgement (test/integration/fuzz.test.ts, scripts/fuzz.ts)

/** One valid image every case of its format starts from. `name` tells the two JPEG XL forms apart. */
export interface FuzzBase {
  name: string
  format: ImageFormat
  structure: Structure
  bytes: Buffer
  /** The data URI's declared media type (the service decides from the bytes, whatever this says). */
  mediaType: string
  extension: string
}

const PICTURE_STRUCTURES: Record<typeof PICTURE_FORMATS[number], Structure> = {
  jpeg: 'jpeg', png: 'png', webp: 'riff', gif: 'gif', tiff: 'tiff', heic: 'bmff', heif: 'bmff', avif: 'bmff'
}
const RAW_STRUCTURES: Partial<Record<string, Structure>> = { cr3: 'bmff', raf: 'raf', mrw: 'mrw', x3f: 'x3f', crw: 'crw' }

/**
 * The base images, in a fixed order (the case plan depends on it): every picture format (64×48, the camera tags
 * written by ExifTool), JPEG XL as a bare codestream (no tags: writing them makes it a container) and as a tagged
 * container, and a minimal file of every camera raw format with its camera's tags. A few KB each.
 */
export async function buildFuzzBases (): Promise<FuzzBase[]> {
  const images = new ImageFactory()
  const exiftool = new ExifTool({ maxProcs: 1 })
  try {
    const bases: FuzzBase[] = []
    for (const format of PICTURE_FORMATS) {
      const bytes = await images.make(format, { width: 64, height: 48, tags: CAMERA_TAGS })
      bases.push({ name: format, format, structure: PICTURE_STRUCTURES[format], bytes, mediaType: `image/${format}`, extension: format === 'jpeg' ? 'jpg' : format })
    }
    bases.push({ name: 'jxl-codestream', format: 'jxl', structure: 'jxl-codestream', bytes: buildJpegXl({ width: 64, height: 48, container: false }), mediaType: 'image/jxl', extension: 'jxl' })
    const container = await images.rewrite(buildJpegXl({ width: 64, height: 48, container: true }), 'jxl', CAMERA_TAGS)
    bases.push({ name: 'jxl-container', format: 'jxl', structure: 'bmff', bytes: container, mediaType: 'image/jxl', extension: 'jxl' })
    for (const format of CAMERA_RAW_FORMATS) {
      const bytes = await buildCameraRaw(format, exiftool, { ...CAMERA_TAGS, ...RAW_CAMERAS[format] })
      bases.push({ name: format, format, structure: RAW_STRUCTURES[format] ?? 'tiff', bytes, mediaType: `image/x-${format}`, extension: format })
    }
    return bases
  } finally {
    await Promise.all([images.close(), exiftool.end()])
  }
}

export type Transport = 'multipart' | 'data-uri'

export interface FuzzCase {
  seedBase: number
  index: number
  seed: number
  base: FuzzBase
  transport: Transport
  /** The kind the plan asked for; `mutation.kind` differs when the file had nothing it applies to. */
  requested: MutationKind
  mutation: Mutation
}

/**
 * Case `index` of the run under `seedBase`: the bases in turn, each through every mutation kind in turn (so every
 * format meets every kind), about one in ten sent as a JSON data URI.
 */
export function planCase (bases: FuzzBase[], seedBase: number, index: number): FuzzCase {
  const base = bases[index % bases.length]!
  const kind = MUTATION_KINDS[Math.floor(index / bases.length) % MUTATION_KINDS.length]!
  const seed = caseSeed(seedBase, index)
  const transport: Transport = (seed >>> 24) % 10 === 0 ? 'data-uri' : 'multipart'
  return { seedBase, index, seed, base, transport, requested: kind, mutation: mutate(base.bytes, base.structure, kind, seed) }
}

/** What to read in a failure report, and how to replay the case. */
export function describeCase (fuzzCase: FuzzCase): string {
  const { seedBase, index, seed, base, transport, mutation } = fuzzCase
  return `case ${index} (seed base ${seedBase}, seed ${hex(seed)}) ${base.name} via ${transport}, ${mutation.bytes.length} bytes: ` +
    `${mutation.kind}: ${mutation.detail} [replay: npm run fuzz -- --seed ${seedBase} --case ${index}]`
}

/** The X-Request-Id a case is sent with, so the server's log lines of a failing case can be found. */
export function requestIdOf (fuzzCase: FuzzCase): string {
  return `fuzz-${fuzzCase.seedBase}-${fuzzCase.index}`
}

export interface Answer {
  status: number
  body: string
}

/** Sends a case to POST /v1/metadata over real HTTP; throws what fetch throws (a reset, a hang-up, a timeout). */
export async function sendCase (baseUrl: string, apiKey: string, fuzzCase: FuzzCase, timeoutMs: number): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, 'x-request-id': requestIdOf(fuzzCase) }
  let body: FormData | string
  if (fuzzCase.transport === 'multipart') {
    body = new FormData()
    body.append('image', new Blob([fuzzCase.mutation.bytes]), `fuzz-${fuzzCase.index}.${fuzzCase.base.extension}`)
  } else {
    body = JSON.stringify({ image: `data:${fuzzCase.base.mediaType};base64,${fuzzCase.mutation.bytes.toString('base64')}` })
    headers['content-type'] = 'application/json'
  }
  const response = await fetch(`${baseUrl}/v1/metadata`, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs) })
  return { status: response.status, body: await response.text() }
}

/** `200`, or the status and error code (`415 UNSUPPORTED_IMAGE_FORMAT`): how outcomes are counted. */
export function outcomeOf (answer: Answer): string {
  if (answer.status === 200) return '200'
  try {
    const code = (JSON.parse(answer.body) as { code?: unknown }).code
    return `${answer.status} ${typeof code === 'string' ? code : '(no code)'}`
  } catch {
    return `${answer.status} (not JSON)`
  }
}

/**
 * What is wrong with an answer, or undefined: a 5xx, a body that is not JSON, a 200 that is not a description of
 * the bytes sent, an error outside the envelope `{statusCode, code, error, message}` or whose statusCode is not the
 * HTTP status.
 */
export function problemWith (answer: Answer, sentBytes: number): string | undefined {
  if (answer.status >= 500) return `HTTP ${answer.status}: ${answer.body.slice(0, 300)}`
  let body: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(answer.body)
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return `HTTP ${answer.status} with a JSON body that is not an object`
    body = parsed as Record<string, unknown>
  } catch {
    return `HTTP ${answer.status} with a body that is not JSON: ${answer.body.slice(0, 200)}`
  }
  if (answer.status === 200) {
    if (typeof body['format'] !== 'string') return 'HTTP 200 without a format'
    if (body['filesize_bytes'] !== sentBytes) return `HTTP 200 with filesize_bytes ${String(body['filesize_bytes'])}, ${sentBytes} sent`
    return undefined
  }
  const wrong = ['code', 'error', 'message'].filter((key) => typeof body[key] !== 'string' || body[key] === '')
  if (body['statusCode'] !== answer.status) wrong.unshift('statusCode')
  return wrong.length === 0 ? undefined : `HTTP ${answer.status} outside the error envelope (${wrong.join(', ')} wrong): ${answer.body.slice(0, 300)}`
}

/** Runs `work` for indexes 0..count-1, at most `concurrency` at a time, in index order of starting. */
export async function runBounded (count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0
  const lane = async (): Promise<void> => {
    while (next < count) await work(next++)
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane))
}

/** What the server logged about one case: each line's message, error code and error text, short. */
export function serverLogFor (logLines: Iterable<string>, requestId: string): string[] {
  const found: string[] = []
  const needle = `"${requestId}"`
  for (const chunk of logLines) {
    for (const line of chunk.split('\n')) {
      if (!line.includes(needle)) continue
      try {
        const entry = JSON.parse(line) as { msg?: string, code?: string, status?: number, err?: { type?: string, message?: string } }
        const error = entry.err === undefined ? '' : ` ${entry.err.type ?? 'Error'}: ${(entry.err.message ?? '').split('\n')[0]?.slice(0, 300) ?? ''}`
        found.push(`${entry.msg ?? ''}${entry.status === undefined ? '' : ` status ${entry.status}`}${entry.code === undefined ? '' : ` code ${entry.code}`}${error}`)
      } catch {
        found.push(line.slice(0, 300))
      }
    }
  }
  return found
}

/** The live child processes of `pid`, with their command names (Linux: /proc). */
export { childProcesses as childProcessesOf } from './proc.ts'
export { isAlive } from './processes.ts'
