import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { InjectOptions } from 'fastify'
import { IMAGE_FORMATS } from '../../src/metadata/formats.ts'
import { AUTH, createTestApp, imageForm, multipart, type TestApp } from '../support/app.ts'
import { buildHeif } from '../support/heif-builder.ts'
import { bareProvenance, CAMERA_TAGS, dataUri, type FixtureTags, ImageFactory, PICTURE_FORMATS, pngWithMetadataAfterPixels } from '../support/images.ts'

let t: TestApp
let images: ImageFactory

beforeAll(async () => {
  t = await createTestApp()
  images = new ImageFactory()
})
afterAll(async () => {
  await images.close()
  await t.close()
})
afterEach(async () => {
  // No request, successful or not, leaves a scratch file behind.
  expect(await t.scratchFiles()).toEqual([])
})

async function postJson (body: unknown, url = '/v1/metadata'): Promise<{ status: number, body: Record<string, unknown>, headers: Record<string, unknown> }> {
  const response = await t.app.inject({
    method: 'POST',
    url,
    headers: { ...AUTH, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body)
  })
  return { status: response.statusCode, body: response.json(), headers: response.headers }
}

async function postForm (form: FormData, url = '/v1/metadata'): Promise<{ status: number, body: Record<string, unknown> }> {
  const { payload, headers } = await multipart(form)
  const response = await t.app.inject({ method: 'POST', url, headers: { ...AUTH, ...headers }, payload } satisfies InjectOptions)
  return { status: response.statusCode, body: response.json() }
}

async function jpegWith (tags: FixtureTags): Promise<Buffer> {
  return await images.make('jpeg', { tags })
}

function envelope (statusCode: number, code: string, error: string, message: string): Record<string, unknown> {
  return { statusCode, code, error, message }
}

describe('a camera JPEG', () => {
  it('answers the documented example shape, with every member present', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const { status, body } = await postJson({ image: dataUri(image, 'image/jpeg') })
    expect(status).toBe(200)
    expect(body).toEqual({
      camera: { make: 'NIKON', model: 'COOLPIX P6000' },
      datetime: '2008-10-22T16:38:20',
      gps: { latitude: 43.4670816, longitude: 11.8845383, altitude: null },
      resolution: { width: 64, height: 48 },
      format: 'jpeg',
      filesize_kb: Math.round(image.length / 1024),
      filesize_bytes: image.length,
      provenance: bareProvenance(image)
    })
  })

  it('is answered at the /api/v1 alias too', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const { status, body } = await postForm(imageForm(image), '/api/v1/metadata')
    expect(status).toBe(200)
    expect(body).toMatchObject({ format: 'jpeg', camera: { make: 'NIKON' } })
  })

  it('decides the format from the bytes, not from the declared subtype', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const { status, body } = await postJson({ image: dataUri(image, 'image/png') })
    expect(status).toBe(200)
    expect(body['format']).toBe('jpeg')
  })

  it('accepts base64 wrapped over several lines', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const wrapped = image.toString('base64').replace(/.{76}/g, '$&\r\n')
    const { status, body } = await postJson({ image: `data:image/jpeg;base64,${wrapped}` })
    expect(status).toBe(200)
    expect(body['filesize_bytes']).toBe(image.length)
  })

  it('rounds filesize_kb to the nearest KiB', async () => {
    // 1536 bytes and more of trailer after the image: ExifTool and the sniffer ignore it, the size counts it.
    const image = await jpegWith(CAMERA_TAGS)
    const padded = Buffer.concat([image, Buffer.alloc(1024 * 10 + 512 - (image.length % 1024))])
    const { body } = await postJson({ image: dataUri(padded, 'image/jpeg') })
    expect(body['filesize_bytes']).toBe(padded.length)
    expect(body['filesize_kb']).toBe(Math.ceil(padded.length / 1024))
  })
})

describe('metadata wherever the format allows it', () => {
  it('reads a PNG whose EXIF follows the pixel data (ExifTool\'s -fast2 would stop at IDAT)', async () => {
    const png = await images.make('png', { tags: CAMERA_TAGS })
    const late = pngWithMetadataAfterPixels(png)
    expect(late.indexOf('eXIf')).toBeGreaterThan(late.indexOf('IDAT'))
    const { status, body } = await postForm(imageForm(late, 'late.png'))
    expect(status).toBe(200)
    expect(body).toMatchObject({ camera: { make: 'NIKON', model: 'COOLPIX P6000' }, datetime: '2008-10-22T16:38:20', format: 'png' })
  })
})

describe('datetime', () => {
  it.each([
    ['with sub-seconds and offset', { DateTimeOriginal: '2021:06:01 08:09:10', SubSecTimeOriginal: '052', OffsetTimeOriginal: '-05:00' }, '2021-06-01T08:09:10.052-05:00'],
    ['with an offset only', { DateTimeOriginal: '2021:06:01 08:09:10', OffsetTimeOriginal: '+09:30' }, '2021-06-01T08:09:10+09:30'],
    ['with sub-seconds only, and no invented zone', { DateTimeOriginal: '2021:06:01 08:09:10', SubSecTimeOriginal: '7' }, '2021-06-01T08:09:10.7'],
    ['from CreateDate when DateTimeOriginal is missing', { CreateDate: '2020:02:29 23:59:59', OffsetTimeDigitized: '+01:00' }, '2020-02-29T23:59:59+01:00'],
    ['from CreateDate when DateTimeOriginal is not a real date', { DateTimeOriginal: '0000:00:00 00:00:00', CreateDate: '2019:12:31 10:00:00' }, '2019-12-31T10:00:00'],
    ['from XMP when EXIF has none', { 'XMP-photoshop:DateCreated': '2018:03:04 05:06:07+01:00' }, '2018-03-04T05:06:07+01:00'],
    ['from IPTC date and time', { 'IPTC:DateCreated': '2017:07:08', 'IPTC:TimeCreated': '09:10:11+02:00' }, '2017-07-08T09:10:11+02:00']
  ])('%s', async (_name, tags, expected) => {
    const { status, body } = await postJson({ image: dataUri(await jpegWith(tags), 'image/jpeg') })
    expect(status).toBe(200)
    expect(body['datetime']).toBe(expected)
  })

  it('is null, with the rest present, when only a modification date is recorded', async () => {
    const { status, body } = await postJson({ image: dataUri(await jpegWith({ Make: 'Canon', ModifyDate: '2020:01:01 00:00:00' }), 'image/jpeg') })
    expect(status).toBe(200)
    expect(body['datetime']).toBeNull()
    expect(body['camera']).toEqual({ make: 'Canon', model: null })
  })
})

describe('gps', () => {
  it('is signed: south and west negative, with altitude in metres', async () => {
    // Buenos Aires. exiftool-vendored derives the refs from the sign of the values it writes.
    const tags = { GPSLatitude: -34.6037, GPSLatitudeRef: 'S', GPSLongitude: -58.3816, GPSLongitudeRef: 'W', GPSAltitude: 25.5, GPSAltitudeRef: 0 }
    const { body } = await postJson({ image: dataUri(await jpegWith(tags), 'image/jpeg') })
    expect(body['gps']).toEqual({ latitude: -34.6037, longitude: -58.3816, altitude: 25.5 })
    expect(body['camera']).toBeNull()
    expect(body['datetime']).toBeNull()
  })

  it('gives altitude below sea level as negative', async () => {
    // The Dead Sea shore. Written in a second pass: exiftool-vendored resets GPSAltitudeRef when it derives
    // GPSPosition from coordinates written in the same call.
    const located = await jpegWith({ GPSLatitude: 31.5, GPSLatitudeRef: 'N', GPSLongitude: 35.5, GPSLongitudeRef: 'E' })
    const image = await images.rewrite(located, 'jpeg', { GPSAltitude: 430, GPSAltitudeRef: 'Below Sea Level' })
    const { body } = await postJson({ image: dataUri(image, 'image/jpeg') })
    expect(body['gps']).toEqual({ latitude: 31.5, longitude: 35.5, altitude: -430 })
  })

  it('is null when only a latitude is recorded', async () => {
    const { body } = await postJson({ image: dataUri(await jpegWith({ Model: 'X100V', GPSLatitude: 10, GPSLatitudeRef: 'N' }), 'image/jpeg') })
    expect(body['gps']).toBeNull()
    expect(body['camera']).toEqual({ make: null, model: 'X100V' })
  })
})

describe('camera', () => {
  it('trims what is recorded and keeps one missing member null', async () => {
    const { body } = await postJson({ image: dataUri(await jpegWith({ Make: '  FUJIFILM  ', DateTimeOriginal: '2022:01:01 12:00:00' }), 'image/jpeg') })
    expect(body['camera']).toEqual({ make: 'FUJIFILM', model: null })
  })
})

describe('resolution', () => {
  it('is the size as stored for a rotated photo, not as displayed', async () => {
    const image = await images.make('jpeg', { width: 80, height: 40, tags: { ...CAMERA_TAGS, Orientation: 6 }, writeArgs: ['-n'] })
    const { body } = await postJson({ image: dataUri(image, 'image/jpeg') })
    expect(body['resolution']).toEqual({ width: 80, height: 40 })
  })

  it('ignores EXIF PixelXDimension when the image data says otherwise', async () => {
    const image = await jpegWith({ ...CAMERA_TAGS, ExifImageWidth: 4000, ExifImageHeight: 3000 })
    const { body } = await postJson({ image: dataUri(image, 'image/jpeg') })
    expect(body['resolution']).toEqual({ width: 64, height: 48 })
  })

  it('is the primary image of a HEIC, not its thumbnail listed first', async () => {
    const container = buildHeif({ majorBrand: 'heic', primary: { width: 4032, height: 3024 }, thumbnail: { width: 320, height: 240 }, thumbnailPropertiesFirst: true })
    const image = await images.rewrite(container, 'heic', { Make: 'Apple', Model: 'iPhone 15 Pro', DateTimeOriginal: '2024:05:01 10:11:12', OffsetTimeOriginal: '+02:00' })
    const { status, body } = await postForm(imageForm(image, 'IMG_0001.HEIC'))
    expect(status).toBe(200)
    expect(body).toMatchObject({
      format: 'heic',
      resolution: { width: 4032, height: 3024 },
      camera: { make: 'Apple', model: 'iPhone 15 Pro' },
      datetime: '2024-05-01T10:11:12+02:00'
    })
  })
})

describe('?full=true', () => {
  it('adds every tag, grouped, without anything about the server\'s copy of the file', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/v1/metadata?full=true',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: { image: dataUri(await jpegWith(CAMERA_TAGS), 'image/jpeg') }
    })
    expect(response.statusCode).toBe(200)
    const body = response.json()
    expect(body.tags.IFD0).toMatchObject({ Make: 'NIKON', Model: 'COOLPIX P6000' })
    expect(body.tags.ExifIFD).toMatchObject({ DateTimeOriginal: '2008:10:22 16:38:20' })
    expect(body.tags.File).toMatchObject({ FileType: 'JPEG' })
    expect(body.tags.System).toBeUndefined()
    expect(response.body).not.toContain(t.tempRoot)
    expect(body.camera).toEqual({ make: 'NIKON', model: 'COOLPIX P6000' })
  })

  it('is left out by default and when false', async () => {
    const image = dataUri(await jpegWith(CAMERA_TAGS), 'image/jpeg')
    expect((await postJson({ image })).body['tags']).toBeUndefined()
    expect((await postJson({ image }, '/v1/metadata?full=false')).body['tags']).toBeUndefined()
  })

  it('rejects a value that is not a boolean', async () => {
    const { status, body } = await postJson({ image: dataUri(await jpegWith(CAMERA_TAGS), 'image/jpeg') }, '/v1/metadata?full=yes')
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'VALIDATION_ERROR', 'Bad Request', 'querystring/full must be boolean'))
  })
})

describe('422 Image lacks metadata', () => {
  it('for a stripped photo, with what could still be read', async () => {
    const stripped = await images.make('jpeg', { width: 33, height: 21, tags: {}, writeArgs: ['-all='] })
    const { status, body } = await postJson({ image: dataUri(stripped, 'image/jpeg') })
    expect(status).toBe(422)
    expect(body).toEqual({
      ...envelope(422, 'IMAGE_LACKS_METADATA', 'Unprocessable Entity', 'Image lacks metadata'),
      format: 'jpeg',
      resolution: { width: 33, height: 21 },
      filesize_kb: Math.round(stripped.length / 1024),
      filesize_bytes: stripped.length,
      provenance: bareProvenance(stripped)
    })
  })

  it.each(PICTURE_FORMATS)('for a %s with no metadata at all', async (format) => {
    const bare = await images.make(format, { width: 24, height: 18 })
    const { status, body } = await postForm(imageForm(bare, `bare.${format}`))
    expect(status).toBe(422)
    expect(body).toEqual({
      ...envelope(422, 'IMAGE_LACKS_METADATA', 'Unprocessable Entity', 'Image lacks metadata'),
      format,
      resolution: { width: 24, height: 18 },
      filesize_kb: Math.round(bare.length / 1024),
      filesize_bytes: bare.length,
      provenance: bareProvenance(bare)
    })
  })

  it('for a screenshot that names only its software', async () => {
    const screenshot = await images.make('png', { width: 120, height: 90, tags: { Software: 'Screenshot tool', ImageDescription: 'desk' } })
    const { status, body } = await postForm(imageForm(screenshot, 'screenshot.png'))
    expect(status).toBe(422)
    expect(body).toMatchObject({ code: 'IMAGE_LACKS_METADATA', format: 'png', resolution: { width: 120, height: 90 } })
  })
})

describe('400 Bad Request', () => {
  it.each([
    ['JSON without image', {}],
    ['JSON with an empty image', { image: '' }],
    ['a data URI with no data', { image: 'data:image/jpeg;base64,' }]
  ])('No image provided: %s', async (_name, payload) => {
    const { status, body } = await postJson(payload)
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'NO_IMAGE', 'Bad Request', 'No image provided'))
  })

  it('No image provided: multipart with no file', async () => {
    const form = new FormData()
    form.append('note', 'hello')
    const { status, body } = await postForm(form)
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'NO_IMAGE', 'Bad Request', 'No image provided'))
  })

  it('No image provided: multipart with an empty image file', async () => {
    const { status, body } = await postForm(imageForm(Buffer.alloc(0)))
    expect(status).toBe(400)
    expect(body['code']).toBe('NO_IMAGE')
  })

  it('No image provided: a text field named image is not a file (and is never read as a path)', async () => {
    const form = new FormData()
    form.append('image', '/etc/passwd')
    const { status, body } = await postForm(form)
    expect(status).toBe(400)
    expect(body['code']).toBe('NO_IMAGE')
  })

  it('No image provided: the only file is in another field', async () => {
    const { status, body } = await postForm(imageForm(await jpegWith(CAMERA_TAGS), 'a.jpg', 'photo'))
    expect(status).toBe(400)
    expect(body['code']).toBe('NO_IMAGE')
  })

  it('more than one file', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const form = imageForm(image)
    form.append('image', new Blob([image]), 'second.jpg')
    const { status, body } = await postForm(form)
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'TOO_MANY_FILES', 'Bad Request', 'Send exactly one file, in the multipart field "image"'))
  })

  it('more than one file, the other in another field', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const form = imageForm(image)
    form.append('extra', new Blob([image]), 'extra.jpg')
    expect((await postForm(form)).body['code']).toBe('TOO_MANY_FILES')
  })

  it.each([
    ['not a data URI', 'just some text', 'INVALID_DATA_URI'],
    ['a URL', 'https://example.com/photo.jpg', 'INVALID_DATA_URI'],
    ['a data URI without ;base64', 'data:image/jpeg,abcd', 'INVALID_DATA_URI'],
    ['invalid base64', 'data:image/jpeg;base64,@@@@', 'INVALID_BASE64'],
    ['base64 of impossible length', 'data:image/jpeg;base64,abcde', 'INVALID_BASE64']
  ])('%s', async (_name, image, code) => {
    const { status, body } = await postJson({ image })
    expect(status).toBe(400)
    expect(body['code']).toBe(code)
    expect(typeof body['message']).toBe('string')
  })

  it('a non-image media type in the data URI', async () => {
    const { status, body } = await postJson({ image: 'data:text/html;base64,PGgxPmhpPC9oMT4=' })
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'NOT_AN_IMAGE_MEDIA_TYPE', 'Bad Request',
      'The data URI declares the media type text/html; only image/* media types are accepted'))
  })

  it('JSON that does not parse', async () => {
    const { status, body } = await postJson('{"image": "data:image/jpeg;base64,')
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'INVALID_JSON', 'Bad Request', 'The request body is not valid JSON'))
  })

  it('an image member that is not a string', async () => {
    const { status, body } = await postJson({ image: { data: 'abc' } })
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'VALIDATION_ERROR', 'Bad Request', 'body/image must be string'))
  })

  it('a body that is not a JSON object', async () => {
    const { status, body } = await postJson(['data:image/jpeg;base64,AAAA'])
    expect(status).toBe(400)
    expect(body).toEqual(envelope(400, 'VALIDATION_ERROR', 'Bad Request', 'body must be object'))
  })
})

describe('413 Payload Too Large', () => {
  let small: TestApp
  beforeAll(async () => { small = await createTestApp({ maxImageBytes: 4096, maxUploadBytes: 4096 }) })
  afterAll(async () => { await small.close() })

  it('for a JSON image over the limit', async () => {
    const image = await images.make('png', { width: 200, height: 200, tags: CAMERA_TAGS })
    expect(image.length).toBeGreaterThan(4096)
    const response = await small.app.inject({
      method: 'POST', url: '/v1/metadata', headers: AUTH, payload: { image: dataUri(image, 'image/png') }
    })
    expect(response.statusCode).toBe(413)
    expect(response.json()).toEqual(envelope(413, 'IMAGE_TOO_LARGE', 'Payload Too Large', 'The image is larger than the limit of 4096 bytes'))
  })

  it('for a JSON image just over the limit that still fits the body limit', async () => {
    const image = Buffer.concat([await jpegWith(CAMERA_TAGS), Buffer.alloc(8192)]).subarray(0, 4097)
    const response = await small.app.inject({
      method: 'POST', url: '/v1/metadata', headers: AUTH, payload: { image: dataUri(image, 'image/jpeg') }
    })
    expect(response.statusCode).toBe(413)
    expect(response.json()['code']).toBe('IMAGE_TOO_LARGE')
  })

  it('for a multipart upload over the limit, leaving no scratch file', async () => {
    const image = await images.make('png', { width: 200, height: 200, tags: CAMERA_TAGS })
    const { payload, headers } = await multipart(imageForm(image, 'big.png'))
    const response = await small.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
    expect(response.statusCode).toBe(413)
    expect(response.json()).toEqual(envelope(413, 'IMAGE_TOO_LARGE', 'Payload Too Large', 'The image is larger than the limit of 4096 bytes'))
    expect(await small.scratchFiles()).toEqual([])
  })

  it('an image of exactly the limit is accepted', async () => {
    const image = await jpegWith(CAMERA_TAGS)
    const exact = Buffer.concat([image, Buffer.alloc(4096 - image.length)])
    const { payload, headers } = await multipart(imageForm(exact))
    const response = await small.app.inject({ method: 'POST', url: '/v1/metadata', headers: { ...AUTH, ...headers }, payload })
    expect(response.statusCode).toBe(200)
    expect(response.json()['filesize_bytes']).toBe(4096)
  })
})

describe('415 Unsupported Media Type', () => {
  it.each(['text/plain', 'application/octet-stream', 'image/jpeg', 'application/x-www-form-urlencoded'])(
    'for Content-Type %s', async (contentType) => {
      const response = await t.app.inject({
        method: 'POST', url: '/v1/metadata', headers: { ...AUTH, 'content-type': contentType }, payload: 'x'
      })
      expect(response.statusCode).toBe(415)
      expect(response.json()).toEqual(envelope(415, 'UNSUPPORTED_CONTENT_TYPE', 'Unsupported Media Type',
        'Content-Type must be one of: application/json, multipart/form-data'))
    })

  const notSupported: Array<[string, Buffer]> = [
    ['SVG (scriptable XML)', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>')],
    ['BMP', Buffer.concat([Buffer.from('BM'), Buffer.alloc(12), Buffer.from([40, 0, 0, 0, 10, 0, 0, 0, 10, 0, 0, 0, 1, 0, 24, 0]), Buffer.alloc(64)])],
    ['PDF', Buffer.from('%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n')],
    ['DjVu (the CVE-2021-22204 vector)', Buffer.concat([Buffer.from('AT&TFORM'), Buffer.from([0, 0, 0, 32]), Buffer.from('DJVUINFO'), Buffer.alloc(24)])],
    ['random bytes', Buffer.from(Array.from({ length: 256 }, (_, i) => (i * 73 + 11) % 256))],
    ['a truncated JPEG header', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10])]
  ]

  it.each(notSupported)('for %s sent as a data URI', async (_name, bytes) => {
    const { status, body } = await postJson({ image: dataUri(bytes, 'image/jpeg') })
    expect(status).toBe(415)
    expect(body).toEqual(envelope(415, 'UNSUPPORTED_IMAGE_FORMAT', 'Unsupported Media Type',
      `The file is not an image in a supported format (${IMAGE_FORMATS.join(', ')})`))
  })

  it.each(notSupported)('for %s sent as multipart', async (_name, bytes) => {
    const { status, body } = await postForm(imageForm(bytes, 'photo.jpg'))
    expect(status).toBe(415)
    expect(body['code']).toBe('UNSUPPORTED_IMAGE_FORMAT')
  })
})
