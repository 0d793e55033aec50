import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { ExifTool } from 'exiftool-vendored'
import { imageSize } from 'image-size'
import { heifFormatFromBrands, readHeifInfo } from '../../src/metadata/heif.ts'
import type { HeifFormat, HeifInfo } from '../../src/metadata/heif.ts'
import { box, buildHeif, fullBox, u16, u32 } from '../support/heif-builder.ts'

const PRIMARY = { width: 4032, height: 3024 }
const THUMBNAIL = { width: 320, height: 240 }

function ftyp (major = 'heic', compatible = ['mif1', 'heic']): Buffer {
  return box('ftyp', Buffer.from(major, 'latin1'), u32(0), ...compatible.map(brand => Buffer.from(brand, 'latin1')))
}

/** Splits a buildHeif() result into its three top-level boxes. */
function topLevel (file: Buffer): { ftyp: Buffer, meta: Buffer, mdat: Buffer } {
  const ftypEnd = file.readUInt32BE(0)
  const metaEnd = ftypEnd + file.readUInt32BE(ftypEnd)
  expect(file.toString('latin1', ftypEnd + 4, ftypEnd + 8)).toBe('meta')
  return { ftyp: file.subarray(0, ftypEnd), meta: file.subarray(ftypEnd, metaEnd), mdat: file.subarray(metaEnd) }
}

/** Same box re-encoded with size = 1 and a 64-bit largesize. */
function asLargeSize (original: Buffer): Buffer {
  const payload = original.subarray(8)
  return Buffer.concat([u32(1), original.subarray(4, 8), u32(0), u32(16 + payload.length), payload])
}

/** Same box with size = 0 ("extends to the end of the enclosing box"). */
function asSizeZero (original: Buffer): Buffer {
  const copy = Buffer.from(original)
  copy.writeUInt32BE(0, 0)
  return copy
}

/** Version and flags of the first FullBox of `type` in `file`. */
function versionAndFlags (file: Buffer, type: string): { version: number, flags: number } {
  const at = file.indexOf(type, 0, 'latin1')
  expect(at).toBeGreaterThan(0)
  return { version: file.readUInt8(at + 4), flags: file.readUIntBE(at + 5, 3) }
}

interface HandBuilt {
  pitm?: Buffer
  properties: Buffer[]
  ipma: Buffer[]
}

// For layouts the builder does not produce; our reader only needs ftyp + meta(pitm, iprp).
function handBuilt ({ pitm, properties, ipma }: HandBuilt): Buffer {
  const hdlr = fullBox('hdlr', 0, 0, u32(0), Buffer.from('pict'), u32(0), u32(0), u32(0), Buffer.from([0]))
  const iprp = box('iprp', box('ipco', ...properties), ...ipma)
  return Buffer.concat([ftyp(), fullBox('meta', 0, 0, hdlr, ...(pitm === undefined ? [] : [pitm]), iprp)])
}

const ispe = (width: number, height: number): Buffer => fullBox('ispe', 0, 0, u32(width), u32(height))
const pitm16 = (id: number): Buffer => fullBox('pitm', 0, 0, u16(id))
/** ipma version 0, 8-bit associations: entries are [item_ID, [property indexes]]. */
const ipma8 = (...entries: Array<[number, number[]]>): Buffer => fullBox('ipma', 0, 0, u32(entries.length),
  ...entries.map(([id, indexes]) => Buffer.concat([u16(id), Buffer.from([indexes.length, ...indexes])])))

/** Accepts only "no answer" or exactly the right answer. */
function expectUndefinedOr (actual: HeifInfo | undefined, expected: HeifInfo): void {
  if (actual !== undefined) expect(actual).toEqual(expected)
}

describe('heifFormatFromBrands', () => {
  const cases: Array<[string, string[], HeifFormat | undefined]> = [
    ['heic', [], 'heic'],
    ['heix', ['mif1'], 'heic'],
    ['hevc', ['msf1'], 'heic'],
    ['hevx', [], 'heic'],
    ['heim', [], 'heic'],
    ['heis', [], 'heic'],
    ['avif', ['mif1', 'miaf'], 'avif'],
    ['avis', ['msf1'], 'avif'],
    ['mif1', ['mif1', 'heic'], 'heic'],
    ['mif1', ['mif1', 'MiHE', 'heix'], 'heic'],
    ['msf1', ['msf1', 'hevc'], 'heic'],
    ['mif1', ['mif1', 'miaf', 'avif'], 'avif'],
    ['msf1', ['msf1', 'avis'], 'avif'],
    // HEVC brands win over AVIF ones when both are listed.
    ['mif1', ['avif', 'heic'], 'heic'],
    ['mif1', ['mif1'], 'heif'],
    ['mif1', [], 'heif'],
    ['msf1', ['msf1', 'iso8', 'miaf'], 'heif'],
    ['isom', ['heic', 'mif1'], undefined],
    ['mp42', ['isom', 'mp41'], undefined],
    ['qt  ', ['qt  '], undefined],
    ['crx ', ['crx ', 'isom'], undefined],
    ['HEIC', [], undefined]
  ]

  it.each(cases)('major %j with compatible %j → %s', (major, compatible, expected) => {
    const file = buildHeif({ majorBrand: major, compatibleBrands: compatible, primary: { width: 64, height: 48 } })
    expect(heifFormatFromBrands(file)).toBe(expected)
    expect(heifFormatFromBrands(file.subarray(0, file.readUInt32BE(0)))).toBe(expected)
    expect(readHeifInfo(file)).toEqual(expected === undefined ? undefined : { format: expected, width: 64, height: 48 })
  })

  it('ignores a trailing partial compatible brand', () => {
    // 'hei' + one byte is not a brand; ftyp size 23 leaves only three bytes of it.
    const file = Buffer.concat([u32(23), Buffer.from('ftypmif1'), u32(0), Buffer.from('mif1hei')])
    expect(heifFormatFromBrands(file)).toBe('heif')
  })

  it('does not guess from an incomplete ftyp', () => {
    // Cutting the compatible brands off would turn heic into heif if the box were read partially.
    const file = ftyp('mif1', ['mif1', 'miaf', 'MiHB', 'heic'])
    expect(heifFormatFromBrands(file)).toBe('heic')
    for (let length = 0; length < file.length; length++) {
      expect(heifFormatFromBrands(file.subarray(0, length))).toBeUndefined()
    }
  })

  it('rejects an implausibly large ftyp instead of scanning it', () => {
    const brands = Array.from({ length: 2000 }, () => 'mif1')
    expect(heifFormatFromBrands(ftyp('mif1', [...brands.slice(0, 100), 'heic']))).toBe('heic')
    expect(heifFormatFromBrands(ftyp('mif1', [...brands, 'heic']))).toBeUndefined()
    // Size 0 would make ftyp the whole upload.
    expect(heifFormatFromBrands(asSizeZero(Buffer.concat([ftyp('heic'), Buffer.alloc(1 << 20)])))).toBeUndefined()
    expect(heifFormatFromBrands(asSizeZero(ftyp('heic')))).toBe('heic')
  })

  it('rejects non-HEIF bytes', () => {
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9])
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), u32(13), Buffer.from('IHDR'), u32(640), u32(480), Buffer.alloc(9)])
    const ftypNotAtFour = Buffer.concat([Buffer.alloc(4), ftyp()])
    const inputs = [jpeg, png, ftypNotAtFour, Buffer.alloc(0), Buffer.from('ftyp'), Buffer.from('hello, this is plain text!'), new Uint8Array(64)]
    for (const input of inputs) {
      expect(heifFormatFromBrands(input)).toBeUndefined()
      expect(readHeifInfo(input)).toBeUndefined()
    }
  })
})

describe('readHeifInfo', () => {
  it('reads the primary size of a single-image file', () => {
    expect(readHeifInfo(buildHeif({ majorBrand: 'heic', primary: PRIMARY }))).toEqual({ format: 'heic', ...PRIMARY })
    expect(readHeifInfo(buildHeif({ majorBrand: 'avif', primary: { width: 1, height: 65535 } }))).toEqual({ format: 'avif', width: 1, height: 65535 })
  })

  describe('where image-size (2.1) gets the size wrong', () => {
    // image-size collects every ispe in ipco, whatever item it belongs to, and
    // reports the largest; 1.x reported the first. Neither looks at pitm/ipma.
    it('primary size when the thumbnail ispe comes first', () => {
      const trap = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true })
      const naive = imageSize(trap)
      expect(naive.images?.[0]).toEqual(THUMBNAIL)
      expect(readHeifInfo(trap)).toEqual({ format: 'heic', ...PRIMARY })

      const usual = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL })
      expect(readHeifInfo(usual)).toEqual({ format: 'heic', ...PRIMARY })
    })

    it('primary size when another item is larger than the primary', () => {
      // e.g. a collection/burst file whose primary is not its biggest image.
      const file = handBuilt({ pitm: pitm16(1), properties: [ispe(1920, 1080), ispe(4000, 3000)], ipma: [ipma8([1, [1]], [2, [2]])] })
      const naive = imageSize(file)
      expect({ width: naive.width, height: naive.height }).toEqual({ width: 4000, height: 3000 })
      expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 1920, height: 1080 })
    })

    it('stored size when the primary has a clap (image-size subtracts the wrong clap field)', () => {
      const clap = box('clap', u32(4000), u32(1), u32(3000), u32(1), u32(0), u32(1), u32(0), u32(1))
      const file = handBuilt({ pitm: pitm16(1), properties: [ispe(4032, 3024), clap], ipma: [ipma8([1, [1, 2]])] })
      expect(imageSize(file).width).toBe(4031)
      expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 4032, height: 3024 })
    })
  })

  it.each([
    { pitmVersion: 1, ipmaVersion: 0, ipmaFlags: 0 },
    { pitmVersion: 0, ipmaVersion: 1, ipmaFlags: 0 },
    { pitmVersion: 0, ipmaVersion: 0, ipmaFlags: 1 },
    { pitmVersion: 1, ipmaVersion: 1, ipmaFlags: 1 }
  ] as const)('handles pitm v$pitmVersion, ipma v$ipmaVersion flags $ipmaFlags', (variant) => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true, ...variant })
    // Make sure the encoding under test is really in the file.
    expect(versionAndFlags(file, 'pitm').version).toBe(variant.pitmVersion)
    expect(versionAndFlags(file, 'ipma')).toEqual({ version: variant.ipmaVersion, flags: variant.ipmaFlags })
    expect(readHeifInfo(file)).toEqual({ format: 'heic', ...PRIMARY })
  })

  it('reads a 32-bit primary item id beyond 16 bits', () => {
    const id = 0x0001_0002
    // An entry for item 2 (the low 16 bits of id) would match if pitm or ipma were read as 16-bit.
    const file = handBuilt({
      pitm: fullBox('pitm', 1, 0, u32(id)),
      properties: [ispe(10, 10), ispe(1000, 800)],
      ipma: [fullBox('ipma', 1, 0, u32(2), u32(2), Buffer.from([1, 1]), u32(id), Buffer.from([1, 2]))]
    })
    expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 1000, height: 800 })
  })

  it('reads 16-bit property indexes above 127 when ipma flags & 1', () => {
    // 200 unrelated properties, then the primary's ispe at index 201 (needs more than 7 bits).
    const filler = Array.from({ length: 200 }, () => box('free'))
    const file = handBuilt({
      pitm: pitm16(1),
      properties: [...filler, ispe(1234, 567)],
      ipma: [fullBox('ipma', 0, 1, u32(1), u16(1), Buffer.from([1]), u16(0x8000 | 201))]
    })
    expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 1234, height: 567 })
  })

  it('collects associations across several ipma boxes and skips index 0', () => {
    const file = handBuilt({
      pitm: pitm16(7),
      properties: [ispe(11, 11), box('colr'), ispe(640, 360)],
      ipma: [ipma8([3, [0, 0x82]]), fullBox('ipma', 0, 1, u32(1), u16(7), Buffer.from([1]), u16(3))]
    })
    expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 640, height: 360 })
  })

  it('returns undefined without pitm even though an ispe exists', () => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, omitPitm: true })
    expect(file.indexOf('pitm', 0, 'latin1')).toBe(-1)
    expect(file.indexOf('ispe', 0, 'latin1')).toBeGreaterThan(0)
    expect(readHeifInfo(file)).toBeUndefined()
  })

  it('returns undefined when the primary item has no associated ispe', () => {
    // Item 1 is primary but only item 2 has an ispe: no fallback to "some" ispe.
    const noEntry = handBuilt({ pitm: pitm16(1), properties: [ispe(100, 100)], ipma: [ipma8([2, [1]])] })
    expect(readHeifInfo(noEntry)).toBeUndefined()
    const otherProperty = handBuilt({ pitm: pitm16(1), properties: [box('colr'), ispe(100, 100)], ipma: [ipma8([1, [1]], [2, [2]])] })
    expect(readHeifInfo(otherProperty)).toBeUndefined()
    const indexOutOfRange = handBuilt({ pitm: pitm16(1), properties: [ispe(100, 100)], ipma: [ipma8([1, [5]])] })
    expect(readHeifInfo(indexOutOfRange)).toBeUndefined()
    // Sanity check that the same layout does work when the association is right.
    expect(readHeifInfo(handBuilt({ pitm: pitm16(1), properties: [ispe(100, 100)], ipma: [ipma8([1, [1]])] })))
      .toEqual({ format: 'heic', width: 100, height: 100 })
  })

  it('returns undefined for a zero width or height', () => {
    expect(readHeifInfo(buildHeif({ majorBrand: 'heic', primary: { width: 0, height: 10 } }))).toBeUndefined()
    expect(readHeifInfo(buildHeif({ majorBrand: 'heic', primary: { width: 10, height: 0 } }))).toBeUndefined()
  })

  it('returns undefined for a short ispe', () => {
    const file = handBuilt({ pitm: pitm16(1), properties: [fullBox('ispe', 0, 0, u32(100))], ipma: [ipma8([1, [1]])] })
    expect(readHeifInfo(file)).toBeUndefined()
  })

  it('reports the stored size and ignores irot', () => {
    const file = handBuilt({ pitm: pitm16(1), properties: [ispe(4032, 3024), box('irot', Buffer.from([1]))], ipma: [ipma8([1, [1, 0x82]])] })
    expect(readHeifInfo(file)).toEqual({ format: 'heic', width: 4032, height: 3024 })
  })

  it('reads input that is a view into a larger buffer', () => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL })
    const padded = Buffer.concat([Buffer.alloc(13, 0xee), file, Buffer.alloc(7, 0xee)])
    const view = new Uint8Array(padded.buffer, padded.byteOffset + 13, file.length)
    expect(readHeifInfo(view)).toEqual({ format: 'heic', ...PRIMARY })
  })

  it('returns undefined or the right answer for every truncation, and the answer once meta is complete', () => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true })
    const { ftyp: ftypBox, meta } = topLevel(file)
    const metaEnd = ftypBox.length + meta.length
    const expected = { format: 'heic' as const, ...PRIMARY }
    for (let length = 0; length <= file.length; length++) {
      const prefix = file.subarray(0, length)
      const info = readHeifInfo(prefix)
      expectUndefinedOr(info, expected)
      // A box that does not fit is never half-read, so the answer appears exactly when meta is whole.
      expect(info !== undefined).toBe(length >= metaEnd)
      expect(heifFormatFromBrands(prefix)).toBe(length >= ftypBox.length ? 'heic' : undefined)
    }
  })

  it('survives every size field being overwritten with hostile values', () => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true })
    const { ftyp: ftypBox, meta } = topLevel(file)
    const mdatPayload = ftypBox.length + meta.length + 8
    const expected = { format: 'heic' as const, ...PRIMARY }
    // Writing at every offset hits every size, count and index field in the file.
    for (const value of [0, 1, 2, 7, 8, 9, 0x7fffffff, 0xfffffff0, 0xffffffff]) {
      for (let offset = 0; offset + 4 <= file.length; offset++) {
        const mutated = Buffer.from(file)
        mutated.writeUInt32BE(value, offset)
        const info = readHeifInfo(mutated)
        if (offset >= mdatPayload) {
          // Coded data is never parsed.
          expect(info).toEqual(expected)
        } else if (info !== undefined) {
          expect(info.format).toBe('heic')
          expect(Number.isInteger(info.width) && info.width > 0).toBe(true)
          expect(Number.isInteger(info.height) && info.height > 0).toBe(true)
        }
      }
    }
  })

  it('survives random byte corruption', () => {
    const file = buildHeif({ majorBrand: 'mif1', compatibleBrands: ['mif1', 'heic'], primary: PRIMARY, thumbnail: THUMBNAIL })
    let seed = 0x2545f491
    // xorshift32: deterministic, so a failure is reproducible.
    const next = (): number => {
      seed ^= seed << 13
      seed ^= seed >>> 17
      seed ^= seed << 5
      return seed >>> 0
    }
    for (let round = 0; round < 3000; round++) {
      const mutated = Buffer.from(file)
      const flips = 1 + (next() % 4)
      for (let i = 0; i < flips; i++) mutated[next() % mutated.length] = next() & 0xff
      const cut = next() % 4 === 0 ? next() % mutated.length : mutated.length
      const info = readHeifInfo(mutated.subarray(0, cut))
      if (info !== undefined) {
        expect(['heic', 'heif', 'avif']).toContain(info.format)
        expect(info.width).toBeGreaterThan(0)
        expect(info.height).toBeGreaterThan(0)
      }
    }
  })

  describe('box sizes', () => {
    const file = buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL })
    const { ftyp: ftypBox, meta, mdat } = topLevel(file)
    const expected = { format: 'heic', ...PRIMARY }

    it('returns undefined when meta claims far more than the file holds', () => {
      const huge = Buffer.from(meta)
      huge.writeUInt32BE(0xfffffff0, 0)
      expect(readHeifInfo(Buffer.concat([ftypBox, huge, mdat]))).toBeUndefined()
      const hugeLarge = asLargeSize(meta)
      hugeLarge.writeUInt32BE(0x7fffffff, 8)
      expect(readHeifInfo(Buffer.concat([ftypBox, hugeLarge]))).toBeUndefined()
    })

    it('cannot skip a huge box that comes before meta', () => {
      const hugeMdat = Buffer.concat([u32(1), Buffer.from('mdat'), u32(0xffffffff), u32(0xffffffff), Buffer.alloc(16)])
      expect(readHeifInfo(Buffer.concat([ftypBox, hugeMdat, meta]))).toBeUndefined()
    })

    it('still answers when a box after meta claims a huge size', () => {
      const hugeMdat = Buffer.from(mdat)
      hugeMdat.writeUInt32BE(0xffffffff, 0)
      expect(readHeifInfo(Buffer.concat([ftypBox, meta, hugeMdat]))).toEqual(expected)
      const hugeLarge = Buffer.concat([u32(1), Buffer.from('mdat'), u32(0x00100000), u32(0), Buffer.alloc(16)])
      expect(readHeifInfo(Buffer.concat([ftypBox, meta, hugeLarge]))).toEqual(expected)
    })

    it('does not iterate a huge ipma entry_count', () => {
      const bogus = handBuilt({
        pitm: pitm16(1),
        properties: [ispe(320, 200)],
        ipma: [fullBox('ipma', 0, 0, u32(0xffffffff), u16(1), Buffer.from([1, 1]))]
      })
      // Bounded by the bytes present: a loop over the claimed count would hang until the test times out.
      expect(readHeifInfo(bogus)).toEqual({ format: 'heic', width: 320, height: 200 })
    })

    it('rejects boxes smaller than their own header', () => {
      for (const size of [2, 4, 7]) {
        const tiny = Buffer.from(meta)
        tiny.writeUInt32BE(size, 0)
        expect(readHeifInfo(Buffer.concat([ftypBox, tiny, mdat]))).toBeUndefined()
      }
      const tinyLarge = asLargeSize(meta)
      tinyLarge.writeUInt32BE(15, 12)
      expect(readHeifInfo(Buffer.concat([ftypBox, tinyLarge, mdat]))).toBeUndefined()
    })

    it('treats size 0 as "to the end of the enclosing box"', () => {
      // Top level: meta last, running to the end of the file.
      expect(readHeifInfo(Buffer.concat([ftypBox, mdat, asSizeZero(meta)]))).toEqual(expected)
      // Nested: the ispe is the last property and runs to the end of ipco.
      const nested = handBuilt({ pitm: pitm16(1), properties: [box('colr'), asSizeZero(ispe(99, 77))], ipma: [ipma8([1, [2]])] })
      expect(readHeifInfo(nested)).toEqual({ format: 'heic', width: 99, height: 77 })
      // A size-0 mdat before meta swallows it.
      expect(readHeifInfo(Buffer.concat([ftypBox, asSizeZero(mdat), meta]))).toBeUndefined()
    })

    it('reads size 1 boxes with a 64-bit largesize', () => {
      expect(readHeifInfo(Buffer.concat([ftypBox, asLargeSize(meta), mdat]))).toEqual(expected)
      // Skipping a largesize box to reach meta.
      expect(readHeifInfo(Buffer.concat([ftypBox, asLargeSize(mdat), meta]))).toEqual(expected)
      expect(readHeifInfo(Buffer.concat([asLargeSize(ftypBox), meta, mdat]))).toEqual(expected)
      const nested = handBuilt({ pitm: pitm16(1), properties: [asLargeSize(box('colr', u32(0))), asLargeSize(ispe(640, 480))], ipma: [ipma8([1, [2]])] })
      expect(readHeifInfo(nested)).toEqual({ format: 'heic', width: 640, height: 480 })
    })

    it('stops after a bounded number of boxes', () => {
      const few = Buffer.concat(Array.from({ length: 100 }, () => box('free')))
      expect(readHeifInfo(Buffer.concat([ftypBox, few, meta, mdat]))).toEqual(expected)
      // 20 000 empty boxes before meta: over the cap, so no answer.
      const many = Buffer.concat(Array.from({ length: 20_000 }, () => box('free')))
      expect(readHeifInfo(Buffer.concat([ftypBox, many, meta, mdat]))).toBeUndefined()
    })
  })
})

describe('buildHeif output under the real ExifTool', () => {
  let et: ExifTool
  let dir: string

  beforeAll(async () => {
    et = new ExifTool({ maxProcs: 1 })
    dir = await mkdtemp(join(tmpdir(), 'heif-test-'))
  })

  afterAll(async () => {
    await et.end()
    await rm(dir, { recursive: true, force: true })
  })

  const readArgs = ['-G1', '-n', '-Make', '-Model', '-DateTimeOriginal', '-GPSLatitude', '-GPSLongitude', '-GPSLatitudeRef', '-GPSLongitudeRef', '-FileType', '-ImageWidth', '-ImageHeight']
  const readTags = async (file: string): Promise<Record<string, unknown>> =>
    await et.readRaw(file, { readArgs, useMWG: false }) as Record<string, unknown>

  it.each([
    { name: 'iphone.heic', fileType: 'HEIC', options: { majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true } },
    { name: 'generic.heif', fileType: 'HEIF', options: { majorBrand: 'mif1', compatibleBrands: ['mif1'], primary: { width: 640, height: 480 } } },
    { name: 'photo.avif', fileType: 'AVIF', options: { majorBrand: 'avif', compatibleBrands: ['avif', 'mif1', 'miaf'], primary: { width: 800, height: 600 }, thumbnail: { width: 80, height: 60 }, ilocVersion: 1 as const } }
  ])('$name is identified as $fileType and accepts EXIF', async ({ name, fileType, options }) => {
    const file = join(dir, name)
    const original = buildHeif(options)
    await writeFile(file, original)
    const before = readHeifInfo(original)
    expect(before).toEqual({ format: fileType.toLowerCase(), ...options.primary })

    const fresh = await readTags(file)
    expect(fresh['File:FileType']).toBe(fileType)
    // ExifTool takes File:ImageWidth/Height from the primary item's ispe, not the first one.
    expect(fresh['File:ImageWidth']).toBe(options.primary.width)
    expect(fresh['File:ImageHeight']).toBe(options.primary.height)
    expect(fresh['IFD0:Make']).toBeUndefined()

    // Signed coordinates: exiftool-vendored derives the refs and its GPSPosition hint from the sign.
    await et.write(file, {
      Make: 'Apple',
      Model: 'iPhone 15',
      DateTimeOriginal: '2024:05:01 10:11:12',
      GPSLatitude: -10.5,
      GPSLatitudeRef: 'S',
      GPSLongitude: -20.25,
      GPSLongitudeRef: 'W'
    }, { writeArgs: ['-overwrite_original'] })

    const tags = await readTags(file)
    expect(tags).toMatchObject({
      'File:FileType': fileType,
      'IFD0:Make': 'Apple',
      'IFD0:Model': 'iPhone 15',
      'ExifIFD:DateTimeOriginal': '2024:05:01 10:11:12',
      'GPS:GPSLatitude': 10.5,
      'GPS:GPSLatitudeRef': 'S',
      'GPS:GPSLongitude': 20.25,
      'GPS:GPSLongitudeRef': 'W',
      'Composite:GPSLatitude': -10.5,
      'Composite:GPSLongitude': -20.25,
      'File:ImageWidth': options.primary.width,
      'File:ImageHeight': options.primary.height
    })

    const rewritten = await readFile(file)
    // ExifTool really rewrote the container (added an Exif item) and our reader still copes.
    expect(rewritten.length).toBeGreaterThan(original.length)
    expect(rewritten.indexOf('Exif', 0, 'latin1')).toBeGreaterThan(0)
    expect(readHeifInfo(rewritten)).toEqual(before)
  })

  it('documents that a positive latitude with an S ref is written as north by exiftool-vendored', async () => {
    // exiftool-vendored adds GPSPosition="lat,lon" from the raw numbers after the
    // explicit refs, and ExifTool lets that later assignment set the refs from the sign.
    const file = join(dir, 'refs.heic')
    await writeFile(file, buildHeif({ majorBrand: 'heic', primary: PRIMARY }))
    await et.write(file, {
      GPSLatitude: 10.5,
      GPSLatitudeRef: 'S',
      GPSLongitude: 20.25,
      GPSLongitudeRef: 'W'
    }, { writeArgs: ['-overwrite_original'] })
    const tags = await readTags(file)
    expect(tags).toMatchObject({
      'GPS:GPSLatitudeRef': 'N',
      'GPS:GPSLongitudeRef': 'E',
      'Composite:GPSLatitude': 10.5,
      'Composite:GPSLongitude': 20.25
    })
  })
})
