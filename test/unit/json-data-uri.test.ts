import { isUtf8 } from 'node:buffer'
import secureJson from 'secure-json-parse'
import { describe, expect, it } from 'vitest'
import { JsonDataUri } from '../../src/metadata/json-data-uri.ts'
import { Rng } from '../support/rng.ts'

// A differential fuzz test of the streaming JSON body reader (src/metadata/json-data-uri.ts: its JSON scanner and
// its base64 decoder) against the obvious way: JSON.parse the whole body, take `image`, check the data URI, and
// Buffer.from(…, 'base64') its data. Thousands of random bodies, many of them damaged, each cut into random pieces
// at random places in memory: every body one accepts the other accepts, with the same bytes, and one refused is
// refused by both for the same reason.

/** What became of a body: refused (a code, or what its shape lacks), or the image's bytes. */
type Outcome = { refused: string } | { bytes: string }

const MAX_IMAGE_BYTES = 1_000_000
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/i
const WHITESPACE = /[\t\n\r ]/g
const BASE64 = /^[A-Za-z0-9+/]*(={0,2})$/

/** The reader on `body`, written in the pieces `cuts` makes of it. */
function streamed (body: Buffer, cuts: number[], maxBytes = MAX_IMAGE_BYTES): Outcome {
  const reader = new JsonDataUri(maxBytes)
  const bytes: Buffer[] = []
  let from = 0
  for (const cut of [...cuts, body.length]) {
    const decoded = reader.write(body.subarray(from, cut))
    // Copied: the reader reuses its buffer.
    if (decoded !== undefined) bytes.push(Buffer.from(decoded))
    from = cut
  }
  reader.end()
  if (reader.bodyError !== undefined) return { refused: (reader.bodyError as Error & { code: string }).code }
  const shape = reader.shape
  if (typeof shape !== 'object' || shape === null || Array.isArray(shape)) return { refused: 'body is no object' }
  if (!('image' in shape)) return { refused: 'no image' }
  if (typeof shape.image !== 'string') return { refused: 'image is no string' }
  if (reader.imageError !== undefined) return { refused: (reader.imageError as Error & { code: string }).code }
  return { bytes: Buffer.concat(bytes).toString('hex') }
}

/** JSON.parse, and the service's rules it does not know, checked on the parsed value; then Buffer.from. */
function reference (body: Buffer, maxBytes = MAX_IMAGE_BYTES): Outcome {
  // RFC 8259 §8.1: UTF-8 only; a leading byte order mark is skipped, as secure-json-parse does.
  if (body.length === 0 || !isUtf8(body)) return { refused: 'INVALID_JSON' }
  const text = body.toString('utf8').replace(/^\ufeff/, '')
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { refused: 'INVALID_JSON' }
  }
  try {
    secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' })
  } catch {
    return { refused: 'FORBIDDEN_KEY' }
  }
  // JSON.parse keeps the last of two `image` members, silently; the service refuses the body.
  if (topLevelKeys(text).filter((key) => key === 'image').length > 1) return { refused: 'VALIDATION_ERROR' }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { refused: 'body is no object' }
  if (!Object.hasOwn(value, 'image')) return { refused: 'no image' }
  const image = (value as { image: unknown }).image
  if (typeof image !== 'string') return { refused: 'image is no string' }
  return dataUri(image, maxBytes)
}

/** `data:<type>/<subtype>[;…];base64,<data>` by the rules the API documents, decoded by Node. */
function dataUri (uri: string, maxBytes: number): Outcome {
  if (uri === '') return { refused: 'NO_IMAGE' }
  const comma = uri.indexOf(',')
  // The header ends within 512 bytes (counted in UTF-8, a lone surrogate as U+FFFD).
  if (comma < 0 || Buffer.byteLength(uri.slice(0, comma)) > 512) return { refused: 'INVALID_DATA_URI' }
  const header = uri.slice(0, comma)
  const [mediaType = '', ...parameters] = header.slice(5).split(';')
  if (header.slice(0, 5).toLowerCase() !== 'data:' || parameters.at(-1)?.toLowerCase() !== 'base64' || !MEDIA_TYPE.test(mediaType)) {
    return { refused: 'INVALID_DATA_URI' }
  }
  if (!mediaType.toLowerCase().startsWith('image/')) return { refused: 'NOT_AN_IMAGE_MEDIA_TYPE' }
  // RFC 4648 §4, with line breaks and spaces allowed anywhere and the padding optional, but whole if present.
  const data = uri.slice(comma + 1).replace(WHITESPACE, '')
  const padding = BASE64.exec(data)?.[1]
  if (padding === undefined) return { refused: 'INVALID_BASE64' }
  const characters = data.length - padding.length
  if (characters % 4 === 1 || (padding.length > 0 && (characters % 4) + padding.length !== 4)) return { refused: 'INVALID_BASE64' }
  const bytes = Buffer.from(data, 'base64')
  if (bytes.length === 0) return { refused: 'NO_IMAGE' }
  if (bytes.length > maxBytes) return { refused: 'IMAGE_TOO_LARGE' }
  return { bytes: bytes.toString('hex') }
}

/** The keys of a top-level object, in order, repeats included, in valid JSON text (which JSON.parse has accepted). */
function topLevelKeys (text: string): string[] {
  const keys: string[] = []
  let depth = 0
  let expectKey = false
  for (let at = 0; at < text.length; at++) {
    const character = text[at]!
    if (character === '"') {
      let end = at + 1
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1
      if (depth === 1 && expectKey) keys.push(JSON.parse(text.slice(at, end + 1)) as string)
      expectKey = false
      at = end
    } else if (character === '{' || character === '[') {
      depth++
      expectKey = character === '{' && depth === 1
    } else if (character === '}' || character === ']') {
      depth--
    } else if (character === ',' && depth === 1) {
      expectKey = text.trimStart()[0] === '{'
    }
  }
  return keys
}

// ---- random bodies ---------------------------------------------------------------------------------------------

const HEADERS = [
  'data:image/jpeg;base64', 'data:image/png;base64', 'DATA:IMAGE/PNG;BASE64', 'data:image/png;name=a.png;base64',
  'data:image/x-anything;charset=utf-8;base64', 'data:text/plain;base64', 'data:application/octet-stream;base64',
  'data:image/png', 'data:;base64', 'data:image/png;base64;name=x', ' data:image/png;base64', 'data:image /png;base64',
  'data:image/png;name=caf\u00e9;base64', `data:image/png;name=${'n'.repeat(600)};base64`, 'https://example.com/photo.jpg'
]
const KEYS = ['note', 'a', 'images', 'imagf', 'Image', 'constructor', 'prototype', 'x\u00e9', 'image\u0000', 'b']
/** Bytes that matter to JSON and to base64, more often than chance would give them. */
const INTERESTING = [0x22, 0x5c, 0x7b, 0x7d, 0x5b, 0x5d, 0x2c, 0x3a, 0x20, 0x0a, 0x0d, 0x09, 0x3d, 0x2b, 0x2f, 0x2d, 0x5f, 0x41, 0x75, 0x80, 0xc3, 0xed, 0xff, 0x00]

/** A JSON string of `text`, with the escapes a client may use where it need not: `\/`, `\u00XX`. */
function jsonString (rng: Rng, text: string): string {
  let out = '"'
  for (const character of text) {
    const code = character.codePointAt(0)!
    if (character === '"' || character === '\\') out += `\\${character}`
    else if (code < 0x20) out += rng.chance(0.5) ? `\\u${code.toString(16).padStart(4, '0')}` : JSON.stringify(character).slice(1, -1)
    else if (character === '/' && rng.chance(0.3)) out += '\\/'
    else if (code < 0x10000 && rng.chance(0.01)) out += `\\u${code.toString(16).padStart(4, '0')}`
    else out += character
  }
  return `${out}"`
}

function space (rng: Rng): string {
  return rng.chance(0.7) ? '' : rng.pick([' ', '\n', '\r\n', '\t', '  '])
}

function uri (rng: Rng): string {
  const bytes = rng.bytes(rng.chance(0.05) ? 0 : rng.chance(0.3) ? rng.range(1, 20) : rng.range(21, 1500))
  let data = bytes.toString('base64')
  if (rng.chance(0.2)) data = data.replace(/=+$/, '')
  if (rng.chance(0.3)) {
    const width = rng.pick([4, 60, 64, 76, 77])
    const wrap = rng.pick(['\r\n', '\n', ' ', '\t'])
    data = data.replace(new RegExp(`.{${width}}`, 'g'), `$&${wrap}`)
  }
  if (rng.chance(0.1)) {
    const at = rng.int(data.length + 1)
    data = data.slice(0, at) + rng.pick(['-', '_', '*', '=', '\f', '.', '\u00e9', '==', 'A']) + data.slice(at)
  }
  if (rng.chance(0.05)) data += rng.pick(['A', '===', '= =', ' '])
  const header = rng.chance(0.7) ? 'data:image/jpeg;base64' : rng.pick(HEADERS)
  return rng.chance(0.02) ? header + data : `${header},${data}`
}

function value (rng: Rng, depth: number): string {
  const kind = rng.int(depth > 2 ? 5 : 7)
  switch (kind) {
    case 0: return rng.pick(['0', '-1.5e3', '12', '0.25', '1E+2'])
    case 1: return rng.pick(['true', 'false', 'null'])
    case 2: return jsonString(rng, rng.pick(['', 'caf\u00e9', 'a/b', 'line\nbreak', '\u{1F600}', 'x'.repeat(rng.int(200))]))
    case 3: return jsonString(rng, uri(rng))
    case 4: return jsonString(rng, rng.pick(['\ud83d', 'tab\there', 'q"uote']))
    case 5: return `[${space(rng)}${Array.from({ length: rng.int(3) }, () => value(rng, depth + 1)).join(`,${space(rng)}`)}${space(rng)}]`
    default: return object(rng, depth + 1, [])
  }
}

/**
 * An object around `members`, with a few more. Their keys are never repeated: JSON.parse keeps the last of two, which
 * could hide a forbidden key the reader refuses wherever it stands (see the last test).
 */
function object (rng: Rng, depth: number, members: Array<[string, string]>): string {
  const keys = rng.chance(0.02) ? ['__proto__', ...KEYS] : [...KEYS]
  for (let count = rng.int(depth === 0 ? 4 : 3); count > 0; count--) {
    const key = keys.splice(rng.int(keys.length), 1)[0]!
    members.push([key, key === 'constructor' && rng.chance(0.5) ? `{"prototype":${value(rng, depth + 1)}}` : value(rng, depth + 1)])
  }
  for (let index = members.length - 1; index > 0; index--) {
    const other = rng.int(index + 1)
    ;[members[index], members[other]] = [members[other]!, members[index]!]
  }
  const rendered = members.map(([key, member]) => `${space(rng)}${jsonString(rng, key)}${space(rng)}:${space(rng)}${member}`)
  return `{${rendered.join(',')}${space(rng)}}`
}

function body (rng: Rng): Buffer {
  let text: string
  if (rng.chance(0.04)) {
    text = value(rng, 0)
  } else {
    const members: Array<[string, string]> = []
    if (rng.chance(0.93)) members.push(['image', rng.chance(0.9) ? jsonString(rng, uri(rng)) : value(rng, 1)])
    if (rng.chance(0.02)) members.push(['image', jsonString(rng, uri(rng))])
    text = object(rng, 0, members)
  }
  let bytes = Buffer.from(`${rng.chance(0.03) ? '\ufeff' : ''}${space(rng)}${text}${space(rng)}`)
  if (rng.chance(0.25)) {
    for (let edits = rng.range(1, 3); edits > 0; edits--) {
      const at = rng.int(bytes.length)
      const byte = rng.chance(0.7) ? rng.pick(INTERESTING) : rng.int(256)
      const edit = rng.int(3)
      bytes = edit === 0
        ? Buffer.concat([bytes.subarray(0, at), Buffer.from([byte]), bytes.subarray(at)])
        : edit === 1 ? Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + 1)]) : Buffer.concat([bytes.subarray(0, at), Buffer.from([byte]), bytes.subarray(at + 1)])
    }
  }
  return bytes
}

/** Where to cut a body of `length`: a few random places, or pieces of a few bytes each. */
function cuts (rng: Rng, length: number): number[] {
  if (rng.chance(0.1)) {
    const small: number[] = []
    for (let at = rng.range(1, 7); at < length; at += rng.range(1, 7)) small.push(at)
    return small
  }
  return Array.from({ length: rng.int(4) }, () => rng.int(length + 1)).sort((a, b) => a - b)
}

/** The body copied to a random offset in a larger buffer: its pieces start at every alignment in memory. */
function misaligned (rng: Rng, bytes: Buffer): Buffer {
  const offset = rng.int(4)
  const memory = Buffer.alloc(bytes.length + offset)
  bytes.copy(memory, offset)
  return memory.subarray(offset)
}

describe('the JSON data URI reader against JSON.parse and Buffer.from', () => {
  it('agrees on 3,000 random bodies, valid and damaged, however they are cut', () => {
    const rng = new Rng(20261126)
    const seen = new Map<string, number>()
    for (let round = 0; round < 3000; round++) {
      const bytes = misaligned(rng, body(rng))
      const expected = reference(bytes)
      const outcome = streamed(bytes, cuts(rng, bytes.length))
      expect(outcome, `${JSON.stringify(bytes.toString('latin1').slice(0, 300))}… (${bytes.length} bytes, round ${round})`).toEqual(expected)
      const kind = 'bytes' in expected ? 'accepted' : expected.refused
      seen.set(kind, (seen.get(kind) ?? 0) + 1)
    }
    // Every outcome was reached, most of them many times: the bodies test what they are meant to.
    for (const kind of ['accepted', 'INVALID_JSON', 'FORBIDDEN_KEY', 'VALIDATION_ERROR', 'no image', 'image is no string', 'body is no object',
      'NO_IMAGE', 'INVALID_DATA_URI', 'NOT_AN_IMAGE_MEDIA_TYPE', 'INVALID_BASE64']) {
      expect(seen.get(kind) ?? 0, `${kind}: ${JSON.stringify([...seen])}`).toBeGreaterThan(kind === 'VALIDATION_ERROR' || kind === 'body is no object' ? 10 : 25)
    }
    expect(seen.get('accepted')).toBeGreaterThan(900)
  })

  it('agrees on the size limit: an image of the limit is taken, one byte more is refused', () => {
    const rng = new Rng(7)
    for (let round = 0; round < 200; round++) {
      const limit = rng.range(1, 3000)
      const size = limit + rng.range(-2, 2)
      if (size < 1) continue
      const data = rng.bytes(size).toString('base64')
      const bytes = Buffer.from(`{"image":"data:image/png;base64,${rng.chance(0.5) ? data : data.replace(/(.{76})/g, '$1\\r\\n')}"}`)
      expect(streamed(bytes, cuts(rng, bytes.length), limit), `${size} bytes, limit ${limit}`).toEqual(reference(bytes, limit))
    }
  })

  it('is stricter in one way, on purpose: a forbidden key is refused even where a repeated key hides it from JSON.parse', () => {
    // JSON.parse keeps the last "constructor", and secure-json-parse, looking at what JSON.parse made, sees no
    // prototype; the reader, which keeps no key it has passed, refuses what the text holds.
    const body = Buffer.from('{"image":"data:image/png;base64,aGk=","constructor":{"prototype":{}},"constructor":0}')
    expect(reference(body)).toEqual({ bytes: '6869' })
    expect(streamed(body, [])).toEqual({ refused: 'FORBIDDEN_KEY' })
  })
})
