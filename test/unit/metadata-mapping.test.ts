import { describe, expect, it } from 'vitest'
import { captureTime, toIsoDateTime } from '../../src/metadata/capture-time.ts'
import { DataUriDecoder, maxDataUriBodyBytes } from '../../src/metadata/json-data-uri.ts'
import { sniffImage } from '../../src/metadata/sniff.ts'
import { cameraFrom, gpsFrom, groupedTagsFrom } from '../../src/metadata/tags.ts'

// The plain modules behind POST /v1/metadata, without HTTP or ExifTool.
describe('toIsoDateTime', () => {
  it.each([
    ['2008:10:22 16:38:20', undefined, undefined, '2008-10-22T16:38:20'],
    ['2008:10:22 16:38:20', '052', '+0530', '2008-10-22T16:38:20.052+05:30'],
    ['2008:10:22 16:38:20.5Z', undefined, undefined, '2008-10-22T16:38:20.5Z'],
    ['2008:10:22 16:38', undefined, undefined, '2008-10-22T16:38:00'],
    ['2008:10:22', undefined, undefined, '2008-10-22'],
    ['2024:02:29 00:00:00', undefined, undefined, '2024-02-29T00:00:00'],
    ['0099:01:01 00:00:00', undefined, undefined, '0099-01-01T00:00:00']
  ])('%s (sub-seconds %s, offset %s) → %s', (value, subSeconds, offset, expected) => {
    expect(toIsoDateTime(value, subSeconds, offset)).toBe(expected)
  })

  it.each([
    '0000:00:00 00:00:00', '2023:02:29 10:00:00', '2023:13:01 10:00:00', '2023:04:31 10:00:00',
    '2023:01:01 24:00:00', '2023:01:01 10:60:00', 'yesterday', '    ', '2023:01:01 10:00:00 garbage'
  ])('rejects %j', (value) => {
    expect(toIsoDateTime(value)).toBeNull()
  })

  it('ignores sub-seconds and offsets that are not what EXIF allows', () => {
    expect(toIsoDateTime('2020:01:02 03:04:05', '5a', '+5')).toBe('2020-01-02T03:04:05')
  })
})

describe('captureTime', () => {
  it('prefers DateTimeOriginal, with its own sub-seconds and offset only', () => {
    expect(captureTime({
      'ExifIFD:DateTimeOriginal': '2020:01:02 03:04:05',
      'ExifIFD:SubSecTimeOriginal': 12,
      'ExifIFD:OffsetTimeDigitized': '+03:00',
      'ExifIFD:CreateDate': '2021:01:01 00:00:00'
    })).toBe('2020-01-02T03:04:05.12')
  })

  it('falls through sources that hold no real date, and is null when none does', () => {
    expect(captureTime({ 'ExifIFD:DateTimeOriginal': '    ', 'Keys:CreationDate': '2022:05:06 07:08:09+02:00' })).toBe('2022-05-06T07:08:09+02:00')
    expect(captureTime({ 'IFD0:ModifyDate': '2022:05:06 07:08:09' })).toBeNull()
  })
})

describe('cameraFrom and gpsFrom', () => {
  it('takes numeric models as text, and null when neither is recorded', () => {
    expect(cameraFrom({ 'IFD0:Make': 'Leica', 'IFD0:Model': 5 })).toEqual({ make: 'Leica', model: '5' })
    expect(cameraFrom({ 'IFD0:Make': '   ' })).toBeNull()
    expect(cameraFrom({ 'XMP-tiff:Make': 'Apple', 'Keys:Model': 'iPhone' })).toEqual({ make: 'Apple', model: 'iPhone' })
  })

  it('is null out of range, never -0, and rounds away rational noise', () => {
    expect(gpsFrom({ 'Composite:GPSLatitude': 91, 'Composite:GPSLongitude': 10 })).toBeNull()
    expect(gpsFrom({ 'Composite:GPSLatitude': 10, 'Composite:GPSLongitude': -180.5 })).toBeNull()
    expect(gpsFrom({ 'Composite:GPSLatitude': 'north', 'Composite:GPSLongitude': 10 })).toBeNull()
    expect(gpsFrom({ 'Composite:GPSLatitude': -0.00000001, 'Composite:GPSLongitude': 11.8845382999914 }))
      .toEqual({ latitude: 0, longitude: 11.8845383, altitude: null })
    expect(Object.is(gpsFrom({ 'Composite:GPSLatitude': -0.00000001, 'Composite:GPSLongitude': 0 })?.latitude, -0)).toBe(false)
    expect(gpsFrom({ 'XMP-exif:GPSLatitude': -33.5, 'XMP-exif:GPSLongitude': 151.25, 'Composite:GPSAltitude': 12.34567 }))
      .toEqual({ latitude: -33.5, longitude: 151.25, altitude: 12.346 })
  })
})

describe('groupedTagsFrom', () => {
  it('drops what describes the server\'s temporary copy', () => {
    expect(groupedTagsFrom({ SourceFile: '/tmp/x.jpg', System: { FileName: 'x.jpg' }, IFD0: { Make: 'A' }, errors: [], warnings: [] }))
      .toEqual({ IFD0: { Make: 'A' } })
  })
})

describe('DataUriDecoder', () => {
  /** The URI fed to a decoder in pieces of `pieceLength` characters; every chunk of bytes it gave. */
  const chunksOf = (uri: string, maxBytes: number, pieceLength = uri.length || 1): Buffer[] => {
    const decoder = new DataUriDecoder(maxBytes)
    const chunks: Buffer[] = []
    for (let at = 0; at < uri.length; at += pieceLength) {
      // Copied: the decoder reuses its buffer.
      const bytes = decoder.write(Buffer.from(uri.slice(at, at + pieceLength)))
      if (bytes !== undefined) chunks.push(Buffer.from(bytes))
    }
    const last = decoder.end()
    if (last !== undefined) chunks.push(Buffer.from(last))
    return chunks
  }
  const decoded = (uri: string, maxBytes = 100, pieceLength?: number): Buffer => Buffer.concat(chunksOf(uri, maxBytes, pieceLength))

  it('decodes with parameters before ;base64 and any case in the scheme', () => {
    expect(decoded('DATA:image/PNG;name=a.png;base64,aGk=')).toEqual(Buffer.from('hi'))
  })

  it('counts the decoded size against the limit', () => {
    expect(() => decoded('data:image/png;base64,aGVsbG8=', 4)).toThrow(expect.objectContaining({ code: 'IMAGE_TOO_LARGE' }))
    expect(decoded('data:image/png;base64,aGVsbG8=', 5)).toEqual(Buffer.from('hello'))
  })

  it('decodes a large image piece by piece, each chunk a whole number of base64 quanta, whitespace anywhere', () => {
    const bytes = Buffer.from(Array.from({ length: 3_000_001 }, (_, index) => (index * 7919) % 251))
    const wrapped = bytes.toString('base64').replace(/(.{76})/g, '$1\r\n')
    const chunks = chunksOf(`data:image/jpeg;base64,${wrapped}`, 4_000_000, 65_537)
    expect(chunks.length).toBeGreaterThan(2)
    expect(chunks.slice(0, -1).every((chunk) => chunk.length % 3 === 0)).toBe(true)
    // Compared as a boolean: a diff of two 3 MB buffers would take minutes to print.
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true)
  })

  it('gives the same bytes and the same refusals however the text is cut', () => {
    const uris = [
      'data:image/png;name=a.png;base64,aGVsbG8gd29ybGQ=', 'data:image/png;base64,aGVsbG8gd29ybGQ', 'data:image/png;base64,aGVs\r\nbG8g d29y\tbGQ=',
      'data:image/png;base64,aGVsbG8gd29ybG=Q', 'data:image/png;base64,aGVsbG8gd29ybGQ===', 'data:image/png;base64,aGVsb', 'data:text/plain;base64,aGk=',
      'data:image/png;base64,aG= =', 'data:image/png;base64, \r\n'
    ]
    const outcome = (uri: string, pieceLength?: number): string => {
      try {
        return decoded(uri, 100, pieceLength).toString('hex')
      } catch (error) {
        return (error as { code: string }).code
      }
    }
    for (const uri of uris) {
      const whole = outcome(uri)
      for (let pieceLength = 1; pieceLength < uri.length; pieceLength++) expect(outcome(uri, pieceLength), `${uri} in pieces of ${pieceLength}`).toBe(whole)
    }
    expect(uris.map((uri) => outcome(uri))).toEqual([
      '68656c6c6f20776f726c64', '68656c6c6f20776f726c64', '68656c6c6f20776f726c64',
      'INVALID_BASE64', 'INVALID_BASE64', 'INVALID_BASE64', 'NOT_AN_IMAGE_MEDIA_TYPE', '68', 'NO_IMAGE'
    ])
  })

  it('decodes as Node does from pieces anywhere in memory, cut anywhere, also in one-byte pieces', () => {
    const bytes = Buffer.from(Array.from({ length: 100_003 }, (_, index) => (index * 7919 + (index >> 8)) % 256))
    // Unwrapped: long runs go to Node's decoder, and whole runs of sixteen characters through the word-at-a-time
    // path, from odd addresses too; one line break halfway turns Node's decoder off for the rest.
    const base64 = bytes.toString('base64')
    const plain = Buffer.from(`data:image/jpeg;base64,${base64}`)
    const broken = Buffer.from(`data:image/jpeg;base64,${base64.slice(0, 66_666)}\n${base64.slice(66_666)}`)
    for (const [uri, pieceLength] of [plain, broken].flatMap((uri) => [1, 3, 16, 17, 4093, 65_536].map((length) => [uri, length] as const))) {
      const decoder = new DataUriDecoder(200_000)
      const chunks: Buffer[] = []
      // One byte in front, so that every piece is a view starting one byte into its memory.
      const shifted = Buffer.concat([Buffer.from([0]), uri]).subarray(1)
      for (let at = 0; at < shifted.length; at += pieceLength) {
        const out = decoder.write(shifted.subarray(at, at + pieceLength))
        if (out !== undefined) chunks.push(Buffer.from(out))
      }
      const last = decoder.end()
      if (last !== undefined) chunks.push(Buffer.from(last))
      expect(Buffer.concat(chunks).equals(bytes), `pieces of ${pieceLength}${uri === broken ? ', a line break' : ''}`).toBe(true)
    }
  })

  it('refuses every byte outside the alphabet, whitespace and padding, wherever it stands in a run', () => {
    const allowed = new Set([...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n'].map((character) => character.charCodeAt(0)))
    // Long enough for Node's decoder, which would skip most of these bytes and read base64url's `-` and `_`.
    const data = Buffer.from(`${'aGVsbG8gd29ybGQhIGFnYWluLCBhbmQgYWdhaW4u'.repeat(5)}aG`)
    for (let byte = 0; byte < 256; byte++) {
      if (allowed.has(byte)) continue
      // In a long run, and in the short tail read a byte at a time.
      for (const at of [5, 100, data.length - 1]) {
        const bad = Buffer.concat([Buffer.from('data:image/png;base64,'), data.subarray(0, at), Buffer.from([byte]), data.subarray(at + 1)])
        const decoder = new DataUriDecoder(100)
        expect(() => { decoder.write(bad); decoder.end() }, `byte ${byte} at ${at}`).toThrow(expect.objectContaining({ code: 'INVALID_BASE64' }))
      }
    }
  })

  it('takes the alphabet start of a run it is offered, and keeps what several calls decode until it is taken', () => {
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, index) => (index * 31) % 256))
    const base64 = bytes.toString('base64')
    const decoder = new DataUriDecoder(10_000)
    // Nothing before the header has been read.
    expect(decoder.appendAlphabet(Buffer.from(base64))).toBe(0)
    decoder.append(Buffer.from('data:image/png;base64,'))
    expect(decoder.take()).toBeUndefined()
    // 1001 characters: the last quantum stays open across calls, in runs read natively, as words and a byte at a time.
    expect(decoder.appendAlphabet(Buffer.from(`${base64.slice(0, 1001)}-${base64.slice(1001)}`))).toBe(1001)
    decoder.append(Buffer.from(base64.slice(1001, 2000)))
    expect(decoder.appendAlphabet(Buffer.from(`${base64.slice(2000, 3998)}=`))).toBe(1998)
    expect(decoder.take()!.equals(bytes.subarray(0, 2997))).toBe(true)
    expect(decoder.take()).toBeUndefined()
    decoder.append(Buffer.from(base64.slice(3998)))
    expect(decoder.end()!.equals(bytes.subarray(2997))).toBe(true)
    // Nothing after padding: only whitespace may follow it, and the careful path says so.
    const padded = new DataUriDecoder(100)
    padded.append(Buffer.from('data:image/png;base64,QQ='))
    expect(padded.appendAlphabet(Buffer.from('A'.repeat(64)))).toBe(0)

    const small = new DataUriDecoder(50)
    small.append(Buffer.from('data:image/png;base64,'))
    expect(() => small.appendAlphabet(Buffer.from('A'.repeat(100)))).toThrow(expect.objectContaining({ code: 'IMAGE_TOO_LARGE' }))
  })

  it('keeps the header it read, for people', () => {
    const decoder = new DataUriDecoder(100)
    decoder.write(Buffer.from('data:image/png;name=a.png;ba'))
    expect(decoder.header).toBeUndefined()
    decoder.write(Buffer.from('se64,aGk='))
    expect(decoder.header).toBe('data:image/png;name=a.png;base64')
  })

  it.each([
    ['data:image/png;base64,a', 'INVALID_BASE64'],
    ['data:image/png;base64,aG=k', 'INVALID_BASE64'],
    ['data:image/png;base64,aGk=x', 'INVALID_BASE64'],
    ['data:image/png;base64,a$k=', 'INVALID_BASE64'],
    // Outside the alphabet anywhere: a whole quantum, the unpadded last one, a character beyond Latin-1, base64url.
    ['data:image/png;base64,aGVsbG8g.29ybGQ=', 'INVALID_BASE64'],
    ['data:image/png;base64,aGVsbG8gd29ybG*', 'INVALID_BASE64'],
    ['data:image/png;base64,aGVsbG8gd29ybGQ\u00e9', 'INVALID_BASE64'],
    ['data:image/png;base64,aGVs\u0101G8gd29ybGQ=', 'INVALID_BASE64'],
    ['data:image/png;base64,aGVs-G8gd29ybGQ=', 'INVALID_BASE64'],
    ['data:image/png;base64,aGVsbG8_d29ybGQ=', 'INVALID_BASE64'],
    ['data:image/png;base64,', 'NO_IMAGE'],
    ['', 'NO_IMAGE'],
    ['data:image/png;base64', 'INVALID_DATA_URI'],
    ['data:image/png;base64,\r\n', 'NO_IMAGE'],
    ['data:image/png,aGk=', 'INVALID_DATA_URI'],
    ['image/png;base64,aGk=', 'INVALID_DATA_URI'],
    [`data:image/png;${'x'.repeat(600)};base64,aGk=`, 'INVALID_DATA_URI'],
    ['data:text/plain;base64,aGk=', 'NOT_AN_IMAGE_MEDIA_TYPE']
  ])('refuses %j with %s', (uri, code) => {
    expect(() => decoded(uri)).toThrow(expect.objectContaining({ code }))
  })

  it('sizes the JSON body limit for a full-size image', () => {
    const limit = 26_214_400
    const body = JSON.stringify({ image: `data:image/jpeg;base64,${Buffer.alloc(limit).toString('base64')}` })
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(maxDataUriBodyBytes(limit))
  })
})

describe('sniffImage', () => {
  it('refuses formats image-size knows but the service does not take', () => {
    const icon = Buffer.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0, 0, 0, 0, 0, 22, 0, 0, 0])
    expect(sniffImage(icon)).toBeUndefined()
    expect(sniffImage(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'))).toBeUndefined()
    expect(sniffImage(Buffer.alloc(0))).toBeUndefined()
  })

  it('reads nothing past the bytes it is given, even when they are a view of a larger buffer', () => {
    // A PNG cut inside its header chunk, as a short upload lands in Node's shared buffer pool: what follows it in
    // the pool (here, a plausible IHDR) belongs to someone else and must not size it.
    const pool = Buffer.alloc(64)
    const cut = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
    cut.copy(pool, 8)
    pool.writeUInt32BE(4000, 24)
    pool.writeUInt32BE(3000, 28)
    const view = pool.subarray(8, 8 + cut.length)
    expect(sniffImage(view)).toBeUndefined()
    expect(sniffImage(pool.subarray(8, 32))).toEqual({ format: 'png', width: 4000, height: 3000 })
  })
})
