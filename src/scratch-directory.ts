import { randomUUID } from 'node:crypto'
import { mkdtemp, rm, unlink } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A private directory (mode 0700) for the temporary copies ExifTool reads, one per app instance, removed with it.
 * Each file gets a fresh random name, so concurrent requests never share one and no client chooses a name.
 */
export class ScratchDirectory {
  readonly path: string

  private constructor (path: string) {
    this.path = path
  }

  static async create (root: string): Promise<ScratchDirectory> {
    return new ScratchDirectory(await mkdtemp(join(root, 'chat-metadata-api-')))
  }

  /** A new, unused file path inside the directory; `extension` tells ExifTool which parser to try first. */
  newFilePath (extension: string): string {
    return join(this.path, `${randomUUID()}.${extension}`)
  }

  /** Removes a file, if it was ever created: one call, no lstat first. */
  async removeFile (path: string): Promise<void> {
    await unlink(path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
  }

  async destroy (): Promise<void> {
    await rm(this.path, { recursive: true, force: true })
  }
}
