import { ExifTool } from 'exiftool-vendored'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { CAMERA_RAW_FORMATS, type CameraRawFormat } from '../../src/metadata/camera-raw.ts'
import { AUTH, createTestApp, imageForm, multipart, type TestApp } from '../support/app.ts'
import { bareProvenance, CAMERA_TAGS, dataUri, ImageFactory } from '../support/images.ts'
import { buildCameraRaw, buildJpegXl, RAW_CAMERAS, RAW_SIZE } from '../support/raw-builder.ts'

// Camera raw and JPEG XL through the API: minimal files of each format built in code (test/support/raw-builder.ts),
// their tags written by the real ExifTool, read by the service's own pool.
let t: TestApp
let exiftool: ExifTool
let images: ImageFactory

beforeAll(async () => {
  t = await createTestApp()
  exiftool = new ExifTool({ maxProcs: 1 })
  images = new ImageFactory()
})
afterAll(async () => {
  await Promise.all([t.close(), exiftool.end(), images.close()])
})
afterEach(async () => {
  expect(await t.scratchFiles()).toEqual([])
})

async function upload (bytes: Buffer, filename = 'upload.bin'): Promise<{ status: number, body: Record<string, unknown> }> {
  const { payload, headers } = await multipart(imageForm(bytes, filename))
  const response = await t.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
  return { status: response.statusCode, body: response.json() }
}

async function raw (format: CameraRawFormat, tags: Record<string, string | number> = {}): Promise<Buffer> {
  return await buildCameraRaw(format, exiftool, { ...CAMERA_TAGS, ...RAW_CAMERAS[format], ...tags })
}

describe.each(CAMERA_RAW_FORMATS)('camera raw: %s', (format) => {
  it('is recognised from its bytes, whatever the file is called, with camera, time, position and the full-size image', async () => {
    const bytes = await raw(format)
    // Named .jpg: the name never decides the format.
    const { status, body } = await upload(bytes, 'IMG_0001.jpg')
    expect(status).toBe(200)
    expect(body).toEqual({
      camera: { make: RAW_CAMERAS[format].Make, model: RAW_CAMERAS[format].Model },
      datetime: '2008-10-22T16:38:20',
      gps: { latitude: 43.4670816, longitude: 11.8845383, altitude: null },
      resolution: RAW_SIZE,
      format,
      filesize_kb: Math.round(bytes.length / 1024),
      filesize_bytes: bytes.length,
      provenance: bareProvenance(bytes)
    })
  })
})

describe('camera raw', () => {
  it('is read from a JSON data URI too', async () => {
    const bytes = await raw('dng')
    const response = await t.app.inject({ method: 'POST', url: '/v1/metadata', headers: AUTH, payload: { image: dataUri(bytes, 'image/x-adobe-dng') } })
    expect(response.statusCode).toBe(200)
    expect(response.json()).toMatchObject({ format: 'dng', camera: { make: 'LEICA CAMERA AG', model: 'LEICA M11' }, resolution: RAW_SIZE })
  })

  it('takes the camera from Canon\'s maker notes when the main IFD names none', async () => {
    const bytes = await raw('cr3')
    const stripped = await images.rewrite(bytes, 'cr3', {}, ['-IFD0:Make=', '-IFD0:Model=', '-XMP:all='])
    const { status, body } = await upload(stripped)
    expect(status).toBe(200)
    expect(body).toMatchObject({ format: 'cr3', camera: { make: 'Canon', model: 'Canon EOS R5' }, datetime: '2008-10-22T16:38:20' })
  })

  it('is 422, with its format and full size, when the raw records no camera, time or position', async () => {
    // ORF is known by its own signature, so it stays an ORF with its metadata gone. (ExifTool's -all= keeps a raw
    // file's make and model, which its maker notes need: they are removed by name.)
    const stripped = await images.rewrite(await raw('orf'), 'orf', {}, ['-all=', '-IFD0:Make=', '-IFD0:Model=', '-ExifIFD:DateTimeOriginal='])
    const { status, body } = await upload(stripped)
    expect(status).toBe(422)
    expect(body).toMatchObject({ code: 'IMAGE_LACKS_METADATA', format: 'orf', resolution: RAW_SIZE })
  })

  it('a TIFF from a raw maker\'s camera, without a raw\'s structure, stays a TIFF', async () => {
    const tiff = await images.make('tiff', { width: 40, height: 30, tags: { ...CAMERA_TAGS, Make: 'NIKON CORPORATION', Model: 'NIKON D850' } })
    const { status, body } = await upload(tiff)
    expect(status).toBe(200)
    expect(body).toMatchObject({ format: 'tiff', resolution: { width: 40, height: 30 }, camera: { make: 'NIKON CORPORATION' } })
  })
})

describe.each([['codestream', false], ['container', true]] as const)('JPEG XL (%s)', (_kind, container) => {
  it('is recognised and read, with the size from its header', async () => {
    const bare = buildJpegXl({ width: 300, height: 200, container })
    const tagged = await images.rewrite(bare, 'jxl', CAMERA_TAGS)
    const { status, body } = await upload(tagged)
    expect(status).toBe(200)
    expect(body).toMatchObject({
      format: 'jxl',
      resolution: { width: 300, height: 200 },
      camera: { make: 'NIKON', model: 'COOLPIX P6000' },
      datetime: '2008-10-22T16:38:20',
      gps: { latitude: 43.4670816, longitude: 11.8845383 }
    })
  })

  it('without metadata is 422 with its size', async () => {
    const bare = buildJpegXl({ width: 300, height: 200, container })
    const { status, body } = await upload(bare)
    expect(status).toBe(422)
    expect(body).toMatchObject({ code: 'IMAGE_LACKS_METADATA', format: 'jxl', resolution: { width: 300, height: 200 } })
  })
})
