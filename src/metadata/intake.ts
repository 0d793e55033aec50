import { createHash } from 'node:crypto'
import { open, unlink, type FileHandle } from 'node:fs/promises'
import { ImageTooComplexError, ImageTooLargeError, NoImageError, UnsupportedImageFormatError } from '../errors.ts'
import { IMAGE_FORMATS, scratchExtension } from './formats.ts'
import { ManifestStoreMarkerSearch } from './provenance/manifest-store-marker.ts'
import { readFromFile } from './binary-reader.ts'
import { SNIFF_HEAD_BYTES, sniffHead, type SniffedImage } from './sniff.ts'
import { imageStructureProblem } from './structure-guard.ts'

/** An image received whole and checked: on disk in the scratch directory, its format known, its structure sane. */
export interface StoredImage {
  /** A private temporary copy ExifTool reads, named with the format's extension. */
  path: string
  sizeBytes: number
  /** Hex SHA-256 of the bytes received. */
  sha256: string
  /** The bytes carry a C2PA manifest store's marker: only then does the validator read the file. */
  mayHoldManifest: boolean
  sniffed: SniffedImage
}

export interface IntakeOptions {
  /** A new path in the scratch directory, with this extension; its owner removes it when the request ends. */
  scratchFile: (extension: string) => string
  /** Larger images are refused (IMAGE_TOO_LARGE) as soon as the count passes it. */
  maxBytes: number
  /**
   * Called with each chunk once it has been hashed, searched and copied, when the intake needs it no more: a source
   * whose chunks are its own to free frees them here (`releaseChunk`) rather than at V8's next collection.
   */
  release?: (chunk: Buffer) => void
}

/**
 * Writes are gathered to this size: a few large writes instead of one per network chunk. Chunks are copied into one
 * batch buffer rather than kept: a chunk read is garbage at once, freed young, whereas chunks kept for a batch would
 * outlive a collection and wait, tens of megabytes of them under concurrent uploads, for a full one.
 */
const WRITE_BATCH_BYTES = 1024 * 1024
/**
 * The batch starts this small and doubles as bytes arrive: a megabyte for each small image counts against V8's
 * budget for buffers and makes it collect more often, which cost about a third of the small-image throughput.
 */
const FIRST_BATCH_BYTES = 64 * 1024

/**
 * Takes one image's bytes as they arrive (a multipart file part, a data URI being decoded) and leaves a checked copy
 * on disk, in one pass: the bytes are hashed and searched for a C2PA marker on the way, the format is decided from
 * the first SNIFF_HEAD_BYTES (held in memory until then, so that bytes which are no image never reach the disk and
 * the file gets the right name at once), and TIFF directories are counted before ExifTool ever sees the file.
 * Memory stays bounded by the head and one write batch, whatever the size. No chunk is kept once the next one is
 * asked for: a source may reuse its buffer. Throws NO_IMAGE, IMAGE_TOO_LARGE, UNSUPPORTED_IMAGE_FORMAT or
 * IMAGE_TOO_COMPLEX; nothing is left on disk when it throws.
 */
export async function receiveImage (chunks: AsyncIterable<Buffer> | Iterable<Buffer>, options: IntakeOptions): Promise<StoredImage> {
  const digest = createHash('sha256')
  const marker = new ManifestStoreMarkerSearch()
  let sizeBytes = 0
  let batch: Buffer | undefined
  let batched = 0
  let file: { handle: FileHandle, path: string } | undefined
  let sniffed: SniffedImage | undefined
  let head: Buffer | undefined

  const startFile = async (complete: boolean): Promise<void> => {
    head = Buffer.from(batch!.subarray(0, batched))
    sniffed = sniffHead(head, complete)
    if (sniffed === undefined) throw new UnsupportedImageFormatError(IMAGE_FORMATS.join(', '))
    const path = options.scratchFile(scratchExtension(sniffed.format))
    file = { handle: await open(path, 'wx+', 0o600), path }
  }
  const flush = async (): Promise<void> => {
    for (let written = 0; written < batched;) written += (await file!.handle.write(batch!, written, batched - written)).bytesWritten
    batched = 0
  }

  try {
    for await (const chunk of chunks) {
      sizeBytes += chunk.length
      if (sizeBytes > options.maxBytes) throw new ImageTooLargeError(options.maxBytes)
      digest.update(chunk)
      marker.update(chunk)
      for (let copied = 0; copied < chunk.length;) {
        if (batch === undefined || (batched === batch.length && batch.length < WRITE_BATCH_BYTES)) batch = grown(batch, batched)
        const count = chunk.copy(batch, batched, copied)
        copied += count
        batched += count
        if (batched < WRITE_BATCH_BYTES) continue
        if (file === undefined) await startFile(false)
        await flush()
      }
      options.release?.(chunk)
      if (file === undefined && batched >= SNIFF_HEAD_BYTES) await startFile(false)
    }
    if (sizeBytes === 0) throw new NoImageError()
    if (file === undefined) await startFile(true)
    await flush()
    const problem = await imageStructureProblem(sniffed!.format, readFromFile(file!.handle, sizeBytes, head!), sizeBytes)
    if (problem !== undefined) throw new ImageTooComplexError(problem)
    await file!.handle.close()
    return { path: file!.path, sizeBytes, sha256: digest.digest('hex'), mayHoldManifest: marker.found, sniffed: sniffed! }
  } catch (error) {
    if (file !== undefined) {
      await file.handle.close().catch(() => {})
      await unlink(file.path).catch(() => {})
    }
    throw error
  } finally {
    // No write or structure check is in flight (each is awaited): the batch and the head, buffers of their own, are
    // freed now. They live as long as the upload, past the young generation, and would otherwise wait for V8's next
    // full collection, which V8 starts sooner the more memory outside its heap waits for it.
    if (batch !== undefined) releaseChunk(batch)
    if (head !== undefined) releaseChunk(head)
  }
}

/**
 * Frees a chunk's memory now, for a reader that owns its chunks and is done with them. Without this each
 * network chunk (64 KB) would wait for a full collection: V8 starts one for memory outside its heap only after 64 MB
 * more of it, so under a few large bodies tens of megabytes of read chunks pile up, scattered through the C heap
 * where they keep it from shrinking. Only a chunk that is a whole buffer of its own is freed: a slice may share its
 * buffer with something else.
 */
export function releaseChunk (chunk: Buffer): void {
  if (chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength && chunk.buffer instanceof ArrayBuffer) chunk.buffer.transfer(0)
}

/** A batch buffer twice the size of `batch` (the first one FIRST_BATCH_BYTES), holding its first `used` bytes. */
function grown (batch: Buffer | undefined, used: number): Buffer {
  const larger = Buffer.allocUnsafeSlow(batch === undefined ? FIRST_BATCH_BYTES : Math.min(2 * batch.length, WRITE_BATCH_BYTES))
  if (batch !== undefined) {
    batch.copy(larger, 0, 0, used)
    releaseChunk(batch)
  }
  return larger
}
