import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * A private directory (mode 0700) for the temporary copies ExifTool reads, one per app instance, removed with it.
 * Each upload gets a fresh random name, so concurrent requests never share a file.
 */
export class ScratchDirectory {
  readonly path: string

  private constructor (path: string) {
    this.path = path
  }

  static async create (root: string): Promise<ScratchDirectory> {
    return new ScratchDirectory(await mkdtemp(join(root, 'chat-metadata-api-')))
  }

  /** A new, unused file path inside the directory; `extension` helps ExifTool pick its parser first. */
  newFilePath (extension = 'upload'): string {
    return join(this.path, `${randomUUID()}.${extension}`)
  }

  async removeFile (path: string): Promise<void> {
    await rm(path, { force: true })
  }

  async destroy (): Promise<void> {
    await rm(this.path, { recursive: true, force: true })
  }
}
