// Files that cost ExifTool far more than their size: the second outside probe's findings (issue 24, rows 2 and 4),
// made in code around a real JPEG or PNG. Small, well-formed on the outside (lengths, CRCs), hostile inside. Each
// builder says what it does to ExifTool 13.x when nothing bounds it; RELIABILITY.md gives the numbers.

import { crc32 } from 'node:zlib'
import { be16, be32 } from './bytes.ts'

/** The byte after a JPEG's SOI: where new APPn segments go (before the JFIF/Exif ones is fine for ExifTool). */
function insertIntoJpeg (jpeg: Buffer, segments: Buffer[]): Buffer {
  if (jpeg.readUInt16BE(0) !== 0xffd8) throw new Error('not a JPEG')
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)])
}

function jpegSegment (marker: number, payload: Buffer): Buffer {
  if (payload.length + 2 > 0xffff) throw new Error(`segment payload of ${payload.length} bytes does not fit`)
  return Buffer.concat([Buffer.from([0xff, marker]), be16(payload.length + 2), payload])
}

/** A JUMBF superbox (ISO/IEC 19566-5): its description box, then `content`. */
function jumbfBox (label: string, content: Buffer): Buffer {
  // jumd: a content-type UUID (here C2PA's CBOR assertion type), toggles (label present), the label.
  const jumd = Buffer.concat([Buffer.from('63626f7200110010800000aa00389b71', 'hex'), Buffer.from([0x03]), Buffer.from(`${label}\0`, 'latin1')])
  const description = Buffer.concat([be32(8 + jumd.length), Buffer.from('jumd', 'latin1'), jumd])
  return Buffer.concat([be32(8 + description.length + content.length), Buffer.from('jumb', 'latin1'), description, content])
}

/** APP11 segments carrying one JUMBF box (JPEG's "JP" packets, ISO/IEC 19566-5 Annex), split to fit. */
function jumbfSegments (box: Buffer): Buffer[] {
  // Each packet repeats the box's own header (LBox, TBox) after CI "JP", En (instance) and Z (sequence from 1).
  const header = box.subarray(0, 8)
  const body = box.subarray(8)
  const room = 0xffff - 2 - 8 - 8
  const segments: Buffer[] = []
  for (let at = 0, sequence = 1; at < body.length || segments.length === 0; at += room, sequence++) {
    segments.push(jpegSegment(0xeb, Buffer.concat([Buffer.from('JP', 'latin1'), be16(1), be32(sequence), header, body.subarray(at, at + room)])))
  }
  return segments
}

/**
 * A JPEG whose APP11 JUMBF box holds CBOR maps nested `depth` deep ({"a": {"a": …}}): ExifTool flattens nested maps
 * into tag names that grow with the depth, so its memory grows with the square of it: a few tens of kilobytes take
 * it to gigabytes.
 */
export function jpegWithNestedCbor (jpeg: Buffer, depth: number): Buffer {
  const levels = Buffer.alloc(depth * 3, Buffer.from([0xa1, 0x61, 0x61])) // map(1), text(1) "a", then the value
  const cbor = Buffer.concat([levels, Buffer.from([0x00])])
  const content = Buffer.concat([be32(8 + cbor.length), Buffer.from('cbor', 'latin1'), cbor])
  return insertIntoJpeg(jpeg, jumbfSegments(jumbfBox('c2pa.hostile', content)))
}

/**
 * A JPEG whose JUMBF box inside the APP11 segment has a 64-bit length (LBox 1, then XLBox) that is correct:
 * ExifTool 13.x dies on it, on every read.
 */
export function jpegWithExtendedLengthJumbf (jpeg: Buffer): Buffer {
  const inner = jumbfBox('c2pa', Buffer.alloc(0))
  // The same box with its header rewritten as LBox = 1, TBox, XLBox = the length with the longer header.
  const extended = Buffer.concat([be32(1), Buffer.from('jumb', 'latin1'), Buffer.alloc(4), be32(inner.length + 8), inner.subarray(8)])
  const payload = Buffer.concat([Buffer.from('JP', 'latin1'), be16(1), be32(1), extended])
  return insertIntoJpeg(jpeg, [jpegSegment(0xeb, payload)])
}

/** An XMP packet whose one property is a structure nested `depth` deep (rdf:parseType="Resource" inside itself). */
function nestedXmp (depth: number): Buffer {
  const open = '<x:n rdf:parseType="Resource">'
  const close = '</x:n>'
  return Buffer.from('<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?>' +
    '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
    '<rdf:Description rdf:about="" xmlns:x="http://ns.example.com/x/1.0/">' +
    open.repeat(depth) + 'v' + close.repeat(depth) +
    '</rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>', 'latin1')
}

/** A PNG with an iTXt XMP chunk whose structure is nested `depth` deep: ExifTool's time grows with the square of it. */
export function pngWithNestedXmp (png: Buffer, depth: number): Buffer {
  return pngWithXmp(png, nestedXmp(depth))
}

/**
 * A PNG whose XMP holds `count` structures, each nested only `depth` deep: within any nesting limit, but ExifTool's
 * time grows with count × depth² all the same (28 deep × 800, 789 KB: seconds of CPU a read).
 */
export function pngWithManyNestedXmp (png: Buffer, depth: number, count: number): Buffer {
  return pngWithXmp(png, Buffer.from('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">' +
    '<rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:subject>' +
    ('<rdf:Bag><rdf:li>'.repeat(depth) + 'x' + '</rdf:li></rdf:Bag>'.repeat(depth)).repeat(count) +
    '</dc:subject></rdf:Description></rdf:RDF></x:xmpmeta>', 'latin1'))
}

function pngWithXmp (png: Buffer, xmp: Buffer): Buffer {
  const data = Buffer.concat([Buffer.from('XML:com.adobe.xmp\0\0\0\0\0', 'latin1'), xmp])
  const typed = Buffer.concat([Buffer.from('iTXt', 'latin1'), data])
  const chunk = Buffer.concat([be32(data.length), typed, be32(crc32(typed))])
  // After IHDR (8-byte signature, then IHDR's 4 + 4 + 13 + 4 bytes).
  const at = 8 + 25
  return Buffer.concat([png.subarray(0, at), chunk, png.subarray(at)])
}

/** A JPEG with an XMP APP1 segment whose structure is nested `depth` deep. */
export function jpegWithNestedXmp (jpeg: Buffer, depth: number): Buffer {
  return insertIntoJpeg(jpeg, [jpegSegment(0xe1, Buffer.concat([Buffer.from('http://ns.adobe.com/xap/1.0/\0', 'latin1'), nestedXmp(depth)]))])
}

/**
 * A JPEG whose Exif IFD0 has a DNG ProfileIFD (tag 0xC6F5) entry: ExifTool 13.x reads a profile IFD from the file
 * itself, which a JPEG's Exif block is not, and dies on it, on every read.
 */
export function jpegWithProfileIfd (jpeg: Buffer): Buffer {
  const tiff = Buffer.alloc(8 + 2 + 2 * 12 + 4 + 6 + 8)
  tiff.write('MM\0*', 0, 'latin1')
  tiff.writeUInt32BE(8, 4)
  tiff.writeUInt16BE(2, 8)
  // Make, "NIKON" at the end of the TIFF.
  tiff.writeUInt16BE(0x010f, 10)
  tiff.writeUInt16BE(2, 12)
  tiff.writeUInt32BE(6, 14)
  tiff.writeUInt32BE(8 + 2 + 24 + 4, 18)
  // ProfileIFD (type IFD, 13), pointing at the spare bytes after IFD0.
  tiff.writeUInt16BE(0xc6f5, 22)
  tiff.writeUInt16BE(13, 24)
  tiff.writeUInt32BE(1, 26)
  tiff.writeUInt32BE(8 + 2 + 24 + 4 + 6, 30)
  tiff.writeUInt32BE(0, 34)
  tiff.write('NIKON\0', 38, 'latin1')
  return insertIntoJpeg(jpeg, [jpegSegment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]))])
}
