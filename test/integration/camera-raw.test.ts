import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { ExifTool } from 'exiftool-vendored'
import { imageSize } from 'image-size'
import { CAMERA_RAW_FORMATS, isJpegXl, sniffCameraRaw } from '../../src/metadata/camera-raw.ts'
import type { CameraRawFormat } from '../../src/metadata/camera-raw.ts'
import { buildHeif } from '../support/heif-builder.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { buildCameraRaw, buildJpegXl, PREVIEW_SIZE, RAW_CAMERAS, RAW_SIZE } from '../support/raw-builder.ts'

const READ_ARGS = ['-a', '-G1', '-n', '-FileType', '-FileTypeExtension', '-Make', '-Model', '-DateTimeOriginal', '-GPSLatitude', '-GPSLongitude', '-ImageSize']

/** CAMERA_TAGS with a camera that really wrote the format: for TIFF-based raws the maker is what identifies it. */
function tagsFor (format: CameraRawFormat): Record<string, string | number> {
  return { ...CAMERA_TAGS, ...RAW_CAMERAS[format] }
}

/** The family 1 groups ExifTool reads each tag from: EXIF's IFD0/ExifIFD/GPS, except where noted. */
const GROUPS: Partial<Record<CameraRawFormat, { camera: string, date: string, gps: string }>> = {
  // CRW has no EXIF. ExifTool edits the CIFF records that exist (MakeModel, TimeStamp) and writes every tag to
  // XMP too (its preferred group for CRW), kept in a CanonVRD trailer: the only home GPS has.
  crw: { camera: 'CanonRaw', date: 'CanonRaw', gps: 'XMP-exif' }
}
const EXIF_GROUPS = { camera: 'IFD0', date: 'ExifIFD', gps: 'GPS' }

/**
 * What ExifTool's Composite:ImageSize reports. The sensor size everywhere but X3F: there the embedded JPEG's own
 * size (File:ImageWidth/Height, from its SOF) takes priority over the X3F header's ImageWidth/Height.
 */
function expectedImageSize (format: CameraRawFormat): string {
  const size = format === 'x3f' ? PREVIEW_SIZE : RAW_SIZE
  return `${size.width} ${size.height}`
}

/** Deterministic noise, so a failure can be reproduced. */
function noise (length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length)
  let state = seed
  for (let i = 0; i < length; i++) {
    state = (state * 1103515245 + 12345) >>> 0
    bytes[i] = state >>> 24
  }
  return bytes
}

interface Entry { tag: number, type: number, value: number | string }

/**
 * A little-endian TIFF head with just IFD0 (numbers inline, strings after the directory): enough for the
 * recogniser, which reads nothing else.
 */
function ifd0Tiff (entries: Entry[]): Buffer {
  const directoryLength = 2 + entries.length * 12 + 4
  const strings: Buffer[] = []
  let stringsAt = 8 + directoryLength
  const directory = Buffer.alloc(directoryLength)
  directory.writeUInt16LE(entries.length, 0)
  entries.forEach((entry, i) => {
    const at = 2 + i * 12
    directory.writeUInt16LE(entry.tag, at)
    directory.writeUInt16LE(entry.type, at + 2)
    if (typeof entry.value === 'string') {
      const text = Buffer.from(`${entry.value}\0`, 'latin1')
      directory.writeUInt32LE(text.length, at + 4)
      if (text.length <= 4) text.copy(directory, at + 8)
      else {
        directory.writeUInt32LE(stringsAt, at + 8)
        strings.push(text)
        stringsAt += text.length
      }
    } else {
      directory.writeUInt32LE(1, at + 4)
      if (entry.type === 3) directory.writeUInt16LE(entry.value, at + 8)
      else directory.writeUInt32LE(entry.value, at + 8)
    }
  })
  return Buffer.concat([Buffer.from('II*\0\x08\0\0\0', 'latin1'), directory, ...strings])
}

const make = (value: string): Entry => ({ tag: 0x10f, type: 2, value })
const model = (value: string): Entry => ({ tag: 0x110, type: 2, value })
const subIfds: Entry = { tag: 0x14a, type: 4, value: 0 }

describe('camera raw files built in code, under the real ExifTool', () => {
  let et: ExifTool
  let images: ImageFactory
  let dir: string
  const built = new Map<CameraRawFormat, Promise<Buffer>>()
  // Built once, on first use, so a format that fails to build fails only its own tests.
  const fileFor = async (format: CameraRawFormat): Promise<Buffer> => {
    let file = built.get(format)
    if (file === undefined) {
      file = buildCameraRaw(format, et, tagsFor(format))
      built.set(format, file)
    }
    return await file
  }
  const readTags = async (bytes: Buffer, name: string): Promise<Record<string, unknown>> => {
    const path = join(dir, name)
    await writeFile(path, bytes)
    return await et.readRaw(path, { readArgs: READ_ARGS, useMWG: false }) as Record<string, unknown>
  }

  beforeAll(async () => {
    et = new ExifTool({ maxProcs: 1 })
    images = new ImageFactory()
    dir = await mkdtemp(join(tmpdir(), 'camera-raw-test-'))
  })

  afterAll(async () => {
    await et.end()
    await images.close()
    await rm(dir, { recursive: true, force: true })
  })

  describe.each(CAMERA_RAW_FORMATS)('%s', (format) => {
    it('is recognised from its bytes', async () => {
      const file = await fileFor(format)
      expect(sniffCameraRaw(file)).toBe(format)
      expect(isJpegXl(file)).toBe(false)
    })

    it('never throws on a truncated head, and never names another format', async () => {
      const file = await fileFor(format)
      for (let length = 0; length <= 64; length++) {
        const head = file.subarray(0, length)
        // A head that still holds a distinct signature may be recognised; nothing else may be.
        expect([undefined, format]).toContain(sniffCameraRaw(head))
        expect(isJpegXl(head)).toBe(false)
      }
      expect(sniffCameraRaw(file.subarray(0, 3))).toBeUndefined()
    })

    it('is that file type to ExifTool, with the camera tags ExifTool wrote', async () => {
      const tags = tagsFor(format)
      const groups = GROUPS[format] ?? EXIF_GROUPS
      const read = await readTags(await fileFor(format), `photo.${format}`)
      expect(read['File:FileType']).toBe(format.toUpperCase())
      expect(String(read['File:FileTypeExtension']).toLowerCase()).toBe(format)
      expect(read[`${groups.camera}:Make`]).toBe(tags.Make)
      expect(read[`${groups.camera}:Model`]).toBe(tags.Model)
      expect(read[`${groups.date}:DateTimeOriginal`]).toBe(tags.DateTimeOriginal)
      expect(read[`${groups.gps}:GPSLatitude`]).toBeCloseTo(CAMERA_TAGS.GPSLatitude, 6)
      expect(read[`${groups.gps}:GPSLongitude`]).toBeCloseTo(CAMERA_TAGS.GPSLongitude, 6)
      expect(read['Composite:ImageSize']).toBe(expectedImageSize(format))
    })
  })

  it('CRW and CR3 also get every tag in XMP, their preferred group for new tags', async () => {
    for (const format of ['crw', 'cr3'] as const) {
      const read = await readTags(await fileFor(format), `xmp.${format}`)
      expect(read).toMatchObject({
        'XMP-tiff:Make': RAW_CAMERAS[format].Make,
        'XMP-tiff:Model': RAW_CAMERAS[format].Model,
        'XMP-exif:DateTimeOriginal': CAMERA_TAGS.DateTimeOriginal
      })
      expect(read['XMP-exif:GPSLatitude']).toBeCloseTo(CAMERA_TAGS.GPSLatitude, 6)
    }
  })

  describe('TIFF-based raws decided by maker and model', () => {
    // The same preview + SubIFD layout, built under one format's name, with another camera written in.
    it.each([
      { name: 'a NIKON TIFF with DNGVersion', structure: 'dng', camera: { Make: 'NIKON CORPORATION', Model: 'NIKON D850' }, expected: 'dng' },
      { name: 'a COOLPIX P7800 TIFF', structure: 'nef', camera: { Make: 'NIKON', Model: 'COOLPIX P7800' }, expected: 'nrw' },
      { name: 'a NIKON D850 TIFF', structure: 'nrw', camera: { Make: 'NIKON CORPORATION', Model: 'NIKON D850' }, expected: 'nef' },
      { name: 'a COOLPIX A TIFF (which writes NEF)', structure: 'nrw', camera: { Make: 'NIKON CORPORATION', Model: 'COOLPIX A' }, expected: 'nef' },
      { name: 'a Sony DSC-V3 TIFF', structure: 'arw', camera: { Make: 'SONY', Model: 'DSC-V3' }, expected: 'srf' },
      { name: 'a PENTAX-branded TIFF', structure: 'pef', camera: { Make: 'PENTAX Corporation', Model: 'PENTAX K10D' }, expected: 'pef' }
    ] as const)('$name is $expected', async ({ structure, camera, expected }) => {
      const file = await buildCameraRaw(structure, et, { ...CAMERA_TAGS, ...camera })
      expect(sniffCameraRaw(file)).toBe(expected)
      const read = await readTags(file, `recognised.${expected}`)
      expect(read['File:FileType']).toBe(expected.toUpperCase())
      expect(read['IFD0:Make']).toBe(camera.Make)
    })

    it('a plain TIFF is not a raw, even with a raw maker in IFD0', async () => {
      // This project's own fixtures: sharp's TIFF with CAMERA_TAGS (NIKON, COOLPIX P6000) written by ExifTool.
      expect(sniffCameraRaw(await images.make('tiff', { tags: CAMERA_TAGS }))).toBeUndefined()
      expect(sniffCameraRaw(await images.make('tiff'))).toBeUndefined()
      for (const camera of Object.values(RAW_CAMERAS)) {
        expect(sniffCameraRaw(await images.make('tiff', { width: 8, height: 8, tags: camera }))).toBeUndefined()
      }
    })
  })

  it('rejects other images and noise', async () => {
    const others = [
      await images.make('jpeg', { tags: CAMERA_TAGS }),
      await images.make('png', { tags: CAMERA_TAGS }),
      await images.make('webp'),
      buildHeif({ majorBrand: 'heic', primary: { width: 64, height: 48 } }),
      buildJpegXl({ ...RAW_SIZE, container: false }),
      buildJpegXl({ ...RAW_SIZE, container: true }),
      Buffer.alloc(0),
      Buffer.alloc(1024),
      Buffer.from('II*\0', 'latin1'),
      Buffer.from('MM\0*\0\0\0\x08', 'latin1'),
      ...[1, 2, 3, 4, 5, 6, 7, 8].map(seed => noise(64 * seed, seed))
    ]
    for (const bytes of others) expect(sniffCameraRaw(bytes)).toBeUndefined()
    for (let seed = 1; seed <= 200; seed++) {
      expect(sniffCameraRaw(noise(seed * 7, seed))).toBeUndefined()
      expect(isJpegXl(noise(seed * 7, seed))).toBe(false)
    }
  })

  it('tells CR3 from Canon raw movies (CRM), which share the crx brand', async () => {
    const cr3 = await fileFor('cr3')
    const crm = Buffer.from(cr3)
    const at = crm.indexOf('CanonCR3', 0, 'latin1')
    expect(at).toBeGreaterThan(0)
    crm.write('CanonCRM', at, 'latin1')
    expect(sniffCameraRaw(crm)).toBeUndefined()
    // ftyp crx with nothing after it.
    expect(sniffCameraRaw(cr3.subarray(0, cr3.readUInt32BE(0)))).toBeUndefined()
    // A head that ends inside moov, once it holds 'CanonCR3', is enough (real moov boxes can outgrow the head).
    const version = cr3.indexOf('CanonCR3', 0, 'latin1')
    expect(sniffCameraRaw(cr3.subarray(0, version + 8))).toBe('cr3')
    expect(sniffCameraRaw(cr3.subarray(0, version + 7))).toBeUndefined()
  })
})

describe('sniffCameraRaw on hand-made IFD0s', () => {
  it.each([
    { name: 'maker without raw structure', entries: [make('NIKON'), model('NIKON D850')], expected: undefined },
    { name: 'SubIFDs', entries: [make('NIKON'), model('NIKON D850'), subIfds], expected: 'nef' },
    { name: 'a reduced-resolution IFD0', entries: [{ tag: 0xfe, type: 4, value: 1 }, make('SONY'), model('ILCE-1')], expected: 'arw' },
    { name: 'CFA pixels in IFD0', entries: [{ tag: 0x106, type: 3, value: 32803 }, make('PENTAX'), model('PENTAX K-5')], expected: 'pef' },
    { name: 'DNGPrivateData', entries: [make('SONY'), model('DSC-R1'), { tag: 0xc634, type: 1, value: 0 }], expected: 'sr2' },
    { name: 'DNGVersion, any maker', entries: [make('Apple'), model('iPhone 15 Pro'), { tag: 0xc612, type: 1, value: 0x01060000 }], expected: 'dng' },
    { name: 'a JPEG preview in a Nikon IFD0 (ExifTool calls that NRW)', entries: [{ tag: 0x103, type: 3, value: 6 }, make('NIKON'), model('NIKON D3'), { tag: 0x201, type: 4, value: 0 }], expected: 'nrw' },
    { name: 'JPEG-in-TIFF without JPEGInterchangeFormat', entries: [{ tag: 0x103, type: 3, value: 6 }, make('NIKON'), model('NIKON D3')], expected: undefined },
    { name: 'COOLPIX A1000', entries: [make('NIKON'), model('COOLPIX A1000'), subIfds], expected: 'nrw' },
    { name: 'an old Coolpix (model E5700) that wrote NEF', entries: [make('NIKON'), model('E5700'), subIfds], expected: 'nef' },
    { name: 'ASAHI', entries: [make('ASAHI OPTICAL CO.,LTD'), model('PENTAX *ist D'), subIfds], expected: 'pef' },
    { name: 'a Ricoh GR without DNGVersion', entries: [make('RICOH IMAGING COMPANY, LTD.'), model('GR III'), subIfds], expected: undefined },
    { name: 'a Hasselblad Lunar (a Sony)', entries: [make('Hasselblad'), model('Lunar'), subIfds], expected: 'arw' },
    { name: 'a Phase One TIFF without the IIQ header', entries: [make('Phase One'), model('IQ4 150MP'), subIfds], expected: 'iiq' },
    { name: 'an unknown maker', entries: [make('Canon'), model('Canon EOS 5D'), subIfds], expected: undefined },
    { name: 'a short Make stored in the entry', entries: [make('ABC'), subIfds], expected: undefined }
  ] as const)('$name → $expected', ({ entries, expected }) => {
    expect(sniffCameraRaw(ifd0Tiff([...entries]))).toBe(expected)
  })

  it('gives up on IFD0s it cannot read whole', () => {
    const nef = ifd0Tiff([make('NIKON CORPORATION'), model('NIKON D850'), subIfds])
    expect(sniffCameraRaw(nef)).toBe('nef')
    // Make's value cut off: no answer rather than a guess.
    expect(sniffCameraRaw(nef.subarray(0, nef.length - 12))).toBeUndefined()
    // Entry count beyond the cap.
    const huge = Buffer.from(nef)
    huge.writeUInt16LE(1001, 8)
    expect(sniffCameraRaw(Buffer.concat([huge, Buffer.alloc(1001 * 12)]))).toBeUndefined()
    // IFD0 offset pointing outside the head, or into the header.
    for (const offset of [0, 4, 7, 0xffffffff, nef.length]) {
      const moved = Buffer.from(nef)
      moved.writeUInt32LE(offset, 4)
      expect(sniffCameraRaw(moved)).toBeUndefined()
    }
  })

  it('reads big-endian IFD0s and the distinct TIFF-family signatures', () => {
    const signatures: Array<[string, string | undefined]> = [
      ['IIRO\x08\0\0\0', 'orf'],
      ['IIRS\x08\0\0\0', 'orf'],
      ['MMOR\0\0\0\x08', 'orf'],
      ['IIU\0\x18\0\0\0', 'rw2'],
      ['MM\0U\0\0\0\x18', undefined],
      ['II*\0\x10\0\0\0CR\x02\0\0\0\0\0', 'cr2'],
      ['II*\0\x08\0\0\0CR\x02\0\0\0\0\0', undefined], // IFD0 would overlap the CR2 signature
      ['II*\0\x10\0\0\0IIIITwaR', 'iiq'],
      ['MM\0*\0\0\0\x10MMMMRawT', 'iiq'],
      ['II*\0\x10\0\0\0IIII\x01\0\0\0', undefined], // a SensorCalibration header is not a file signature
      ['II\x1a\0\0\0HEAPCCDR', 'crw'],
      ['\0MRM\0\0\0\0', 'mrw'],
      ['FOVb\x03\0\x02\0', 'x3f'],
      ['FUJIFILMCCD-RAW 0201', 'raf'],
      ['FUJIFILM', undefined]
    ]
    for (const [bytes, expected] of signatures) {
      expect(sniffCameraRaw(Buffer.from(bytes, 'latin1'))).toBe(expected)
    }
  })
})

describe('JPEG XL built in code', () => {
  let et: ExifTool
  let dir: string

  beforeAll(async () => {
    et = new ExifTool({ maxProcs: 1 })
    dir = await mkdtemp(join(tmpdir(), 'jpeg-xl-test-'))
  })

  afterAll(async () => {
    await et.end()
    await rm(dir, { recursive: true, force: true })
  })

  it.each([
    { width: 64, height: 48 }, // both multiples of 8 up to 256: the "small" encoding
    { width: 1, height: 1 },
    { width: 255, height: 17 },
    { width: 4032, height: 3024 },
    { width: 2 ** 30, height: 1 }
  ])('encodes $width x $height so that image-size reads it back', (size) => {
    for (const container of [false, true]) {
      const file = buildJpegXl({ ...size, container })
      expect(isJpegXl(file)).toBe(true)
      expect(imageSize(file)).toMatchObject({ ...size, type: container ? 'jxl' : 'jxl-stream' })
    }
  })

  it.each([false, true])('container %s: recognised, and ExifTool writes and reads CAMERA_TAGS', async (container) => {
    const file = buildJpegXl({ ...RAW_SIZE, container })
    expect(isJpegXl(file)).toBe(true)
    expect(sniffCameraRaw(file)).toBeUndefined()
    for (let length = 0; length <= 64; length++) {
      expect(() => isJpegXl(file.subarray(0, length))).not.toThrow()
      expect(sniffCameraRaw(file.subarray(0, length))).toBeUndefined()
    }
    // The two signature bytes alone hold no SizeHeader.
    expect(isJpegXl(file.subarray(0, container ? 23 : 2))).toBe(false)

    const path = join(dir, `photo-${String(container)}.jxl`)
    await writeFile(path, file)
    const before = await et.readRaw(path, { readArgs: READ_ARGS, useMWG: false }) as Record<string, unknown>
    expect(before['File:FileType']).toBe(container ? 'JXL' : 'JXL Codestream')
    expect(before['Composite:ImageSize']).toBe(`${RAW_SIZE.width} ${RAW_SIZE.height}`)

    const result = await et.write(path, CAMERA_TAGS, { writeArgs: ['-overwrite_original'] })
    // A bare codestream has nowhere to keep metadata: ExifTool wraps it in the container first (a minor error it
    // reports as a warning, since exiftool-vendored ignores minor errors).
    expect(result.warnings ?? []).toEqual(container ? [] : [expect.stringContaining('Wrapped JXL codestream in ISO BMFF container')])
    const written = await readFile(path)
    expect(written.subarray(0, 12)).toEqual(buildJpegXl({ ...RAW_SIZE, container: true }).subarray(0, 12))
    expect(isJpegXl(written)).toBe(true)
    const read = await et.readRaw(path, { readArgs: READ_ARGS, useMWG: false }) as Record<string, unknown>
    expect(read).toMatchObject({
      'File:FileType': 'JXL',
      'IFD0:Make': CAMERA_TAGS.Make,
      'IFD0:Model': CAMERA_TAGS.Model,
      'ExifIFD:DateTimeOriginal': CAMERA_TAGS.DateTimeOriginal,
      'Composite:ImageSize': `${RAW_SIZE.width} ${RAW_SIZE.height}`
    })
    expect(String(read['File:FileTypeExtension']).toLowerCase()).toBe('jxl')
    expect(read['GPS:GPSLatitude']).toBeCloseTo(CAMERA_TAGS.GPSLatitude, 6)
    expect(read['GPS:GPSLongitude']).toBeCloseTo(CAMERA_TAGS.GPSLongitude, 6)
  })

  it('rejects other signatures', () => {
    const jp2 = Buffer.from('0000000c6a5020200d0a870a00000014667479706a703220', 'hex')
    const jxlWrongBrand = buildJpegXl({ ...RAW_SIZE, container: true })
    jxlWrongBrand.write('jpx ', 20, 'latin1')
    for (const bytes of [jp2, jxlWrongBrand, Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from([0xff, 0x0a]), Buffer.alloc(0)]) {
      expect(isJpegXl(bytes)).toBe(false)
    }
  })
})
