import { request as httpRequest, STATUS_CODES } from 'node:http'
import { Script } from 'node:vm'
import { crc32 } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { le16, le32 } from '../support/bytes.ts'

// Bad input of every kind, one table over every operation, sent as raw bytes to the real server on a real port:
// each case names the status and the envelope's code it must get, never a 5xx. A few valid inputs stand among them
// as controls, so the table also shows that what is valid passes.

interface Fixtures {
  /** A JPEG with camera, capture time and position. */
  jpeg: Buffer
  /** A PNG with the same tags. */
  png: Buffer
  /** A JPEG with no metadata at all. */
  bareJpeg: Buffer
  /** A GIF whose bytes are also a JavaScript program (`GIF89a/*…*\/=1;`), with camera tags in its XMP. */
  gifPolyglot: Buffer
  /** The answer to `jpeg` uploaded plainly: what a file name or a declared type must not change. */
  jpegDescription: Record<string, unknown>
  /** A conversation started by `customer-1`, for the transcript cases. */
  conversationId: string
}

interface RawRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: Buffer
  /** Send the body without Content-Length, in chunks. */
  chunked?: boolean
}

interface Case {
  name: string
  request: (f: Fixtures) => RawRequest
  status: number
  /** The envelope's code; none for a 200. */
  code?: string
  /** The exact message (or its pattern), for the cases whose wording is part of the contract. */
  message?: string | RegExp
  /** More to check of the body: a 200's, or what a 422 could still read. */
  check?: (body: Record<string, unknown>, f: Fixtures) => void
}

const AUTH = { authorization: `Bearer ${API_KEY}` }
const JSON_TYPE = { 'content-type': 'application/json' }
const BOUNDARY = 'matrix-boundary-7c1e'
const MULTIPART_TYPE = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }
const VALID_CHAT = { message: 'where is my order?', user_id: 'customer-1' }

// ---- request builders -------------------------------------------------------------------------------------------

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8')

function chatSend (body: Buffer | string | object, headers: Record<string, string> = { ...AUTH, ...JSON_TYPE }, path = '/v1/chat/send'): () => RawRequest {
  const raw = Buffer.isBuffer(body) ? body : bytes(typeof body === 'string' ? body : JSON.stringify(body))
  return () => ({ method: 'POST', path, headers, body: raw })
}

const chatWith = (fields: Record<string, unknown>): () => RawRequest => chatSend({ ...VALID_CHAT, ...fields })

function transcript (path: (f: Fixtures) => string, headers: Record<string, string> = AUTH, method = 'GET'): (f: Fixtures) => RawRequest {
  return (f) => ({ method, path: `/v1/chat/conversations/${path(f)}`, headers })
}

function metadataJson (body: (f: Fixtures) => Buffer | string | object, query = ''): (f: Fixtures) => RawRequest {
  return (f) => {
    const value = body(f)
    const raw = Buffer.isBuffer(value) ? value : bytes(typeof value === 'string' ? value : JSON.stringify(value))
    return { method: 'POST', path: `/v1/metadata${query}`, headers: { ...AUTH, ...JSON_TYPE }, body: raw }
  }
}

/** `{"image": <uri>}`, the data URI made from the fixtures. */
const dataUriBody = (uri: (f: Fixtures) => string): (f: Fixtures) => RawRequest => metadataJson((f) => ({ image: uri(f) }))

interface Part {
  name: string
  /** Written into the part's header as given, byte for byte (UTF-8). */
  filename?: string
  type?: string
  data: Buffer | string
}

function multipartBody (parts: Part[], { boundary = BOUNDARY, eol = '\r\n', close = true } = {}): Buffer {
  const chunks: Buffer[] = []
  for (const part of parts) {
    const filename = part.filename === undefined ? '' : `; filename="${part.filename}"`
    const type = part.type === undefined ? (part.filename === undefined ? '' : `${eol}Content-Type: application/octet-stream`) : `${eol}Content-Type: ${part.type}`
    chunks.push(bytes(`--${boundary}${eol}Content-Disposition: form-data; name="${part.name}"${filename}${type}${eol}${eol}`))
    chunks.push(Buffer.isBuffer(part.data) ? part.data : bytes(part.data))
    chunks.push(bytes(eol))
  }
  if (close) chunks.push(bytes(`--${boundary}--${eol}`))
  return Buffer.concat(chunks)
}

function upload (
  parts: (f: Fixtures) => Part[],
  { path = '/v1/metadata', query = '', headers = { ...AUTH, ...MULTIPART_TYPE }, eol = '\r\n', close = true } = {}
): (f: Fixtures) => RawRequest {
  return (f) => ({ method: 'POST', path: `${path}${query}`, headers, body: multipartBody(parts(f), { eol, close }) })
}

/** The one file `image`, named `filename`. */
const imageFile = (data: (f: Fixtures) => Buffer, filename = 'photo.jpg', path = '/v1/metadata'): (f: Fixtures) => RawRequest =>
  upload((f) => [{ name: 'image', filename, data: data(f) }], { path })

// ---- files that are not (only) images ---------------------------------------------------------------------------

const SVG = bytes('<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"><script>alert(1)</script></svg>')
const PDF = bytes('%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n')
const HTML = bytes('<!doctype html><html><body><img src=x onerror="alert(1)"></body></html>')
/** A DjVu page's header: the IFF form ExifTool reads as DjVu, which the allow-list leaves out. */
const DJVU = Buffer.concat([bytes('AT&TFORM'), Buffer.from([0, 0, 0, 0x18]), bytes('DJVUINFO'), Buffer.from([0, 0, 0, 10, 0, 64, 0, 48, 24, 0, 100, 22, 1, 0])])
/** A 1×1 BMP: a format image-size knows, and the allow-list does not. */
const BMP = Buffer.concat([
  bytes('BM'), le32(58), le32(0), le32(54),
  le32(40), le32(1), le32(1), Buffer.from([1, 0, 24, 0]), le32(0), le32(4), le32(2835), le32(2835), le32(0), le32(0),
  Buffer.from([0, 0, 255, 0])
])

/** A ZIP archive holding one stored (uncompressed) file. */
function storedZip (name: string, content: Buffer): Buffer {
  const fileName = bytes(name)
  const crc = crc32(content)
  const common = Buffer.concat([le16(20), le16(0), le16(0), le16(0), le16(0), le32(crc), le32(content.length), le32(content.length), le16(fileName.length), le16(0)])
  const local = Buffer.concat([le32(0x04034b50), common, fileName, content])
  const central = Buffer.concat([le32(0x02014b50), le16(20), common, le16(0), le16(0), le16(0), le32(0), le32(0), fileName])
  const end = Buffer.concat([le32(0x06054b50), le16(0), le16(0), le16(1), le16(1), le32(central.length), le32(local.length), le16(0)])
  return Buffer.concat([local, central, end])
}
const ZIP = storedZip('readme.txt', bytes('not an image\n'))

/**
 * The classic GIF/JavaScript polyglot: the logical screen width is the bytes `/*`, which opens a comment that the
 * bytes after the trailer close, so that the file runs as `GIF89a = 1`. As a GIF it is a 10799×1 canvas holding
 * one pixel.
 */
function gifJsPolyglot (): Buffer {
  return Buffer.concat([
    bytes('GIF89a/*'), // header and logical screen width 0x2a2f
    Buffer.from([0x01, 0x00, 0x80, 0x00, 0x00]), // height 1, a global colour table of 2 entries
    Buffer.from([0x00, 0x00, 0x00, 0xff, 0xff, 0xff]),
    Buffer.from([0x2c, 0, 0, 0, 0, 0x01, 0x00, 0x01, 0x00, 0x00]), // one 1×1 image
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]), // its LZW data
    Buffer.from([0x3b]), // trailer
    bytes('*/=1;')
  ])
}

/** A JPEG whose base64 needs padding: a byte is added after the image's end when its length is a multiple of 3. */
const padded = (jpeg: Buffer): Buffer => jpeg.length % 3 === 0 ? Buffer.concat([jpeg, Buffer.from([0])]) : jpeg
const base64 = (data: Buffer): string => data.toString('base64')

// ---- the matrix ------------------------------------------------------------------------------------------------

const isJpeg = (body: Record<string, unknown>): void => {
  expect(body).toMatchObject({ format: 'jpeg', camera: { make: 'NIKON', model: 'COOLPIX P6000' } })
}
const isPng = (body: Record<string, unknown>): void => {
  expect(body).toMatchObject({ format: 'png', camera: { make: 'NIKON', model: 'COOLPIX P6000' } })
}
const sameAsPlainUpload = (body: Record<string, unknown>, f: Fixtures): void => {
  isJpeg(body)
  expect(body).toEqual(f.jpegDescription)
}
const isChatReply = (body: Record<string, unknown>): void => {
  expect(body).toMatchObject({ reply: expect.any(String), conversation_id: expect.any(String), intent: expect.any(String) })
}

const nested = (depth: number, inner = '0'): string => '['.repeat(depth) + inner + ']'.repeat(depth)
const nestedObject = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)

const CHAT_CASES: Case[] = [
  // valid controls
  { name: 'chat: a plain message (control)', request: chatSend(VALID_CHAT), status: 200, check: isChatReply },
  { name: 'chat: right-to-left override inside the message', request: chatWith({ message: 'where is \u202Eredro ym\u202C order 48213?' }), status: 200, check: isChatReply },
  { name: 'chat: emoji with ZWJ sequences and skin tones', request: chatWith({ message: 'my parcel 📦 hasn’t arrived 👩‍👩‍👧‍👦👍🏽' }), status: 200, check: isChatReply },
  { name: 'chat: letters under stacks of combining marks', request: chatWith({ message: 'w̴̡h̷e̶̛r̸e͠ ̧i̢s̀ ̕m͘y͢ ̛o̴r̵d͝e̷r' }), status: 200, check: isChatReply },
  { name: 'chat: 4000 emoji (characters are counted, not UTF-16 units)', request: chatWith({ message: '😀'.repeat(4000) }), status: 200 },
  { name: 'chat: escaped control characters amid visible text', request: chatSend('{"message":"where\\u0000is\\u0007my\\u001border","user_id":"customer-1"}'), status: 200 },
  { name: 'chat: a UTF-8 byte order mark before the JSON', request: chatSend(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes(JSON.stringify(VALID_CHAT))])), status: 200 },
  { name: 'chat: charset=utf-8 and an upper-case media type', request: chatSend(VALID_CHAT, { ...AUTH, 'content-type': 'Application/JSON; charset=UTF-8' }), status: 200 },
  { name: 'chat: an unknown member is ignored', request: chatWith({ admin: true, role: 'root' }), status: 200 },
  { name: 'chat: an unknown query parameter is ignored', request: chatSend(VALID_CHAT, { ...AUTH, ...JSON_TYPE }, '/v1/chat/send?debug=1&full=maybe'), status: 200 },
  { name: 'chat: the scheme name in lower case', request: chatSend(VALID_CHAT, { authorization: `bearer ${API_KEY}`, ...JSON_TYPE }), status: 200 },
  { name: 'chat: the /api/v1 alias', request: chatSend(VALID_CHAT, { ...AUTH, ...JSON_TYPE }, '/api/v1/chat/send'), status: 200 },
  { name: 'chat: a chunked body with no Content-Length', request: () => ({ ...chatSend(VALID_CHAT)(), chunked: true }), status: 200 },

  // malformed and truncated JSON
  { name: 'chat: JSON cut off after a member', request: chatSend('{"message": "hi",'), status: 400, code: 'INVALID_JSON', message: 'The request body is not valid JSON' },
  { name: 'chat: JSON cut off inside a string', request: chatSend('{"message": "where is my ord'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: an empty body', request: chatSend(''), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a body of whitespace', request: chatSend(' \r\n\t '), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: unquoted keys', request: chatSend('{message: "hi", user_id: "u"}'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: single quotes', request: chatSend("{'message': 'hi', 'user_id': 'u'}"), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a trailing comma', request: chatSend('{"message": "hi", "user_id": "u",}'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a comment', request: chatSend('{"message": "hi", /* who */ "user_id": "u"}'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: NaN', request: chatSend('{"message": "hi", "user_id": "u", "context": {"n": NaN}}'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a raw control character inside a string', request: chatSend('{"message": "hi\u0001there", "user_id": "u"}'), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: two JSON documents', request: chatSend(JSON.stringify(VALID_CHAT) + JSON.stringify(VALID_CHAT)), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: the JSON literal null', request: chatSend('null'), status: 400, code: 'VALIDATION_ERROR', message: 'body must be object' },
  { name: 'chat: a JSON string', request: chatSend('"where is my order?"'), status: 400, code: 'VALIDATION_ERROR', message: 'body must be object' },

  // charset tricks
  { name: 'chat: UTF-16LE bytes declared charset=utf-16', request: chatSend(Buffer.from(JSON.stringify(VALID_CHAT), 'utf16le'), { ...AUTH, 'content-type': 'application/json; charset=utf-16' }), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: UTF-16LE bytes behind a UTF-16 byte order mark', request: chatSend(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(JSON.stringify(VALID_CHAT), 'utf16le')])), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: UTF-8 bytes declared charset=utf-16 (JSON defines no charset)', request: chatSend(VALID_CHAT, { ...AUTH, 'content-type': 'application/json; charset=utf-16' }), status: 200, check: isChatReply },
  { name: 'chat: invalid UTF-8 bytes in the message', request: chatSend(Buffer.concat([bytes('{"message":"where is my order '), Buffer.from([0xc3, 0x28, 0xff, 0xfe]), bytes('","user_id":"u"}')])), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: an overlong encoding of a quote', request: chatSend(Buffer.concat([bytes('{"message":"hi'), Buffer.from([0xc0, 0xa2]), bytes('","user_id":"u"}')])), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a surrogate encoded as UTF-8 bytes (CESU-8)', request: chatSend(Buffer.concat([bytes('{"message":"hi '), Buffer.from([0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80]), bytes('","user_id":"u"}')])), status: 400, code: 'INVALID_JSON' },
  { name: 'chat: a lone surrogate is no visible character', request: chatSend('{"message":"\\ud800","user_id":"u"}'), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must not be blank' },

  // deep nesting
  { name: 'chat: 10,000 levels of arrays as the body', request: chatSend(nested(10_000)), status: 400, code: 'VALIDATION_ERROR', message: 'body must be object' },
  { name: 'chat: 10,000 levels of arrays as the message', request: chatSend(`{"message":${nested(10_000)},"user_id":"u"}`), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: 5,000 levels of objects in a context member', request: chatSend(`{"message":"hi","user_id":"u","context":{"deep":${nestedObject(5_000)}}}`), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/deep must be a string, a number or a boolean' },
  { name: 'chat: 30,000 levels of arrays (near the body limit)', request: chatSend(nested(30_000)), status: 400, code: 'VALIDATION_ERROR' },

  // huge strings
  { name: 'chat: a body over 64 KiB', request: chatWith({ message: 'a'.repeat(70_000) }), status: 413, code: 'BODY_TOO_LARGE', message: 'The request body is larger than the limit of 65536 bytes' },
  { name: 'chat: a chunked body over 64 KiB', request: () => ({ ...chatWith({ message: 'a'.repeat(70_000) })(), chunked: true }), status: 413, code: 'BODY_TOO_LARGE' },
  { name: 'chat: a message of 5,000 characters', request: chatWith({ message: 'a'.repeat(5_000) }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must NOT have more than 4000 characters' },
  { name: 'chat: 4001 emoji', request: chatWith({ message: '😀'.repeat(4001) }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must NOT have more than 4000 characters' },
  { name: 'chat: a context string of 1001 characters', request: chatWith({ context: { note: 'n'.repeat(1001) } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/note must be a string, a number or a boolean' },

  // control characters and invisible messages
  { name: 'chat: a message of control characters only', request: chatWith({ message: '\u0000\u0001\u007f\u009f' }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must not be blank' },
  { name: 'chat: a message of direction controls and zero-width characters', request: chatWith({ message: '\u202e\u2066\u200b\u200d\ufeff' }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must not be blank' },

  // wrong types, field by field
  { name: 'chat: message a number', request: chatWith({ message: 42 }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: message null', request: chatWith({ message: null }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: message an array of strings', request: chatWith({ message: ['where is my order?'] }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: message an object', request: chatWith({ message: { text: 'hi' } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: message a boolean', request: chatWith({ message: true }), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: user_id a number', request: chatWith({ user_id: 8812 }), status: 400, code: 'VALIDATION_ERROR', message: 'body/user_id must be string' },
  { name: 'chat: user_id null', request: chatWith({ user_id: null }), status: 400, code: 'VALIDATION_ERROR', message: 'body/user_id must be string' },
  { name: 'chat: user_id an array', request: chatWith({ user_id: ['customer-1'] }), status: 400, code: 'VALIDATION_ERROR', message: 'body/user_id must be string' },
  { name: 'chat: context a string', request: chatWith({ context: 'A-10042' }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context must be object' },
  { name: 'chat: context an array', request: chatWith({ context: [{ order_id: 'A-1' }] }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context must be object' },
  { name: 'chat: context null', request: chatWith({ context: null }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context must be object' },
  { name: 'chat: context a number', request: chatWith({ context: 7 }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context must be object' },
  { name: 'chat: context.order_id a number', request: chatWith({ context: { order_id: 10042 } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/order_id must be string' },
  { name: 'chat: context.order_id a boolean', request: chatWith({ context: { order_id: true } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/order_id must be string' },
  { name: 'chat: context.purchase_date a number', request: chatWith({ context: { purchase_date: 20261102 } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/purchase_date must be string' },
  { name: 'chat: context.purchase_date not a calendar day', request: chatWith({ context: { purchase_date: '2026-13-01' } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/purchase_date must be a real calendar date in the form YYYY-MM-DD' },
  { name: 'chat: a context member that is an object', request: chatWith({ context: { customer: { name: 'Ana' } } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/customer must be a string, a number or a boolean' },
  { name: 'chat: a context member that is an array', request: chatWith({ context: { tags: ['vip'] } }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/tags must be a string, a number or a boolean' },
  { name: 'chat: a context number beyond the double range', request: chatSend('{"message":"hi","user_id":"u","context":{"total":1e400}}'), status: 400, code: 'VALIDATION_ERROR', message: 'body/context/total must be a string, a number or a boolean' },
  { name: 'chat: context with 51 members', request: chatWith({ context: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) }), status: 400, code: 'VALIDATION_ERROR', message: 'body/context must NOT have more than 50 properties' },
  { name: 'chat: conversation_id a number', request: chatWith({ conversation_id: 12 }), status: 400, code: 'VALIDATION_ERROR', message: 'body/conversation_id must be string' },
  { name: 'chat: conversation_id null', request: chatWith({ conversation_id: null }), status: 400, code: 'VALIDATION_ERROR', message: 'body/conversation_id must be string' },
  { name: 'chat: conversation_id over 128 characters', request: chatWith({ conversation_id: 'c'.repeat(129) }), status: 400, code: 'VALIDATION_ERROR', message: 'body/conversation_id must NOT have more than 128 characters' },
  { name: 'chat: an unknown conversation_id', request: chatWith({ conversation_id: '00000000-0000-4000-8000-000000000000' }), status: 404, code: 'CONVERSATION_NOT_FOUND', message: 'Conversation not found' },
  { name: 'chat: a conversation continued under another user_id', request: (f) => chatWith({ user_id: 'customer-2', conversation_id: f.conversationId })(), status: 404, code: 'CONVERSATION_NOT_FOUND' },
  { name: 'chat: a duplicate key, the last one a number', request: chatSend('{"message":"hi","message":42,"user_id":"u"}'), status: 400, code: 'VALIDATION_ERROR', message: 'body/message must be string' },
  { name: 'chat: __proto__ in the context', request: chatSend('{"message":"hi","user_id":"u","context":{"__proto__":{"admin":true}}}'), status: 400, code: 'FORBIDDEN_KEY' },
  { name: 'chat: constructor.prototype in the body', request: chatSend('{"message":"hi","user_id":"u","constructor":{"prototype":{"admin":true}}}'), status: 400, code: 'FORBIDDEN_KEY' },

  // content types and authentication
  { name: 'chat: Content-Type text/plain', request: chatSend(VALID_CHAT, { ...AUTH, 'content-type': 'text/plain' }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE', message: 'Content-Type must be one of: application/json' },
  { name: 'chat: a form-encoded body', request: chatSend('message=hi&user_id=u', { ...AUTH, 'content-type': 'application/x-www-form-urlencoded' }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'chat: a multipart body', request: chatSend(multipartBody([{ name: 'message', data: 'hi' }, { name: 'user_id', data: 'u' }]), { ...AUTH, ...MULTIPART_TYPE }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'chat: a JSON look-alike media type', request: chatSend(VALID_CHAT, { ...AUTH, 'content-type': 'application/jsonx' }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'chat: no Content-Type', request: chatSend(VALID_CHAT, AUTH), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'chat: no Content-Type and no body', request: () => ({ method: 'POST', path: '/v1/chat/send', headers: AUTH }), status: 400, code: 'VALIDATION_ERROR', message: 'body must be object' },
  { name: 'chat: no Authorization', request: chatSend(VALID_CHAT, JSON_TYPE), status: 401, code: 'UNAUTHORIZED', message: 'Unauthorized' },
  { name: 'chat: no Authorization, and malformed JSON (the key is checked first)', request: chatSend('{"message":', JSON_TYPE), status: 401, code: 'UNAUTHORIZED' },
  { name: 'chat: an unknown key', request: chatSend(VALID_CHAT, { authorization: 'Bearer not-a-key', ...JSON_TYPE }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'chat: the key in Basic credentials', request: chatSend(VALID_CHAT, { authorization: `Basic ${Buffer.from(`${API_KEY}:`).toString('base64')}`, ...JSON_TYPE }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'chat: Bearer with no key', request: chatSend(VALID_CHAT, { authorization: 'Bearer', ...JSON_TYPE }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'chat: the key without a scheme', request: chatSend(VALID_CHAT, { authorization: API_KEY, ...JSON_TYPE }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'chat: the key with a character more', request: chatSend(VALID_CHAT, { authorization: `Bearer ${API_KEY}x`, ...JSON_TYPE }), status: 401, code: 'UNAUTHORIZED' },

  // routes and methods
  { name: 'chat: GET on the send route', request: () => ({ method: 'GET', path: '/v1/chat/send', headers: AUTH }), status: 404, code: 'ROUTE_NOT_FOUND', message: 'Route GET:/v1/chat/send not found' },
  { name: 'chat: PUT on the send route', request: () => ({ ...chatSend(VALID_CHAT)(), method: 'PUT' }), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'chat: a trailing slash', request: chatSend(VALID_CHAT, { ...AUTH, ...JSON_TYPE }, '/v1/chat/send/'), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'chat: another version', request: chatSend(VALID_CHAT, { ...AUTH, ...JSON_TYPE }, '/v2/chat/send'), status: 404, code: 'ROUTE_NOT_FOUND' }
]

const TRANSCRIPT_CASES: Case[] = [
  {
    name: 'transcript: its own user (control)',
    request: transcript((f) => `${f.conversationId}?user_id=customer-1`),
    status: 200,
    check: (body, f) => { expect(body).toMatchObject({ conversation_id: f.conversationId, user_id: 'customer-1' }) }
  },
  { name: 'transcript: an unknown query parameter is ignored', request: transcript((f) => `${f.conversationId}?user_id=customer-1&debug=1`), status: 200 },
  { name: 'transcript: another user_id', request: transcript((f) => `${f.conversationId}?user_id=customer-2`), status: 404, code: 'CONVERSATION_NOT_FOUND', message: 'Conversation not found' },
  { name: 'transcript: an unknown conversation', request: transcript(() => 'no-such-conversation?user_id=customer-1'), status: 404, code: 'CONVERSATION_NOT_FOUND' },
  { name: 'transcript: no user_id', request: transcript((f) => f.conversationId), status: 400, code: 'VALIDATION_ERROR', message: "querystring must have required property 'user_id'" },
  { name: 'transcript: an empty user_id', request: transcript((f) => `${f.conversationId}?user_id=`), status: 400, code: 'VALIDATION_ERROR', message: 'querystring/user_id must NOT have fewer than 1 characters' },
  { name: 'transcript: a user_id over 128 characters', request: transcript((f) => `${f.conversationId}?user_id=${'u'.repeat(129)}`), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'transcript: user_id given twice', request: transcript((f) => `${f.conversationId}?user_id=customer-1&user_id=customer-2`), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'transcript: an id over 128 characters', request: transcript(() => `${'c'.repeat(129)}?user_id=customer-1`), status: 400, code: 'VALIDATION_ERROR', message: 'A path parameter is longer than 128 characters' },
  { name: 'transcript: an id that is not valid percent-encoding', request: transcript(() => '%E0%A4%A?user_id=customer-1'), status: 400, code: 'BAD_REQUEST', message: 'The request path is not a valid URL path' },
  { name: 'transcript: an id of an encoded NUL', request: transcript(() => '%00?user_id=customer-1'), status: 404, code: 'CONVERSATION_NOT_FOUND' },
  { name: 'transcript: an id with an encoded slash and dots', request: transcript(() => '..%2F..%2Fetc%2Fpasswd?user_id=customer-1'), status: 404, code: 'CONVERSATION_NOT_FOUND' },
  { name: 'transcript: no key', request: transcript((f) => `${f.conversationId}?user_id=customer-1`, {}), status: 401, code: 'UNAUTHORIZED' },
  { name: 'transcript: POST', request: transcript((f) => `${f.conversationId}?user_id=customer-1`, AUTH, 'POST'), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'transcript: DELETE', request: transcript((f) => `${f.conversationId}?user_id=customer-1`, AUTH, 'DELETE'), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'transcript: an empty id', request: transcript(() => '?user_id=customer-1'), status: 400, code: 'VALIDATION_ERROR', message: 'params/conversation_id must NOT have fewer than 1 characters' }
]

const DATA_URI_CASES: Case[] = [
  // valid controls, and declared types that are not trusted
  { name: 'data URI: a JPEG (control)', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg)}`), status: 200, check: isJpeg },
  { name: 'data URI: declared png, the bytes a JPEG', request: dataUriBody((f) => `data:image/png;base64,${base64(f.jpeg)}`), status: 200, check: isJpeg },
  { name: 'data URI: declared an unknown image subtype', request: dataUriBody((f) => `data:image/x-anything;base64,${base64(f.png)}`), status: 200, check: isPng },
  { name: 'data URI: a name parameter', request: dataUriBody((f) => `data:image/png;name=a.png;base64,${base64(f.png)}`), status: 200, check: isPng },
  { name: 'data URI: a charset parameter', request: dataUriBody((f) => `data:image/png;charset=utf-8;base64,${base64(f.png)}`), status: 200, check: isPng },
  { name: 'data URI: in upper case', request: dataUriBody((f) => `DATA:IMAGE/JPEG;BASE64,${base64(f.jpeg)}`), status: 200, check: isJpeg },
  { name: 'data URI: base64 wrapped at 76 columns with CRLF', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg).replace(/.{76}/g, '$&\r\n')}`), status: 200, check: isJpeg },
  { name: 'data URI: spaces and tabs inside the base64', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg).replace(/.{10}/g, '$& \t')}`), status: 200, check: isJpeg },
  { name: 'data URI: base64 without its padding', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(padded(f.jpeg)).replace(/=+$/, '')}`), status: 200, check: isJpeg },
  { name: 'data URI: JSON escapes in the URI', request: metadataJson((f) => `{"image":"\\u0064ata:image\\/jpeg;base64,${base64(f.jpeg).replaceAll('/', '\\/')}"}`), status: 200, check: isJpeg },
  { name: 'data URI: a GIF that is also JavaScript', request: dataUriBody((f) => `data:image/gif;base64,${base64(f.gifPolyglot)}`), status: 200, check: (body) => { expect(body).toMatchObject({ format: 'gif', resolution: { width: 10799, height: 1 } }) } },
  { name: 'data URI: an image without metadata', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.bareJpeg)}`), status: 422, code: 'IMAGE_LACKS_METADATA', message: 'Image lacks metadata' },

  // not a data URI of an image
  { name: 'data URI: a URL instead', request: dataUriBody(() => 'https://example.com/photo.jpg'), status: 400, code: 'INVALID_DATA_URI', message: 'The image must be a data URI of the form data:image/<subtype>;base64,<data>' },
  { name: 'data URI: bare base64, no header', request: dataUriBody((f) => base64(f.jpeg)), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: no ;base64 (percent-encoded data)', request: dataUriBody(() => 'data:image/svg+xml,%3Csvg%20xmlns%3D%22http%3A%2F%2Fwww.w3.org%2F2000%2Fsvg%22%2F%3E'), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: base64 not the last parameter', request: dataUriBody((f) => `data:image/png;base64;name=a.png,${base64(f.png)}`), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: no comma', request: dataUriBody(() => 'data:image/png;base64'), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: whitespace before data:', request: dataUriBody((f) => ` data:image/jpeg;base64,${base64(f.jpeg)}`), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: whitespace around the media type', request: dataUriBody((f) => `data: image/jpeg ;base64,${base64(f.jpeg)}`), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: no media type', request: dataUriBody((f) => `data:;base64,${base64(f.jpeg)}`), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: a header over 512 characters', request: dataUriBody((f) => `data:image/png;name=${'a'.repeat(600)};base64,${base64(f.png)}`), status: 400, code: 'INVALID_DATA_URI' },
  { name: 'data URI: text/html', request: dataUriBody(() => `data:text/html;base64,${base64(HTML)}`), status: 400, code: 'NOT_AN_IMAGE_MEDIA_TYPE', message: 'The data URI declares the media type text/html; only image/* media types are accepted' },
  { name: 'data URI: a JPEG declared application/octet-stream', request: dataUriBody((f) => `data:application/octet-stream;base64,${base64(f.jpeg)}`), status: 400, code: 'NOT_AN_IMAGE_MEDIA_TYPE' },
  { name: 'data URI: a PDF declared application/pdf', request: dataUriBody(() => `data:application/pdf;base64,${base64(PDF)}`), status: 400, code: 'NOT_AN_IMAGE_MEDIA_TYPE' },

  // base64 that is not
  { name: 'data URI: padding in the middle', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg.subarray(0, 30))}=${base64(f.jpeg.subarray(30))}`), status: 400, code: 'INVALID_BASE64', message: 'The data URI does not contain valid base64 data' },
  { name: 'data URI: three padding characters', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(padded(f.jpeg)).replace(/=+$/, '')}===`), status: 400, code: 'INVALID_BASE64' },
  { name: 'data URI: one character too many (length 4n+1)', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg.subarray(0, 300))}A`), status: 400, code: 'INVALID_BASE64' },
  { name: 'data URI: URL-safe base64', request: dataUriBody(() => `data:image/jpeg;base64,${Buffer.from([0xff, 0xd8, 0xff, 0xfb, 0xef, 0xfe]).toString('base64url')}`), status: 400, code: 'INVALID_BASE64' },
  { name: 'data URI: a form feed inside the base64', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg).slice(0, 40)}\f${base64(f.jpeg).slice(40)}`), status: 400, code: 'INVALID_BASE64' },
  { name: 'data URI: padding only', request: dataUriBody(() => 'data:image/png;base64,===='), status: 400, code: 'INVALID_BASE64' },

  // no image, and files that are not images
  { name: 'data URI: no data after the comma', request: dataUriBody(() => 'data:image/png;base64,'), status: 400, code: 'NO_IMAGE', message: 'No image provided' },
  { name: 'data URI: one byte', request: dataUriBody(() => 'data:image/png;base64,AA=='), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: SVG declared image/svg+xml', request: dataUriBody(() => `data:image/svg+xml;base64,${base64(SVG)}`), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: HTML declared image/png', request: dataUriBody(() => `data:image/png;base64,${base64(HTML)}`), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: a ZIP declared image/jpeg', request: dataUriBody(() => `data:image/jpeg;base64,${base64(ZIP)}`), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: a DjVu page declared image/vnd.djvu', request: dataUriBody(() => `data:image/vnd.djvu;base64,${base64(DJVU)}`), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: a JPEG cut after its SOI marker', request: dataUriBody((f) => `data:image/jpeg;base64,${base64(f.jpeg.subarray(0, 2))}`), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },

  // the JSON body around the URI
  { name: 'metadata JSON: an empty object', request: metadataJson(() => ({})), status: 400, code: 'NO_IMAGE', message: 'No image provided' },
  { name: 'metadata JSON: an empty image', request: metadataJson(() => ({ image: '' })), status: 400, code: 'NO_IMAGE' },
  { name: 'metadata JSON: image a number', request: metadataJson(() => ({ image: 42 })), status: 400, code: 'VALIDATION_ERROR', message: 'body/image must be string' },
  { name: 'metadata JSON: image an array of data URIs', request: metadataJson((f) => ({ image: [`data:image/jpeg;base64,${base64(f.jpeg)}`] })), status: 400, code: 'VALIDATION_ERROR', message: 'body/image must be string' },
  { name: 'metadata JSON: image null', request: metadataJson(() => ({ image: null })), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'metadata JSON: an array body', request: metadataJson(() => '[]'), status: 400, code: 'VALIDATION_ERROR', message: 'body must be object' },
  { name: 'metadata JSON: a byte that is not UTF-8 inside the data URI', request: metadataJson((f) => Buffer.concat([bytes(`{"image":"data:image/jpeg;base64,${base64(f.jpeg).slice(0, 100)}`), Buffer.from([0xff]), bytes(`${base64(f.jpeg).slice(100)}"}`)])), status: 400, code: 'INVALID_JSON' },
  { name: 'metadata JSON: truncated', request: metadataJson((f) => `{"image":"data:image/jpeg;base64,${base64(f.jpeg).slice(0, 100)}`), status: 400, code: 'INVALID_JSON' },
  { name: 'metadata JSON: 10,000 levels of arrays', request: metadataJson(() => `{"image":${nested(10_000, '"data:image/png;base64,AA=="')}}`), status: 400, code: 'VALIDATION_ERROR', message: 'body/image must be string' },
  { name: 'metadata JSON: __proto__', request: metadataJson(() => '{"__proto__":{"image":"x"}}'), status: 400, code: 'FORBIDDEN_KEY' },
  { name: 'metadata JSON: ?full=maybe', request: metadataJson((f) => ({ image: `data:image/jpeg;base64,${base64(f.jpeg)}` }), '?full=maybe'), status: 400, code: 'VALIDATION_ERROR', message: 'querystring/full must be boolean' },
  { name: 'metadata JSON: ?full= (empty)', request: metadataJson((f) => ({ image: `data:image/jpeg;base64,${base64(f.jpeg)}` }), '?full='), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'metadata JSON: ?full given twice', request: metadataJson((f) => ({ image: `data:image/jpeg;base64,${base64(f.jpeg)}` }), '?full=true&full=false'), status: 400, code: 'VALIDATION_ERROR' },
  { name: 'metadata JSON: ?full=true', request: metadataJson((f) => ({ image: `data:image/jpeg;base64,${base64(f.jpeg)}` }), '?full=true'), status: 200, check: (body) => { expect(body).toHaveProperty('tags') } },
  { name: 'metadata JSON: an unknown query parameter is ignored', request: metadataJson((f) => ({ image: `data:image/jpeg;base64,${base64(f.jpeg)}` }), '?verbose=1&path=/etc/passwd'), status: 200, check: (body) => { isJpeg(body); expect(body).not.toHaveProperty('tags') } }
]

const MULTIPART_CASES: Case[] = [
  // valid controls, and names that must change nothing
  { name: 'multipart: a JPEG (control)', request: imageFile((f) => f.jpeg), status: 200, check: (body, f) => { isJpeg(body); expect(body).toMatchObject({ filesize_bytes: f.jpeg.length, resolution: { width: 40, height: 30 } }) } },
  { name: 'multipart: the file route (control)', request: imageFile((f) => f.png, 'photo.png', '/v1/metadata/file'), status: 200, check: isPng },
  { name: 'multipart: filename ../../etc/passwd', request: imageFile((f) => f.jpeg, '../../etc/passwd'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: an absolute filename', request: imageFile((f) => f.jpeg, '/etc/passwd'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: a Windows path as filename', request: imageFile((f) => f.jpeg, 'C:\\Windows\\System32\\drivers\\etc\\hosts', '/v1/metadata/file'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: a NUL in the filename', request: imageFile((f) => f.jpeg, 'photo.jpg\u0000.php'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: a filename of 10,000 characters', request: imageFile((f) => f.jpeg, `${'a'.repeat(10_000)}.jpg`), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: an RTL override in the filename', request: imageFile((f) => f.jpeg, 'photo\u202Egpj.exe', '/v1/metadata/file'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: an empty filename', request: imageFile((f) => f.jpeg, ''), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: the part declared image/png, the bytes a JPEG', request: upload((f) => [{ name: 'image', filename: 'photo.png', type: 'image/png', data: f.jpeg }]), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: the part declared text/html', request: upload((f) => [{ name: 'image', filename: 'photo.html', type: 'text/html', data: f.jpeg }]), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: a JPEG with a ZIP archive appended', request: imageFile((f) => Buffer.concat([f.jpeg, ZIP]), 'photo.zip'), status: 200, check: (body, f) => { isJpeg(body); expect(body).toMatchObject({ filesize_bytes: f.jpeg.length + ZIP.length }) } },
  { name: 'multipart: a GIF that is also JavaScript', request: imageFile((f) => f.gifPolyglot, 'photo.gif.js'), status: 200, check: (body) => { expect(body).toMatchObject({ format: 'gif', camera: { make: 'NIKON' } }) } },
  { name: 'multipart: an unknown query parameter is ignored', request: upload((f) => [{ name: 'image', filename: 'photo.jpg', data: f.jpeg }], { query: '?debug=true' }), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: ?full=true', request: upload((f) => [{ name: 'image', filename: 'photo.jpg', data: f.jpeg }], { query: '?full=true' }), status: 200, check: (body) => { expect(body).toHaveProperty('tags') } },

  // files that are not images
  { name: 'multipart: a 0-byte file', request: imageFile(() => Buffer.alloc(0)), status: 400, code: 'NO_IMAGE', message: 'No image provided' },
  { name: 'multipart: a 1-byte file', request: imageFile(() => Buffer.from([0xff])), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT', message: /^The file is not an image in a supported format \(jpeg, png, / },
  { name: 'multipart: SVG', request: imageFile(() => SVG, 'image.svg'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: PDF', request: imageFile(() => PDF, 'scan.pdf', '/v1/metadata/file'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: HTML named .jpg', request: imageFile(() => HTML, 'photo.jpg'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: ZIP', request: imageFile(() => ZIP, 'photos.zip', '/v1/metadata/file'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: DjVu', request: imageFile(() => DJVU, 'page.djvu'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: BMP (a picture, not on the allow-list)', request: imageFile(() => BMP, 'pixel.bmp'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: a ZIP with a JPEG inside (not a JPEG)', request: imageFile((f) => storedZip('photo.jpg', f.jpeg), 'photo.jpg'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: a JPEG cut after its SOI marker', request: imageFile((f) => f.jpeg.subarray(0, 2)), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: a PNG cut after its signature', request: imageFile((f) => f.png.subarray(0, 8), 'photo.png'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: a PNG cut after its header chunk', request: imageFile((f) => f.png.subarray(0, 33), 'photo.png', '/v1/metadata/file'), status: 422, code: 'IMAGE_LACKS_METADATA', check: (body) => { expect(body).toMatchObject({ format: 'png', resolution: { width: 40, height: 30 }, filesize_bytes: 33 }) } },
  { name: 'multipart: a JPEG cut before its frame header (inside its XMP)', request: imageFile((f) => f.jpeg.subarray(0, f.jpeg.length >> 1)), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: a JPEG without its last 10 bytes', request: imageFile((f) => f.jpeg.subarray(0, f.jpeg.length - 10)), status: 200, check: isJpeg },

  // the parts around the file
  { name: 'multipart: the file in another field', request: upload((f) => [{ name: 'file', filename: 'photo.jpg', data: f.jpeg }]), status: 400, code: 'NO_IMAGE' },
  { name: 'multipart: image as a text field, not a file', request: upload((f) => [{ name: 'image', data: base64(f.jpeg) }]), status: 400, code: 'NO_IMAGE' },
  { name: 'multipart: no parts at all', request: upload(() => []), status: 400, code: 'NO_IMAGE' },
  { name: 'multipart: the file route, a 0-byte file', request: imageFile(() => Buffer.alloc(0), 'empty.jpg', '/v1/metadata/file'), status: 400, code: 'NO_IMAGE' },
  { name: 'multipart: the file route, the file in another field', request: upload((f) => [{ name: 'upload', filename: 'photo.jpg', data: f.jpeg }], { path: '/v1/metadata/file' }), status: 400, code: 'NO_IMAGE' },
  { name: 'multipart: the file route, two files', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }, { name: 'other', filename: 'b.svg', data: SVG }], { path: '/v1/metadata/file' }), status: 400, code: 'TOO_MANY_FILES' },
  { name: 'multipart: the file route, filename ../../etc/passwd', request: imageFile((f) => f.jpeg, '../../etc/passwd', '/v1/metadata/file'), status: 200, check: sameAsPlainUpload },
  { name: 'multipart: two files', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }, { name: 'image', filename: 'b.jpg', data: f.jpeg }]), status: 400, code: 'TOO_MANY_FILES', message: 'Send exactly one file, in the multipart field "image"' },
  { name: 'multipart: 17 text fields besides the file', request: upload((f) => [...Array.from({ length: 17 }, (_, i) => ({ name: `note${i}`, data: 'x' })), { name: 'image', filename: 'a.jpg', data: f.jpeg }]), status: 400, code: 'TOO_MANY_FIELDS' },
  { name: 'multipart: a text field over 64 KiB', request: upload((f) => [{ name: 'note', data: 'x'.repeat(70_000) }, { name: 'image', filename: 'a.jpg', data: f.jpeg }]), status: 413, code: 'FIELD_TOO_LARGE' },
  { name: 'multipart: a field named __proto__', request: upload((f) => [{ name: '__proto__', data: 'x' }, { name: 'image', filename: 'a.jpg', data: f.jpeg }]), status: 400, code: 'FORBIDDEN_KEY' },
  { name: 'multipart: no boundary in the Content-Type', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { headers: { ...AUTH, 'content-type': 'multipart/form-data' } }), status: 400, code: 'MALFORMED_MULTIPART', message: 'The multipart body is malformed: the Content-Type names no boundary' },
  { name: 'multipart: a boundary of 71 characters', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { headers: { ...AUTH, 'content-type': `multipart/form-data; boundary=${'b'.repeat(71)}` } }), status: 400, code: 'MALFORMED_MULTIPART' },
  { name: 'multipart: the body not split by the declared boundary', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { headers: { ...AUTH, 'content-type': 'multipart/form-data; boundary=another-boundary' } }), status: 400, code: 'MALFORMED_MULTIPART' },
  { name: 'multipart: no closing boundary', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { close: false }), status: 400, code: 'MALFORMED_MULTIPART' },
  { name: 'multipart: lines ending in LF alone', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { eol: '\n' }), status: 400, code: 'MALFORMED_MULTIPART' },
  { name: 'multipart: ?full=maybe', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { query: '?full=maybe' }), status: 400, code: 'VALIDATION_ERROR', message: 'querystring/full must be boolean' },
  { name: 'multipart: ?full=1 (only true and false are booleans)', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { query: '?full=1' }), status: 400, code: 'VALIDATION_ERROR', message: 'querystring/full must be boolean' },
  { name: 'metadata: no Content-Type, no body', request: () => ({ method: 'POST', path: '/v1/metadata', headers: AUTH }), status: 400, code: 'NO_IMAGE' },
  { name: 'metadata file route: no Content-Type, no body', request: () => ({ method: 'POST', path: '/v1/metadata/file', headers: AUTH }), status: 400, code: 'NO_IMAGE' },
  { name: 'metadata file route: a JSON body', request: (f) => ({ ...dataUriBody(() => `data:image/jpeg;base64,${base64(f.jpeg)}`)(f), path: '/v1/metadata/file' }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE', message: 'Content-Type must be one of: multipart/form-data' },
  { name: 'metadata file route: an empty JSON object', request: (f) => ({ ...metadataJson(() => ({}))(f), path: '/v1/metadata/file' }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'multipart: a PNG cut inside its header chunk', request: imageFile((f) => f.png.subarray(0, 20), 'photo.png'), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'data URI: a PNG cut inside its header chunk', request: dataUriBody(() => 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=='), status: 415, code: 'UNSUPPORTED_IMAGE_FORMAT' },
  { name: 'multipart: the file route with ?full=maybe', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { path: '/v1/metadata/file', query: '?full=maybe' }), status: 400, code: 'VALIDATION_ERROR' }
]

const METADATA_ROUTE_CASES: Case[] = [
  { name: 'metadata: Content-Type text/plain', request: () => ({ method: 'POST', path: '/v1/metadata', headers: { ...AUTH, 'content-type': 'text/plain' }, body: bytes('data:image/png;base64,AA==') }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE', message: 'Content-Type must be one of: application/json, multipart/form-data' },
  { name: 'metadata: Content-Type image/jpeg with the raw bytes', request: (f) => ({ method: 'POST', path: '/v1/metadata', headers: { ...AUTH, 'content-type': 'image/jpeg' }, body: f.jpeg }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'metadata: no Content-Type, with a body', request: (f) => ({ method: 'POST', path: '/v1/metadata', headers: AUTH, body: f.jpeg }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'metadata: multipart/mixed', request: upload((f) => [{ name: 'image', filename: 'a.jpg', data: f.jpeg }], { headers: { ...AUTH, 'content-type': `multipart/mixed; boundary=${BOUNDARY}` } }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'metadata: no Authorization', request: (f) => ({ ...imageFile(() => f.jpeg)(f), headers: MULTIPART_TYPE }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'metadata file route: Content-Type text/plain', request: () => ({ method: 'POST', path: '/v1/metadata/file', headers: { ...AUTH, 'content-type': 'text/plain' }, body: bytes('hello') }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE', message: 'Content-Type must be one of: multipart/form-data' },
  { name: 'metadata file route: no Content-Type, with a body', request: (f) => ({ method: 'POST', path: '/v1/metadata/file', headers: AUTH, body: f.jpeg }), status: 415, code: 'UNSUPPORTED_CONTENT_TYPE' },
  { name: 'metadata file route: GET', request: () => ({ method: 'GET', path: '/v1/metadata/file', headers: AUTH }), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'metadata file route: an unknown key', request: (f) => ({ ...imageFile(() => f.jpeg, 'a.jpg', '/v1/metadata/file')(f), headers: { ...MULTIPART_TYPE, authorization: 'Bearer nope' } }), status: 401, code: 'UNAUTHORIZED' },
  { name: 'metadata: GET', request: () => ({ method: 'GET', path: '/v1/metadata', headers: AUTH }), status: 404, code: 'ROUTE_NOT_FOUND', message: 'Route GET:/v1/metadata not found' },
  { name: 'metadata: DELETE on the file route', request: () => ({ method: 'DELETE', path: '/v1/metadata/file', headers: AUTH }), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'metadata: an unknown route below it', request: (f) => ({ ...imageFile(() => f.jpeg)(f), path: '/v1/metadata/files' }), status: 404, code: 'ROUTE_NOT_FOUND' },
  { name: 'an unknown route, no key', request: () => ({ method: 'GET', path: '/v1/admin?debug=1', headers: {} }), status: 404, code: 'ROUTE_NOT_FOUND', message: 'Route GET:/v1/admin not found' }
]

const CASES: Case[] = [...CHAT_CASES, ...TRANSCRIPT_CASES, ...DATA_URI_CASES, ...MULTIPART_CASES, ...METADATA_ROUTE_CASES]

// ---- the run ---------------------------------------------------------------------------------------------------

let t: TestApp
let images: ImageFactory
let base: string
const fixtures = {} as Fixtures

beforeAll(async () => {
  images = new ImageFactory()
  t = await createTestApp({ exiftool: { procs: 2, taskTimeoutMs: 10_000, maxQueue: 64 } })
  base = await listen(t)
  fixtures.jpeg = await images.make('jpeg', { width: 40, height: 30, tags: CAMERA_TAGS })
  fixtures.png = await images.make('png', { width: 40, height: 30, tags: CAMERA_TAGS })
  fixtures.bareJpeg = await images.make('jpeg', { width: 40, height: 30 })
  fixtures.gifPolyglot = await images.rewrite(gifJsPolyglot(), 'gif', CAMERA_TAGS)
  // Still a program after ExifTool wrote its XMP: compiled here, never run.
  expect(() => new Script(fixtures.gifPolyglot.toString('latin1'))).not.toThrow()
  const plain = await send(imageFile((f) => f.jpeg)(fixtures))
  fixtures.jpegDescription = JSON.parse(plain.body) as Record<string, unknown>
  const started = await send({ method: 'POST', path: '/v1/chat/send', headers: { ...AUTH, ...JSON_TYPE }, body: bytes(JSON.stringify(VALID_CHAT)) })
  fixtures.conversationId = (JSON.parse(started.body) as { conversation_id: string }).conversation_id
})

afterAll(async () => {
  await images.close()
  await t.close()
})

interface RawResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request on its own connection, the bytes as given; tolerates the server answering before the body is sent. */
async function send (raw: RawRequest): Promise<RawResponse> {
  const headers = { ...raw.headers }
  if (raw.body !== undefined && raw.chunked !== true) headers['content-length'] = String(raw.body.length)
  return await new Promise((resolve, reject) => {
    const request = httpRequest(`${base}${raw.path}`, { method: raw.method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks).toString() }) })
      response.on('error', reject)
    })
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error)
    })
    // Settles nothing when the answer came first; otherwise fails the case instead of leaving it waiting.
    request.on('close', () => { reject(new Error(`${raw.method} ${raw.path}: the connection closed without an answer`)) })
    if (raw.body !== undefined && raw.chunked === true) {
      const half = Math.floor(raw.body.length / 2)
      request.write(raw.body.subarray(0, half))
      request.end(raw.body.subarray(half))
    } else {
      request.end(raw.body)
    }
  })
}

describe('bad input, every operation', () => {
  it('holds at least 80 cases, each named once', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(80)
    expect(new Set(CASES.map(({ name }) => name)).size).toBe(CASES.length)
  })

  it.each(CASES.map((testCase) => ({ ...testCase, outcome: testCase.code ?? 'OK' })))('$name → $status $outcome', async ({ request, status, code, message, check }) => {
    const response = await send(request(fixtures))
    const body = JSON.parse(response.body) as Record<string, unknown>
    expect({ status: response.status, code: body['code'] }).toEqual({ status, code })
    expect(response.status).toBeLessThan(500)
    if (status === 200) {
      check?.(body, fixtures)
      return
    }
    expect(response.headers['content-type']).toMatch(/^application\/json/)
    expect(body).toMatchObject({ statusCode: status, code, error: STATUS_CODES[status], message: expect.stringMatching(/\S/) })
    if (typeof message === 'string') expect(body['message']).toBe(message)
    if (message instanceof RegExp) expect(body['message']).toMatch(message)
    if (status === 401) expect(response.headers['www-authenticate']).toBe('Bearer')
    if (status === 422) check?.(body, fixtures)
  })

  it('leaves no scratch file behind', async () => {
    expect(await t.scratchFiles()).toEqual([])
  })
})
