import { createHash, type Hash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { Transform } from 'node:stream'
import { finished, pipeline } from 'node:stream/promises'
import multipart, { type MultipartFile } from '@fastify/multipart'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ImageTooLargeError, TooManyFilesError } from '../src/errors.ts'
import { ManifestStoreMarkerSearch } from '../src/metadata/provenance/manifest-store-marker.ts'
import type { ScratchDirectory } from '../src/scratch-directory.ts'

export interface UploadedImage {
  path: string
  sizeBytes: number
  /** Hex SHA-256 of the bytes received, computed as they streamed to disk. */
  sha256: string
  /** Whether the bytes carry a C2PA manifest store's marker, looked for as they streamed. */
  mayHoldManifest: boolean
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The multipart `image` file, already on disk in the scratch directory. */
    uploadedImage: UploadedImage | undefined
    /** Scratch files this request created: removed before its reply is sent, or when it ends without one. */
    scratchFiles: string[] | undefined
    /** File parts seen so far in this multipart body, whatever their field. */
    multipartFileCount: number
  }
}

export interface MultipartOptions {
  maxUploadBytes: number
  scratch: ScratchDirectory
}

/** The multipart field that carries the image. */
export const IMAGE_FIELD = 'image'

/**
 * multipart/form-data for the context it is registered in: the `image` file streams straight to a private scratch
 * file, never into memory, and the size limit is enforced while it streams. Fields are attached to the body so the
 * route's schema validates and documents both request variants.
 */
async function multipartUploads (fastify: FastifyInstance, options: MultipartOptions): Promise<void> {
  const { scratch, maxUploadBytes } = options
  fastify.decorateRequest('uploadedImage', undefined)
  fastify.decorateRequest('scratchFiles', undefined)
  fastify.decorateRequest('multipartFileCount', 0)

  await fastify.register(multipart, {
    attachFieldsToBody: 'keyValues',
    limits: { fileSize: maxUploadBytes, files: 2, fields: 16, fieldSize: 64 * 1024, parts: 18, headerPairs: 100 },
    async onFile (this: FastifyRequest, part: MultipartFile) {
      this.multipartFileCount += 1
      if (this.multipartFileCount > 1) throw new TooManyFilesError()
      if (part.fieldname !== IMAGE_FIELD) {
        // Not the image: read past it. Alone it means no image was sent; with the image, one file too many.
        part.file.resume()
        await finished(part.file)
        return
      }
      const path = scratch.newFilePath()
      trackScratchFile(this, path)
      const digest = createHash('sha256')
      const marker = new ManifestStoreMarkerSearch()
      try {
        await pipeline(part.file, observing(digest, marker), createWriteStream(path, { flags: 'wx', mode: 0o600 }))
      } catch (error) {
        // Removed here too: an upload aborted before the file was opened would otherwise create it after the
        // abort hook had already cleaned up.
        await scratch.removeFile(path)
        throw (error as { code?: string }).code === 'FST_REQ_FILE_TOO_LARGE' ? new ImageTooLargeError(maxUploadBytes) : error
      }
      if (part.file.truncated) throw new ImageTooLargeError(maxUploadBytes)
      const sizeBytes = part.file.bytesRead
      // An empty file is no image: leaving `image` out of the body makes validation answer NO_IMAGE.
      if (sizeBytes === 0) return
      this.uploadedImage = { path, sizeBytes, sha256: digest.digest('hex'), mayHoldManifest: marker.found }
      ;(part as MultipartFile & { value: string }).value = part.filename || IMAGE_FIELD
    }
  })

  // Each file once: taken off the list as it is removed, whichever hook gets there first.
  const removeScratchFiles = async (request: FastifyRequest): Promise<void> => {
    for (const path of request.scratchFiles?.splice(0) ?? []) await scratch.removeFile(path)
  }
  // Before the reply leaves (so a client never sees an answer while its upload still sits on disk), or when the
  // client goes away before there is one.
  fastify.addHook('onSend', async (request) => { await removeScratchFiles(request) })
  fastify.addHook('onRequestAbort', removeScratchFiles)
}

/** Passes chunks through unchanged, hashing them and looking for a manifest store on the way: one pass, no copy. */
function observing (digest: Hash, marker: ManifestStoreMarkerSearch): Transform {
  return new Transform({
    transform (chunk: Buffer, _encoding, callback) {
      digest.update(chunk)
      marker.update(chunk)
      callback(null, chunk)
    }
  })
}

export function trackScratchFile (request: FastifyRequest, path: string): void {
  request.scratchFiles ??= []
  request.scratchFiles.push(path)
}

export default fp(multipartUploads, { name: 'multipart-uploads', fastify: '5.x' })
