import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { ScratchDirectory } from '../src/scratch-directory.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** A new path in the private scratch directory, removed when this request ends, however it ends. */
    scratchFile: (extension: string) => string
    /** Paths handed out to this request and not yet removed. */
    scratchFiles: string[] | null
  }
}

export interface ScratchOptions {
  /** The directory under which the private scratch directory is made. */
  tempRoot: string
}

/**
 * The one owner of the scratch directory ExifTool reads from: created private (0700) when the app starts, removed
 * when it closes; each request's files are removed before its reply leaves (a client never sees an answer while
 * its upload still sits on disk), at once when the client goes away first (its ExifTool reads are abandoned too),
 * and in any case when the response is done.
 */
async function scratch (fastify: FastifyInstance, options: ScratchOptions): Promise<void> {
  const directory = await ScratchDirectory.create(options.tempRoot)
  fastify.addHook('onClose', async () => { await directory.destroy() })

  fastify.decorateRequest('scratchFiles', null)
  fastify.decorateRequest('scratchFile', function (this: FastifyRequest, extension: string): string {
    const path = directory.newFilePath(extension)
    this.scratchFiles ??= []
    this.scratchFiles.push(path)
    return path
  })

  // Taken off the list as they are removed, by whichever of onSend and onResponse comes first.
  const removeFiles = async (request: FastifyRequest): Promise<void> => {
    const files = request.scratchFiles?.splice(0) ?? []
    await Promise.all(files.map(async (path) => { await directory.removeFile(path) }))
  }
  // Left on the list: a file whose path was handed out but which is not on disk yet is removed when the handler's
  // reply is sent (it always is, into the closed connection).
  const abandonFiles = async (request: FastifyRequest): Promise<void> => {
    const files = request.scratchFiles ?? []
    for (const path of files) fastify.metadataExtractor.abandon(path)
    await Promise.all(files.map(async (path) => { await directory.removeFile(path) }))
  }
  fastify.addHook('onRequest', async (request, reply) => {
    // The connection closed before the answer was written, during the upload or after it: Fastify's onRequestAbort
    // covers only the first, and its onResponse waits for an answer that is never written.
    reply.raw.once('close', () => {
      if (reply.raw.writableFinished) return
      abandonFiles(request).catch((error: unknown) => { request.log.warn({ err: error }, 'scratch file not removed') })
    })
  })
  fastify.addHook('onSend', async (request) => { await removeFiles(request) })
  fastify.addHook('onResponse', removeFiles)
}

export default fp(scratch, { name: 'scratch', fastify: '5.x', dependencies: ['exiftool-pool'] })
