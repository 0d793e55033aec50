import { deflateSync } from 'node:zlib'
import sharp from 'sharp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AUTH, createTestApp, imageForm, listen, type TestApp } from '../support/app.ts'
import { TestPki } from '../support/content-credentials.ts'
import { buildHeif } from '../support/heif-builder.ts'
import * as h from '../support/hostile-files.ts'
import { readFromBytes } from '../../src/metadata/binary-reader.ts'
import { checkCbor } from '../../src/metadata/jumbf.ts'
import { MAX_CBOR_DEPTH, MAX_XMP_DEPTH, StructureTally } from '../../src/metadata/structure-limits.ts'
import { XmpDepthScanner } from '../../src/metadata/xmp-depth.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'

// The cheap structure guard before ExifTool (src/metadata/structure-guard.ts), over HTTP: files that made ExifTool
// take gigabytes or seconds, or crash, are refused at once with 415 IMAGE_TOO_COMPLEX naming what was too deep or too
// many; files with the same structures at real-world sizes are still read. Every hostile file is built here.

/** Well under what any of these files cost ExifTool before the guard (10 s to over 20 s), with room for a loaded machine. */
const REFUSED_WITHIN_MS = 3000

let app: TestApp
let base: string
let images: ImageFactory
let jpeg: Buffer
let png: Buffer
let webp: Buffer
const heic = buildHeif({ majorBrand: 'heic', primary: { width: 64, height: 48 } })

beforeAll(async () => {
  // One ExifTool process: a hostile file that reached it would hold up everything behind it.
  app = await createTestApp({ exiftool: { procs: 1, taskTimeoutMs: 20_000, maxQueue: 64 } })
  base = await listen(app)
  images = new ImageFactory()
  const pixels = sharp({ create: { width: 64, height: 48, channels: 3, background: '#808080' } })
  jpeg = await pixels.clone().jpeg().toBuffer()
  png = await pixels.clone().png().toBuffer()
  webp = await pixels.clone().webp().toBuffer()
})
afterAll(async () => {
  await images.close()
  await app.close()
})

async function send (image: Buffer, name: string, query = ''): Promise<{ status: number, body: Record<string, unknown>, ms: number }> {
  const started = Date.now()
  const response = await fetch(`${base}/v1/metadata${query}`, { method: 'POST', headers: AUTH, body: imageForm(image, name) })
  return { status: response.status, body: await response.json() as Record<string, unknown>, ms: Date.now() - started }
}

function tooComplex (problem: string): Record<string, unknown> {
  return { statusCode: 415, code: 'IMAGE_TOO_COMPLEX', error: 'Unsupported Media Type', message: `The image's structure is beyond what the service reads: ${problem}` }
}

const jpegJumbf = (store: Buffer): Buffer => h.withJpegSegments(jpeg, ...h.jpegJumbfSegments(store))
const size16 = [{ tag: 0x100, type: 3, count: 1, value: Buffer.from([16, 0]) }, { tag: 0x101, type: 3, count: 1, value: Buffer.from([16, 0]) }]
/** A TIFF whose Exif directory has a bare-directory maker note (as Canon writes) of `entries` entries. */
const withMakerNotes = (entries: number): h.TiffDirectory => ({
  entries: [...size16, h.ascii(0x10f, 'Canon'), h.ascii(0x110, 'Canon EOS 5D')],
  children: [{ tag: 0x8769, directory: { entries: [h.ascii(0x9003, '2008:10:22 16:38:20')], makerNotes: { header: Buffer.alloc(0), directory: { entries: h.fillerEntries(entries, 0x0100) } } } }]
})

describe('the scanners count what nests, and nothing else', () => {
  /** The deepest nesting the scanner saw in `xml`, fed a byte at a time; fed whole, it ends at the same depth. */
  function deepest (xml: string): number {
    const whole = new XmpDepthScanner()
    whole.feed(Buffer.from(xml))
    const bytewise = new XmpDepthScanner()
    let deepestSeen = 0
    for (const byte of Buffer.from(xml)) {
      bytewise.feed(Buffer.from([byte]))
      deepestSeen = Math.max(deepestSeen, bytewise.depth)
    }
    expect(whole.depth).toBe(bytewise.depth)
    return deepestSeen
  }

  it('XMP: start tags count, self-closing ones, end tags, comments, CDATA, instructions and quoted \'>\' do not', () => {
    expect(deepest('<a><b><c/></b></a>')).toBe(2)
    expect(deepest('<?xpacket begin="<a><b>"?><a><!-- <b><c><d> --><![CDATA[<b><c><d>]]><b x="1>2" y=\'<c>\'/></a>')).toBe(1)
    expect(deepest('<!DOCTYPE x><a><b></b><b></b></a>')).toBe(2)
    expect(() => deepest('<a>'.repeat(MAX_XMP_DEPTH + 1))).toThrow(`XMP elements nested more than ${MAX_XMP_DEPTH} deep`)
    expect(deepest('<a>'.repeat(MAX_XMP_DEPTH))).toBe(MAX_XMP_DEPTH)
  })

  it('CBOR: arrays, maps, tags and indefinite-length items nest; strings are skipped whole', async () => {
    const check = async (hex: string): Promise<void> => {
      const bytes = Buffer.from(hex, 'hex')
      await checkCbor(readFromBytes(bytes), 0, bytes.length, new StructureTally())
    }
    // {"a": [1, h'ffff…'], tag 0 "x"}, an indefinite array [_ 1, 2], an indefinite string (_ h'01', h'02').
    await check('a2616182015818' + 'ff'.repeat(24) + 'c06178' + '9f0102ff' + '5f41014102ff')
    await expect(check('81'.repeat(MAX_CBOR_DEPTH) + 'f6')).resolves.toBeUndefined()
    await expect(check('81'.repeat(MAX_CBOR_DEPTH + 1) + 'f6')).rejects.toThrow(`CBOR items nested more than ${MAX_CBOR_DEPTH} deep`)
    await expect(check('9f'.repeat(MAX_CBOR_DEPTH + 1))).rejects.toThrow('nested more than')
    await expect(check('c1'.repeat(MAX_CBOR_DEPTH + 1) + '00')).rejects.toThrow('nested more than')
  })
})

describe('structures that grew ExifTool to gigabytes or held it for seconds', () => {
  const cases: Array<[string, () => Buffer, string, string]> = [
    ['a 60 KB JPEG of CBOR arrays nested 60,000 deep in its JUMBF', () => jpegJumbf(h.storeWithCbor(h.nestedCbor(60_000))), 'cbor.jpg', 'CBOR items nested more than 64 deep'],
    ['a JPEG whose CBOR holds 20,000 items', () => jpegJumbf(h.storeWithCbor(h.wideCbor(20_000))), 'items.jpg', 'more than 10000 CBOR items'],
    ['a JPEG of JUMBF boxes nested 3,000 deep', () => jpegJumbf(h.nestedJumbf(3000)), 'jumbf.jpg', 'JUMBF boxes nested more than 16 deep'],
    ['a JPEG of 3,000 sibling JUMBF boxes', () => jpegJumbf(h.wideJumbf(3000)), 'boxes.jpg', 'more than 2000 JUMBF boxes'],
    ['a CRW of CIFF heaps nested 20,000 deep', () => h.crwWithNestedHeaps(20_000), 'heaps.crw', 'CIFF heaps nested more than 16 deep'],
    ['a CRW of 5,000 CIFF records', () => h.crwWithManyRecords(5000), 'records.crw', 'more than 2000 CIFF records'],
    ['a 60 KB JPEG of XMP nested 1,700 deep', () => h.withJpegSegments(jpeg, h.jpegXmpSegment(h.nestedXmp(1700))), 'xmp.jpg', 'XMP elements nested more than 64 deep'],
    ['a 108 KB PNG of XMP nested 3,000 deep', () => h.withPngChunks(png, h.pngXmpChunk(h.nestedXmp(3000))), 'xmp.png', 'XMP elements nested more than 64 deep'],
    ['the same XMP compressed in an iTXt chunk', () => h.withPngChunks(png, h.pngXmpChunk(h.nestedXmp(3000), true)), 'xmpz.png', 'XMP elements nested more than 64 deep'],
    ['a PNG whose compressed XMP inflates past 64 MiB', () => h.withPngChunks(png, h.pngChunk('iTXt', Buffer.concat([
      Buffer.from('XML:com.adobe.xmp\0\x01\0\0\0', 'latin1'), deflateSync(Buffer.alloc(65 * 1024 * 1024 + 1, 0x20))
    ]))), 'bomb.png', 'a compressed XMP packet of more than 64 MiB'],
    ['a TIFF with three 60,159-entry maker notes', () => h.tiffBlock(withMakerNotes(60_159), [withMakerNotes(60_159), withMakerNotes(60_159)]), 'makernotes.tif', 'a TIFF directory of 60159 entries (at most 1000)'],
    ['a TIFF of 63 chained directories of 1,000 entries', () => h.tiffBlock({ entries: [...size16, h.ascii(0x10f, 'Canon'), ...h.fillerEntries(997)] },
      Array.from({ length: 62 }, () => ({ entries: h.fillerEntries(1000) }))), 'chain.tif', 'more than 5000 TIFF directory entries in all'],
    ['a HEIC followed by 200,000 empty free boxes', () => h.withFreeBoxes(heic, 200_000), 'free.heic', 'more than 2000 ISO BMFF boxes'],
    ['a PNG whose eXIf chunk holds a 60,000-entry directory', () => h.withPngChunks(png, h.pngChunk('eXIf', h.exifBlock({ ifd0: h.fillerEntries(60_000) }))), 'wide.png', 'a TIFF directory of 60003 entries (at most 1000)'],
    ['a WebP whose EXIF chunk holds a 60,000-entry directory', () => h.withWebpChunks(webp, { type: 'EXIF', data: h.exifBlock({ ifd0: h.fillerEntries(60_000) }) }), 'wide.webp', 'a TIFF directory of 60003 entries (at most 1000)']
  ]

  it.each(cases)('%s: 415 IMAGE_TOO_COMPLEX before ExifTool', async (_name, build, filename, problem) => {
    const answer = await send(build(), filename, '?full=true')
    expect(answer.status).toBe(415)
    expect(answer.body).toEqual(tooComplex(problem))
    expect(answer.ms).toBeLessThan(REFUSED_WITHIN_MS)
    expect(await app.scratchFiles()).toEqual([])
  })

  it('the directory limits reach a HEIF\'s Exif item', async () => {
    const written = await images.make('heic', { width: 64, height: 48, tags: CAMERA_TAGS })
    // ExifTool added an Exif item; its IFD0 now claims 60,000 entries.
    const hostile = Buffer.from(written)
    const tiff = [hostile.indexOf('MM\0*', 0, 'latin1'), hostile.indexOf('II*\0', 0, 'latin1')].filter((at) => at > 0)[0]!
    const little = hostile.toString('latin1', tiff, tiff + 2) === 'II'
    const ifd0 = tiff + (little ? hostile.readUInt32LE(tiff + 4) : hostile.readUInt32BE(tiff + 4))
    if (little) hostile.writeUInt16LE(60_000, ifd0)
    else hostile.writeUInt16BE(60_000, ifd0)
    expect((await send(written, 'photo.heic')).status).toBe(200)
    const answer = await send(hostile, 'hostile.heic')
    expect(answer.body).toEqual(tooComplex('a TIFF directory of 60000 entries (at most 1000)'))
  })
})

describe('files that crashed ExifTool on every read', () => {
  const profile = 'an Exif ProfileIFD (tag 0xC6F5), a DNG tag ExifTool cannot read in this format'
  it.each([
    ['JPEG', () => h.withJpegSegments(jpeg, h.jpegExifSegment(h.exifWithProfileIfd())), 'profile.jpg', profile],
    ['PNG eXIf', () => h.withPngChunks(png, h.pngChunk('eXIf', h.exifWithProfileIfd())), 'profile.png', profile],
    ['WebP EXIF', () => h.withWebpChunks(webp, { type: 'EXIF', data: h.exifWithProfileIfd() }), 'profile.webp', profile],
    ['a JPEG APP11 JUMBF box with a 64-bit size', () => jpegJumbf(h.jumbfWithLargeSize(h.storeWithCbor(h.nestedCbor(2)))), 'large.jpg',
      'a JUMBF box with a 64-bit size in a JPEG APP11 segment, which ExifTool cannot read']
  ])('%s: 415 at once, where it was 503 EXTRACTOR_UNAVAILABLE after two crashed children', async (_name, build, filename, problem) => {
    const answer = await send(build(), filename)
    expect(answer.status).toBe(415)
    expect(answer.body).toEqual(tooComplex(problem))
  })

  it('a ProfileIFD in a TIFF, where DNG keeps its camera profiles, is read', async () => {
    const tiff = h.tiffBlock({ entries: [...size16, h.ascii(0x10f, 'Canon'), h.ascii(0x110, 'Canon EOS 5D')], children: [{ tag: 0xc6f5, directory: { entries: h.fillerEntries(4) }, type: 13 }] })
    const answer = await send(tiff, 'profile.tif')
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ camera: { make: 'Canon', model: 'Canon EOS 5D' }, format: 'tiff' })
  })
})

describe('the same structures at real-world sizes are read', () => {
  it.each([
    ['XMP nested 20 deep', () => h.withJpegSegments(jpeg, h.jpegExifSegment(h.exifBlock()), h.jpegXmpSegment(h.nestedXmp(20))), 'xmp.jpg'],
    ['compressed XMP in a PNG', () => h.withPngChunks(png, h.pngChunk('eXIf', h.exifBlock()), h.pngXmpChunk(h.nestedXmp(20), true)), 'xmp.png'],
    ['a manifest store of 300 boxes and 2,000 CBOR items', () => h.withJpegSegments(jpeg, h.jpegExifSegment(h.exifBlock()),
      ...h.jpegJumbfSegments(h.wideJumbf(150)), ...h.jpegJumbfSegments(h.storeWithCbor(h.wideCbor(2000)))), 'store.jpg'],
    ['a TIFF with a 300-entry maker note and 2,000 entries in all', () => h.tiffBlock(withMakerNotes(300), [{ entries: h.fillerEntries(900) }, { entries: h.fillerEntries(800) }]), 'camera.tif'],
    ['a HEIC with 500 padding boxes', () => h.withFreeBoxes(heic, 500), 'padded.heic']
  ])('%s', async (_name, build, filename) => {
    const answer = await send(build(), filename, '?full=true')
    expect([200, 422]).toContain(answer.status)
    expect(answer.body).toHaveProperty(answer.status === 200 ? 'format' : 'resolution')
  })
})

describe('metadata that was read wrong on real layouts', () => {
  it('an early PowerShot JPEG (JFIF + CIFF, no Exif): make, model and capture time from the CIFF block, not 422', async () => {
    const image = h.jpegWithCiff(jpeg, 'Canon', 'Canon PowerShot S10', new Date(Date.UTC(2000, 4, 6, 10, 30, 0)))
    const answer = await send(image, 'IMG_0001.JPG')
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({
      camera: { make: 'Canon', model: 'Canon PowerShot S10' },
      datetime: '2000-05-06T10:30:00',
      format: 'jpeg',
      resolution: { width: 64, height: 48 }
    })
  })

  it('a pre-release C2PA manifest: its claim generator as recorded, invalid with c2pa-rs\'s pre-release code', async () => {
    const photo = await images.make('jpeg', { width: 64, height: 48, tags: CAMERA_TAGS })
    const generator = 'Adobe_Photoshop/22.5.0 adobe_c2pa/0.7.6 c2pa-rs/0.7.0'
    const answer = await send(h.withJpegSegments(photo, ...h.jpegJumbfSegments(h.prereleaseManifestStore(generator))), 'prerelease.jpg')
    expect(answer.status).toBe(200)
    expect((answer.body['provenance'] as Record<string, unknown>)['content_credentials']).toEqual({
      claim_generator: generator,
      title: null,
      actions: [],
      digital_source_types: [],
      ai_generated: false,
      ingredients: 0,
      signer: null,
      signed_at: null,
      integrity: 'invalid',
      trusted: false,
      validation_codes: ['com.adobe.prerelease']
    })
  })
})

describe('a TIFF carrying C2PA, in the layouts c2pa-rs writes', () => {
  // The probe's file (from the C2PA project's tests) could not be had here; these are the two layouts c2pa-rs writes:
  // the store in IFD0's tag 0xCD41 (C2PA 1.3), or in an IFD of its own at the end of the chain (1.4 on).
  const store = h.storeWithCbor(h.wideCbor(10))
  const c2pa = { tag: 0xcd41, type: 7, count: store.length, value: store }
  const camera = [...size16, h.ascii(0x10f, 'Canon'), h.ascii(0x110, 'Canon EOS 5D')]
  it.each([
    ['in IFD0', h.tiffBlock({ entries: [...camera, c2pa] })],
    ['in an IFD of its own', h.tiffBlock({ entries: camera }, [{ entries: [c2pa] }])]
  ])('%s: read as a TIFF, its manifest reported', async (_name, tiff) => {
    const answer = await send(tiff, 'c2pa.tif')
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ format: 'tiff', camera: { make: 'Canon', model: 'Canon EOS 5D' }, resolution: { width: 16, height: 16 } })
    expect((answer.body['provenance'] as Record<string, unknown>)['content_credentials']).toMatchObject({ integrity: 'invalid' })
  })
})

describe('Content Credentials of a file larger than the validator reads', () => {
  let pki: TestPki
  let small: TestApp
  beforeAll(async () => {
    pki = await TestPki.create()
    small = await createTestApp({ contentCredentials: { workers: 1, timeoutMs: 10_000, maxBytes: 16 * 1024 } })
  })
  afterAll(async () => {
    await Promise.all([small.close(), pki.close()])
  })

  it('are reported not_checked, with the reason and the claim generator as ExifTool reads it', async () => {
    const signed = await pki.sign(await images.make('jpeg', { width: 64, height: 48, tags: CAMERA_TAGS }), { signer: pki.signer, actions: [{ action: 'c2pa.created' }] })
    expect(signed.length).toBeGreaterThan(16 * 1024)
    const response = await small.app.inject({ method: 'POST', url: '/v1/metadata', headers: AUTH, payload: { image: `data:image/jpeg;base64,${signed.toString('base64')}` } })
    expect(response.statusCode).toBe(200)
    expect(response.json().provenance.content_credentials).toEqual({
      claim_generator: 'chat-metadata-api-tests/1.0',
      title: null,
      actions: [],
      digital_source_types: [],
      ai_generated: false,
      ingredients: 0,
      signer: null,
      signed_at: null,
      integrity: 'not_checked',
      not_checked_reason: 'the file is larger than 16384 bytes, the most the service validates',
      trusted: false,
      validation_codes: []
    })
    const metrics = (await small.app.inject({ method: 'GET', url: '/metrics' })).body
    expect(metrics).toMatch(/^c2pa_validations_total\{outcome="not_checked"\} 1$/m)
  })
})
