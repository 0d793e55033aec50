import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { ExifTool } from 'exiftool-vendored'
import { heifFormatFromBrands, type HeifFormat } from '../../src/metadata/heif.ts'
import { sniffImage } from '../../src/metadata/sniff.ts'
import { box, buildHeif, fullBox, u16, u32 } from '../support/heif-builder.ts'

const PRIMARY = { width: 4032, height: 3024 }
const THUMBNAIL = { width: 320, height: 240 }

function ftyp (major = 'heic', compatible = ['mif1', 'heic']): Buffer {
  return box('ftyp', Buffer.from(major, 'latin1'), u32(0), ...compatible.map(brand => Buffer.from(brand, 'latin1')))
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
    expect(sniffImage(file)).toEqual(expected === undefined ? undefined : { format: expected })
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
    }
  })
})

describe('the primary item\'s size, as ExifTool reads it', () => {
  // The service takes a HEIF's size from ExifTool, as it does a raw file's. These are the layouts where a reader that
  // takes the first `ispe` (image-size 2.1) gets it wrong; a primary-item walk of our own gave the same answers as
  // ExifTool on all of them, and was removed.
  let et: ExifTool
  let dir: string
  beforeAll(async () => {
    et = new ExifTool({ maxProcs: 1 })
    dir = await mkdtemp(join(tmpdir(), 'heif-size-'))
  })
  afterAll(async () => {
    await et.end()
    await rm(dir, { recursive: true, force: true })
  })

  const clap = fullBox('clap', 0, 0, u32(4000), u32(1), u32(3000), u32(1), u32(0), u32(1), u32(0), u32(1))
  const filler = Array.from({ length: 200 }, () => box('colr', u32(0)))
  const layouts: Array<[string, Buffer, string]> = [
    ['the thumbnail\'s ispe first', buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, thumbnailPropertiesFirst: true }), '4032 3024'],
    ['32-bit ids and 16-bit property indexes', buildHeif({ majorBrand: 'heic', primary: PRIMARY, thumbnail: THUMBNAIL, pitmVersion: 1, ipmaVersion: 1, ipmaFlags: 1, thumbnailPropertiesFirst: true }), '4032 3024'],
    ['another item larger than the primary', handBuilt({ pitm: pitm16(1), properties: [ispe(1920, 1080), ispe(4000, 3000)], ipma: [ipma8([1, [1]], [2, [2]])] }), '1920 1080'],
    ['a clap on the primary (the stored size counts)', handBuilt({ pitm: pitm16(1), properties: [ispe(4032, 3024), clap], ipma: [ipma8([1, [1, 2]])] }), '4032 3024'],
    ['a property index above 127', handBuilt({ pitm: pitm16(1), properties: [...filler, ispe(1234, 567)], ipma: [fullBox('ipma', 0, 1, u32(1), u16(1), Buffer.from([1]), u16(201))] }), '1234 567'],
    ['several ipma boxes and index 0', handBuilt({ pitm: pitm16(1), properties: [ispe(11, 11), box('colr'), ispe(640, 360)], ipma: [ipma8([2, [1]]), ipma8([1, [0, 3]])] }), '640 360'],
    ['an irot (the stored size counts)', handBuilt({ pitm: pitm16(1), properties: [ispe(4032, 3024), box('irot', Buffer.from([1]))], ipma: [ipma8([1, [1, 0x82]])] }), '4032 3024'],
    ['64-bit box sizes', handBuilt({ pitm: pitm16(1), properties: [asLargeSize(box('colr', u32(0))), asLargeSize(ispe(640, 480))], ipma: [ipma8([1, [2]])] }), '640 480']
  ]

  it.each(layouts)('%s', async (name, file, size) => {
    const path = join(dir, `${name.replace(/\W+/g, '-')}.heic`)
    await writeFile(path, file)
    const tags = await et.readRaw(path, { readArgs: ['-G1', '-n', '-fast', '-Composite:ImageSize'], useMWG: false }) as Record<string, unknown>
    expect(tags['Composite:ImageSize']).toBe(size)
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
    const before = sniffImage(original)
    expect(before).toEqual({ format: fileType.toLowerCase() })

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
    expect(sniffImage(rewritten)).toEqual(before)
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
