import { isUtf8 } from 'node:buffer'
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import secureJson from 'secure-json-parse'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { releaseChunk } from '../../src/metadata/intake.ts'
import { JsonBodyScanner, MAX_NESTING, type JsonKind } from '../../src/metadata/json-data-uri.ts'
import { receiveJsonImageBody, type JsonImageBody } from '../../src/metadata/json-image-body.ts'
import { Rng } from '../support/rng.ts'

// The streaming JSON scanner of POST /v1/metadata and the reading of a body through it into the intake, without
// HTTP. What the scanner accepts and refuses is compared with the service's buffered JSON parser (plugins/json-body.ts:
// UTF-8 only, secure-json-parse), cut into pieces anywhere.

type Outcome = { error: string } | { body: JsonKind | undefined, image: JsonKind | undefined, text: string }

/** How many leading bytes of `run` are base64 alphabet: what the data URI decoder takes of a run it is offered. */
function alphabetPrefix (run: Uint8Array): number {
  let taken = 0
  while (taken < run.length && BASE64_ALPHABET.has(run[taken]!)) taken++
  return taken
}
const BASE64_ALPHABET = new Set(Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'))

/**
 * The body scanned in the pieces `cuts` makes of it: its error's code, or what it is and its image's text. With
 * `take`, runs of the image string are offered to a taker that takes their alphabet prefix, as the decoder does.
 */
function scan (body: Buffer | string, cuts: number[] = [], take = false): Outcome {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body)
  // Copied: a piece is valid only during the call.
  const pieces: Buffer[] = []
  const taker = (run: Uint8Array): number => {
    const taken = alphabetPrefix(run)
    if (taken > 0) pieces.push(Buffer.from(run.subarray(0, taken)))
    return taken
  }
  const scanner = new JsonBodyScanner((piece) => { pieces.push(Buffer.from(piece)) }, take ? taker : undefined)
  try {
    let from = 0
    for (const cut of [...cuts, bytes.length]) {
      scanner.write(bytes.subarray(from, cut))
      from = cut
    }
    scanner.end()
  } catch (error) {
    return { error: (error as { code: string }).code }
  }
  return { body: scanner.bodyKind, image: scanner.imageKind, text: Buffer.concat(pieces).toString('utf8') }
}

function kindOf (value: unknown): JsonKind {
  if (Array.isArray(value)) return 'array'
  if (value === null) return 'null'
  if (value === true) return 'true'
  if (value === false) return 'false'
  return typeof value as JsonKind
}

/** What the buffered parser makes of the same bytes. */
function reference (body: Buffer | string): Outcome {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body)
  if (bytes.length === 0 || !isUtf8(bytes)) return { error: 'INVALID_JSON' }
  let value: unknown
  try {
    value = secureJson.parse(bytes.toString('utf8'), undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch (error) {
    return { error: /forbidden (?:prototype|constructor) property/.test((error as Error).message) ? 'FORBIDDEN_KEY' : 'INVALID_JSON' }
  }
  const isObject = kindOf(value) === 'object'
  const image = isObject && Object.hasOwn(value as object, 'image') ? (value as { image: unknown }).image : undefined
  return {
    body: kindOf(value),
    image: isObject && image !== undefined ? kindOf(image) : undefined,
    // In UTF-8 and back: the scanner hands the text on in UTF-8, where a lone surrogate becomes U+FFFD.
    text: typeof image === 'string' ? Buffer.from(image).toString('utf8') : ''
  }
}

const smallImage = Buffer.from(Array.from({ length: 200 }, (_, index) => (index * 7919) % 251))
/** A PHP-style body: every `/` escaped, a `\u` escape in the header, wrapped base64, members around the image. */
const escapedBody = '\ufeff { "note" : "caf\u00e9 \\"\u{1F600}\\"", "n": -12.5e+3, "list": [true, false, null, {"a": []}],\n' +
  `  "\\u0069mage":"\\u0064ata:image\\/png;name=\u00e9.png;base64,${smallImage.toString('base64').replace(/.{40}/g, '$&\\r\\n').replaceAll('/', '\\/')}",\n` +
  '  "after": {"image": 1, "deep": [[["x"]]]}\t}\r\n'

describe('JsonBodyScanner', () => {
  it('hands on the image string with its escapes resolved, and keeps only the kinds of the rest', () => {
    const expected = reference(escapedBody)
    expect(expected).toMatchObject({ body: 'object', image: 'string' })
    expect(scan(escapedBody)).toEqual(expected)
    expect(scan('{"image":"data:image\\/png;base64,\\u0041\\u00e9\\ud83d\\ude00\\n\\t\\b\\f\\"\\\\"}')).toEqual({
      body: 'object', image: 'string', text: 'data:image/png;base64,A\u00e9\u{1F600}\n\t\b\f"\\'
    })
  })

  it('gives the same result however the body is cut: at every byte, and in pieces of one byte', () => {
    const bytes = Buffer.from(escapedBody)
    const whole = scan(bytes)
    for (let cut = 0; cut <= bytes.length; cut++) expect(scan(bytes, [cut]), `cut at ${cut}`).toEqual(whole)
    expect(scan(bytes, Array.from({ length: bytes.length }, (_, index) => index))).toEqual(whole)
  })

  it('joins a surrogate pair written as two escapes, wherever the body is cut, as JSON.parse does', () => {
    const body = Buffer.from('{"image":"data:image/png;name=\\ud83d\\ude00\\u00e9;base64,aGk=", "x": "\\ud83d"}')
    const whole = scan(body)
    expect(whole).toEqual(reference(body))
    expect(whole).toMatchObject({ text: 'data:image/png;name=\u{1F600}\u00e9;base64,aGk=' })
    for (let cut = 0; cut <= body.length; cut++) expect(scan(body, [cut]), `cut at ${cut}`).toEqual(whole)
    // A high surrogate with no pair is what Buffer.from makes of it, U+FFFD, also when the image string ends on it.
    expect(scan('{"image":"\\ud83d"}')).toMatchObject({ text: '\ufffd' })
    expect(scan(Buffer.from('{"image":"a\\ud83d"}'), [13])).toMatchObject({ text: 'a\ufffd' })
  })

  it('refuses every body cut short, at every byte', () => {
    const bytes = Buffer.from(escapedBody.trimEnd())
    for (let end = 0; end < bytes.length; end++) expect(scan(bytes.subarray(0, end)), `cut at ${end}`).toEqual({ error: 'INVALID_JSON' })
  })

  it('hands the image on in at most one piece per write, never an empty one, and not at all when told to ignore it', () => {
    const pieces: Uint8Array[] = []
    const scanner = new JsonBodyScanner((piece) => pieces.push(piece))
    const bytes = Buffer.from(escapedBody)
    let writes = 0
    for (let at = 0; at < bytes.length; at += 7) {
      scanner.write(bytes.subarray(at, at + 7))
      writes++
      expect(pieces.length).toBeLessThanOrEqual(writes)
    }
    scanner.end()
    expect(pieces.every((piece) => piece.length > 0)).toBe(true)
    expect(scanner).toMatchObject({ imageOpened: true, imageClosed: true })

    const ignored: Uint8Array[] = []
    const ignoring = new JsonBodyScanner((piece) => ignored.push(piece))
    ignoring.ignoreImage()
    ignoring.write(bytes)
    ignoring.end()
    expect(ignored).toEqual([])
    expect(ignoring).toMatchObject({ imageKind: 'string', imageOpened: true, imageClosed: true })
  })

  it.each([
    // valid, of every kind
    ['{}'], ['[]'], ['"a string"'], ['-0.5e-7'], ['0'], ['true'], ['false'], ['null'], [' \t\r\n{ } \n'],
    ['{"image":""}'], ['{"image":12}'], ['{"image":[1,"a"]}'], ['{"image":{"image":"x"}}'], ['{"image":true}'], ['{"image":null}'],
    ['[{"image":"not the member"}]'], ['{"a":1,"b":[],"image":"last"}'], ['{"image":"first","a":{"b":[{}]}}'],
    ['\ufeff{"image":"x"}'], ['{"\\u0069mage":"escaped key"}'], ['{"imagez":"longer key"}'], ['{"x":"\u2028\u2029"}'],
    ['{"k":"\\ud800 a lone surrogate"}'], ['{"image":"\\ud800"}'], ['{"constructor":"only a name"}'], ['{"constructor":{"a":1}}'],
    ['{"prototype":1}'], ['{"a":{"constructor":[{"prototype":1}]}}'], [`{"${'k'.repeat(100)}":1}`],
    // invalid
    [''], [' '], ['{'], ['}'], ['{"image":"x"'], ['{"image":"x"}}'], ['{"image":"x"} x'], ['{"image":"x"}{}'], ['{"image":"x",}'],
    ['[1,]'], ['[,1]'], ['{,}'], ['{"a" 1}'], ['{"a":1 "b":2}'], ['[1 2]'], ['{"a":1]'], ['[1}'], ['{a:1}'], ["{'a':1}"],
    ['{"a":01}'], ['{"a":1.}'], ['{"a":.5}'], ['{"a":-}'], ['{"a":1e}'], ['{"a":1e+}'], ['{"a":+1}'], ['{"a":NaN}'], ['{"a":Infinity}'],
    ['{"a":tru}'], ['{"a":truex}'], ['{"a":nul}'], ['{"a":True}'], ['{"a":"\\x"}'], ['{"a":"\\u12G4"}'], ['{"a":"\\u12"}'],
    ['{"a":"tab\there"}'], ['{"image":"data:image/png;base64,AA\nAA"}'], ['{"a":1}\ufeff'], [' \ufeff{}'], ['{"a":/* c */1}'],
    // forbidden keys
    ['{"__proto__":{}}'], ['{"a":[{"__proto__":1}]}'], ['{"\\u005f_proto__":1}'], ['{"constructor":{"prototype":{}}}'],
    ['{"a":{"constructor":{"x":1,"prototype":1}}}'], ['{"__proto__":1,"a":}']
  ])('%j: as the buffered parser', (body) => {
    expect(scan(body)).toEqual(reference(body))
  })

  it.each([
    ['UTF-16LE', Buffer.from('{"image":"x"}', 'utf16le')],
    ['UTF-16 behind its byte order mark', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('{"image":"x"}', 'utf16le')])],
    ['a byte that is never UTF-8', Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])],
    ['a continuation byte alone', Buffer.concat([Buffer.from('{"image":"data:'), Buffer.from([0x80]), Buffer.from('"}')])],
    ['an overlong quote', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xc0, 0xa2]), Buffer.from('"}')])],
    ['an overlong three-byte form', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xe0, 0x80, 0xaf]), Buffer.from('"}')])],
    ['a surrogate as UTF-8 (CESU-8)', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]), Buffer.from('"}')])],
    ['past U+10FFFF', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xf4, 0x90, 0x80, 0x80]), Buffer.from('"}')])],
    ['a sequence cut by the quote', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xe2, 0x82]), Buffer.from('"}')])],
    ['UTF-8 outside a string', Buffer.concat([Buffer.from('{"a":1'), Buffer.from([0xc3, 0xa9]), Buffer.from('}')])],
    ['a truncated byte order mark', Buffer.from([0xef, 0xbb, 0x7b, 0x7d])],
    ['valid UTF-8 of every length', Buffer.from('{"image":"\u00e9\u20ac\u{1F600}","\u00e9":"\u{10FFFF}\uffff"}')]
  ])('bytes: %s, as the buffered parser', (_case, bytes) => {
    const expected = reference(bytes)
    expect(scan(bytes)).toEqual(expected)
    for (let cut = 0; cut <= bytes.length; cut++) expect(scan(bytes, [cut])).toEqual(expected)
  })

  it('with a taker of image runs, gives what the buffered parser gives, and the taker gets only long runs in order', () => {
    const base64 = Buffer.alloc(300, 0x5a).toString('base64')
    const bodies = [
      escapedBody,
      `{"image":"data:image/png;base64,${base64}","n":1}`,
      // A lone high surrogate before a run: it goes on (as U+FFFD) before the run's bytes.
      `{"image":"\\ud83d${base64}"}`,
      `{"image":"${base64.slice(0, 100)}\\/${base64.slice(100, 250)}\\r\\n${base64.slice(250)}\\u0041"}`,
      `{"image":"${base64.slice(0, 150)}==${base64.slice(150)}"}`
    ]
    for (const body of bodies) {
      const bytes = Buffer.from(body)
      const expected = reference(bytes)
      expect(scan(bytes, [], true), body).toEqual(expected)
      for (let cut = 0; cut <= bytes.length; cut++) expect(scan(bytes, [cut], true), `${body} cut at ${cut}`).toEqual(expected)
    }
    // Offered only runs of 64 bytes or more up to the next quote, after what came before them; what the taker leaves
    // (from a backslash on, here) is read as usual, and a shorter run after it is not offered.
    const offered: string[] = []
    const handed: string[] = []
    const upToBackslash = (run: Uint8Array): number => {
      offered.push(Buffer.from(run).toString())
      const backslash = run.indexOf(0x5c)
      return backslash < 0 ? run.length : backslash
    }
    const scanner = new JsonBodyScanner((piece) => { handed.push(Buffer.from(piece).toString()) }, upToBackslash)
    scanner.write(Buffer.from(`{"image":"ab\\/${'x'.repeat(70)}\\/${'y'.repeat(63)}"}`))
    scanner.end()
    expect(offered).toEqual([`ab\\/${'x'.repeat(70)}\\/${'y'.repeat(63)}`, `${'x'.repeat(70)}\\/${'y'.repeat(63)}`])
    expect(handed).toEqual(['/', `/${'y'.repeat(63)}`])
    // Each write's own quote bounds the runs it offers, wherever the last write had one.
    offered.length = 0
    handed.length = 0
    const next = new JsonBodyScanner((piece) => { handed.push(Buffer.from(piece).toString()) }, upToBackslash)
    next.write(Buffer.from(`{"image":"${'x'.repeat(200)}`))
    next.write(Buffer.from(`${'y'.repeat(100)}\\/${'z'.repeat(100)}"}`))
    next.end()
    expect(offered).toEqual(['x'.repeat(200), `${'y'.repeat(100)}\\/${'z'.repeat(100)}`, 'z'.repeat(100)])
    expect(handed).toEqual(['/'])
    // The same buffer written again with other bytes: its quote is looked for again.
    offered.length = 0
    handed.length = 0
    const reused = Buffer.from(`{"image":"${'x'.repeat(100)}`)
    const again = new JsonBodyScanner((piece) => { handed.push(Buffer.from(piece).toString()) }, upToBackslash)
    again.write(reused)
    reused.write(`${'y'.repeat(90)}","n":"${'z'.repeat(10)}`)
    again.write(reused)
    again.write(Buffer.from('"}'))
    again.end()
    expect(offered).toEqual(['x'.repeat(100), 'y'.repeat(90)])
    expect(handed).toEqual([])
  })

  it('finds a byte that needs a look at any place in a long string, whatever memory the piece starts at', () => {
    // Long runs are read four bytes at a time from a word view of the piece's memory: a raw control character, a quote,
    // a backslash or a multi-byte character at every offset of a 300-byte string, in pieces that start at every
    // alignment of the underlying memory, must give what the buffered parser gives.
    const base64 = Buffer.alloc(225, 0x5a).toString('base64')
    const memory = Buffer.alloc(4096)
    for (const needs of ['\n', '\u0001', '"', '\\', '\\n', 'é', '\u007f']) {
      for (let place = 0; place < base64.length; place++) {
        const body = Buffer.from(`{"image":"${base64.slice(0, place)}${needs}${base64.slice(place)}","note":"${base64}"}`)
        const expected = reference(body)
        for (const misalignment of [0, 1, 2, 3]) {
          const piece = memory.subarray(misalignment, misalignment + body.length)
          body.copy(piece)
          expect(scan(piece), `${JSON.stringify(needs)} at ${place}, memory offset ${misalignment}`).toEqual(expected)
          expect(scan(piece, [], true), `${JSON.stringify(needs)} at ${place}, memory offset ${misalignment}, taken`).toEqual(expected)
        }
      }
    }
  })

  it('refuses `image` given twice (the buffered parser kept the last), only at the top level, after the syntax', () => {
    expect(scan('{"image":"a","image":"b"}')).toEqual({ error: 'VALIDATION_ERROR' })
    expect(scan('{"image":1,"\\u0069mage":"b"}')).toEqual({ error: 'VALIDATION_ERROR' })
    expect(scan('{"image":"a","x":{"image":"b"}}')).toEqual({ body: 'object', image: 'string', text: 'a' })
    expect(scan('{"image":"a","image":"b",}')).toEqual({ error: 'INVALID_JSON' })
    expect(scan('{"image":"a","image":"b","__proto__":1}')).toEqual({ error: 'FORBIDDEN_KEY' })
  })

  it(`takes ${MAX_NESTING} levels of nesting and refuses one more`, () => {
    expect(scan(`{"image":${'['.repeat(10_000)}"x"${']'.repeat(10_000)}}`)).toEqual({ body: 'object', image: 'array', text: '' })
    expect(scan('['.repeat(MAX_NESTING) + ']'.repeat(MAX_NESTING))).toEqual({ body: 'array', image: undefined, text: '' })
    expect(scan('['.repeat(MAX_NESTING + 1) + ']'.repeat(MAX_NESTING + 1))).toEqual({ error: 'VALIDATION_ERROR' })
    expect(scan('{"a":'.repeat(MAX_NESTING) + '1' + '}'.repeat(MAX_NESTING))).toEqual({ body: 'object', image: undefined, text: '' })
  })

  it('agrees with the buffered parser on thousands of mutated bodies', () => {
    const seeds = [
      escapedBody,
      '{"image":"data:image/jpeg;base64,/9j/4AAQSkZJRg==","meta":{"w":640,"h":-4.5E2,"ok":[true,false,null]}}',
      '[{"a":"\\u00e9\\n"},{"b":[1,2,{"c":"\u00e9\u{1F600}"}]},"\\"",0.1e1]',
      '{"__prota__":{"x":1},"constructoz":{"prototypf":2},"image":""}',
      `{"image":"data:image/png;base64,${Buffer.alloc(120, 0xa7).toString('base64')}","x":"${'abc'.repeat(30)}"}`
    ].map((text) => Buffer.from(text))
    const rng = new Rng(20261124)
    const next = (): number => rng.next()
    const pick = (values: readonly number[]): number => values[Math.floor(next() * values.length)]!
    // Bytes that matter to JSON, and a few UTF-8 pieces, more often than chance would give them.
    const interesting = [0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x20, 0x0a, 0x30, 0x2d, 0x2e, 0x65, 0x75, 0x5f, 0x80, 0xc3, 0xe2, 0xed, 0xf0, 0xff, 0x74, 0x6e]
    let invalid = 0
    for (let round = 0; round < 4000; round++) {
      const seed = seeds[round % seeds.length]!
      const bytes = Buffer.from(seed)
      let mutated: Buffer = bytes
      for (let edits = 1 + Math.floor(next() * 3); edits > 0; edits--) {
        const at = Math.floor(next() * mutated.length)
        const byte = next() < 0.7 ? pick(interesting) : Math.floor(next() * 256)
        const kind = next()
        mutated = kind < 0.4
          ? Buffer.concat([mutated.subarray(0, at), Buffer.from([byte]), mutated.subarray(at)])
          : kind < 0.7
            ? Buffer.concat([mutated.subarray(0, at), mutated.subarray(at + 1)])
            : Buffer.concat([mutated.subarray(0, at), Buffer.from([byte]), mutated.subarray(at + 1)])
      }
      const expected = reference(mutated)
      if ('error' in expected) invalid++
      const cut = Math.floor(next() * (mutated.length + 1))
      expect(scan(mutated, [cut]), `${JSON.stringify(mutated.toString('latin1'))} cut at ${cut}`).toEqual(expected)
      expect(scan(mutated, [cut], true), `${JSON.stringify(mutated.toString('latin1'))} cut at ${cut}, taken`).toEqual(expected)
    }
    // Both kinds were tried, in earnest.
    expect(invalid).toBeGreaterThan(1000)
    expect(invalid).toBeLessThan(3800)
  })

  it('scans in linear time: megabytes of escapes, nesting, digits or whitespace take a fraction of a second each', () => {
    const bodies = [
      `{"image":"${'\\/'.repeat(2_000_000)}"}`,
      `{"x":${'['.repeat(MAX_NESTING - 1)}${']'.repeat(MAX_NESTING - 1)},"y":"${'\\u0041'.repeat(500_000)}"}`,
      `{"n":${'9'.repeat(4_000_000)}}`,
      `${' '.repeat(4_000_000)}{}`
    ]
    for (const body of bodies) {
      const started = performance.now()
      expect(scan(body, [1000, 1_000_000])).not.toHaveProperty('error')
      // Each takes 0.1–0.3 s alone; under coverage beside a burst of integration tests once 1.2 s. A scan quadratic in
      // these lengths would take hours: 5 s tells the two apart on any machine.
      expect(performance.now() - started).toBeLessThan(5000)
    }
  })
})

describe('receiveJsonImageBody', () => {
  let dir: string
  let photo: Buffer
  let files = 0
  const scratchFile = (extension: string): string => join(dir, `image-${files++}.${extension}`)
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'json-image-body-'))
    photo = await readFile(new URL('../../examples/photo.jpg', import.meta.url))
  })
  afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

  async function * pieces (body: Buffer | string, size: number, read?: { chunks: number }): AsyncGenerator<Buffer> {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body)
    for (let at = 0; at < bytes.length; at += size) {
      if (read !== undefined) read.chunks++
      yield bytes.subarray(at, at + size)
    }
  }

  const receive = async (body: Buffer | string, size = 4096, options: { maxBytes?: number, maxBodyBytes?: number, receive?: boolean } = {}): Promise<JsonImageBody> =>
    await receiveJsonImageBody(pieces(body, size), { scratchFile, maxBytes: 1_000_000, maxBodyBytes: 2_000_000, receive: true, ...options })

  const outcome = async (body: Buffer | string, size?: number, options?: Parameters<typeof receive>[2]): Promise<unknown> => {
    try {
      const received = await receive(body, size, options)
      return { body: received.body, image: received.image !== undefined, imageError: (received.imageError as { code?: string } | undefined)?.code }
    } catch (error) {
      return { error: (error as { code: string }).code }
    }
  }

  const sha256 = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex')
  const photoUri = (): string => `data:image/jpeg;base64,${photo.toString('base64')}`

  it('decodes the image straight into the intake, however the body is cut', async () => {
    const body = `{"before":[1,{"x":"y"}],"image":"${photoUri().replaceAll('/', '\\/')}","after":null}`
    for (const size of [1, 3, 64, 4093, 65_536, body.length]) {
      const received = await receive(body, size)
      expect(received.body).toEqual({ image: 'data:image/jpeg;base64' })
      expect(received.imageError).toBeUndefined()
      expect(received.image).toMatchObject({ sizeBytes: photo.length, sha256: sha256(photo), sniffed: { format: 'jpeg' } })
      expect(await readFile(received.image!.path)).toEqual(photo)
      await rm(received.image!.path)
    }
  })

  it('with releaseChunk as release, frees each chunk that is a buffer of its own once scanned, and leaves slices alone', async () => {
    const body = Buffer.from(`{"note":"\\u00e9t\\u00e9","image":"${photoUri()}"}`)
    // Chunks as Node's HTTP parser gives them: each a copy in a buffer of its own, the last one shorter.
    const own: Buffer[] = []
    for (let at = 0; at < body.length; at += 4096) {
      const chunk = Buffer.allocUnsafeSlow(Math.min(4096, body.length - at))
      body.copy(chunk, 0, at)
      own.push(chunk)
    }
    async function * chunks (): AsyncGenerator<Buffer> { yield * own }
    const received = await receiveJsonImageBody(chunks(), { scratchFile, maxBytes: 1_000_000, maxBodyBytes: 2_000_000, receive: true, release: releaseChunk })
    expect(received.image).toMatchObject({ sizeBytes: photo.length, sha256: sha256(photo) })
    expect(await readFile(received.image!.path)).toEqual(photo)
    await rm(received.image!.path)
    expect(own.every((chunk) => (chunk.buffer as ArrayBuffer).detached && chunk.length === 0)).toBe(true)

    // A slice shares its buffer: whoever holds the rest of it keeps it intact.
    const whole = Buffer.from(body)
    const sliced = await receiveJsonImageBody(pieces(whole, 4096), { scratchFile, maxBytes: 1_000_000, maxBodyBytes: 2_000_000, receive: true, release: releaseChunk })
    expect(sliced.image).toMatchObject({ sha256: sha256(photo) })
    await rm(sliced.image!.path)
    expect(whole).toEqual(body)
  })

  it('reports what is wrong with the image after the body, which is still read and checked whole', async () => {
    const cases: Array<[string, string, number?]> = [
      ['{"image":"https://example.com/photo.jpg","x":1}', 'INVALID_DATA_URI'],
      ['{"image":"data:text/html;base64,PGI+","x":1}', 'NOT_AN_IMAGE_MEDIA_TYPE'],
      [`{"image":"${photoUri().slice(0, 5000)}=${photoUri().slice(5000)}"}`, 'INVALID_BASE64'],
      ['{"image":""}', 'NO_IMAGE'],
      ['{"image":"data:image/png;base64,"}', 'NO_IMAGE'],
      [`{"image":"data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}"}`, 'UNSUPPORTED_IMAGE_FORMAT'],
      [`{"image":"${photoUri()}"}`, 'IMAGE_TOO_LARGE', photo.length - 1]
    ]
    for (const [body, code, maxBytes] of cases) {
      expect(await outcome(body, 1000, maxBytes === undefined ? {} : { maxBytes }), code).toMatchObject({ image: false, imageError: code })
    }
    expect(await outcome('{"image":"https://example.com/photo.jpg","x":1,}')).toEqual({ error: 'INVALID_JSON' })
    expect(await readdir(dir)).toEqual([])
  })

  it('removes the image it stored when the rest of the body is refused', async () => {
    for (const [tail, code] of [[',}', 'INVALID_JSON'], [',"__proto__":{}}', 'FORBIDDEN_KEY'], [',"image":"again"}', 'VALIDATION_ERROR']]) {
      expect(await outcome(`{"image":"${photoUri()}"${tail!}`, 512)).toEqual({ error: code })
    }
    expect(await readdir(dir)).toEqual([])
  })

  it('gives the schema a body of the same shape, without its contents', async () => {
    expect(await outcome('{"image":42,"x":"y"}')).toEqual({ body: { image: 0 }, image: false, imageError: undefined })
    expect(await outcome('{"image":["data:image/png;base64,AA=="]}')).toEqual({ body: { image: [] }, image: false, imageError: undefined })
    expect(await outcome('{"x":"y"}')).toEqual({ body: {}, image: false, imageError: undefined })
    expect(await outcome('[{"image":"x"}]')).toEqual({ body: [], image: false, imageError: undefined })
    expect(await outcome('null')).toEqual({ body: null, image: false, imageError: undefined })
    expect(await outcome('"text"')).toEqual({ body: '', image: false, imageError: undefined })
  })

  it('only checks the body of a route that takes no JSON: nothing decoded, nothing stored', async () => {
    expect(await outcome(`{"image":"${photoUri()}"}`, 1000, { receive: false })).toEqual({ body: { image: '' }, image: false, imageError: undefined })
    expect(await readdir(dir)).toEqual([])
  })

  it('refuses a body over its limit as soon as it is passed, without reading on', async () => {
    const read = { chunks: 0 }
    const body = `{"image":"${photoUri()}"}`
    await expect(receiveJsonImageBody(pieces(body, 1000, read), { scratchFile, maxBytes: 1_000_000, maxBodyBytes: 5000, receive: true }))
      .rejects.toMatchObject({ code: 'BODY_TOO_LARGE' })
    expect(read.chunks).toBe(6)
    expect(await readdir(dir)).toEqual([])
  })

  it('a body that stops short (the connection closed) is invalid JSON, and leaves nothing on disk', async () => {
    const body = `{"image":"data:image/jpeg;base64,${Buffer.concat([photo, Buffer.alloc(800_000)]).toString('base64')}"}`
    async function * broken (): AsyncGenerator<Buffer> {
      yield * pieces(body.slice(0, 900_000), 65_536)
      throw Object.assign(new Error('aborted'), { code: 'ECONNRESET' })
    }
    const refusal = receiveJsonImageBody(broken(), { scratchFile, maxBytes: 2_000_000, maxBodyBytes: 2_000_000, receive: true })
    await expect(refusal).rejects.toMatchObject({ code: 'INVALID_JSON', cause: { code: 'ECONNRESET' } })
    expect(await readdir(dir)).toEqual([])
  })
})
