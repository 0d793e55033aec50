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
 * its upload still sits on disk), when the client goes away first, and in any case when the response is done.
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

  // Each file once: taken off the list as it is removed, whichever hook gets there first.
  const removeFiles = async (request: FastifyRequest): Promise<void> => {
    const files = request.scratchFiles?.splice(0) ?? []
    await Promise.all(files.map(async (path) => { await directory.removeFile(path) }))
  }
  fastify.addHook('onSend', async (request) => { await removeFiles(request) })
  fastify.addHook('onRequestAbort', removeFiles)
  fastify.addHook('onResponse', removeFiles)
}

export default fp(scratch, { name: 'scratch', fastify: '5.x' })
