import { randomUUID } from 'node:crypto'
import { readdirSync, rmSync } from 'node:fs'
import { mkdtemp, readdir, rm, unlink } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'

const PREFIX = 'chat-metadata-api-'
/** mkdtemp's random suffix. */
const SUFFIX_LENGTH = 6

/**
 * A private directory (mode 0700) for the temporary copies ExifTool reads, one per app instance, removed with it.
 * Each file gets a fresh random name, so concurrent requests never share one and no client chooses a name.
 *
 * The directory is named after its process (`chat-metadata-api-<host>-<pid>-<random>`), so that the directory of a
 * process that died without removing it (killed, out of memory), and the partial uploads in it, can be told apart
 * and removed: by the next instance that starts on the host (`create`), and by a cluster's primary when a worker dies
 * (`removeScratchDirectoriesOf`). A process that exits while a request still hangs (its shutdown grace ran out)
 * removes its own on the way out.
 */
export class ScratchDirectory {
  readonly path: string

  private constructor (path: string) {
    this.path = path
  }

  static async create (root: string): Promise<ScratchDirectory> {
    await removeStaleScratchDirectories(root)
    const directory = new ScratchDirectory(await mkdtemp(join(root, scratchDirectoryPrefix(process.pid))))
    removedAtExit(directory.path)
    return directory
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
    LIVE.delete(this.path)
    await rm(this.path, { recursive: true, force: true })
  }
}

/** This host's name as it goes into a directory name: instances on other hosts sharing TMPDIR are never touched. */
const HOST = hostname().replace(/[^\w.]/g, '_').slice(0, 64) || 'host'

/** How the names of process `pid`'s scratch directories begin (mkdtemp adds six random characters). */
export function scratchDirectoryPrefix (pid: number): string {
  return `${PREFIX}${HOST}-${pid}-`
}

/**
 * The scratch directories under `root` of process `pid` on this host (a cluster worker that died), removed at once:
 * for a cluster's primary, which serves no request and may be about to exit.
 */
export function removeScratchDirectoriesOf (root: string, pid: number): void {
  let names: string[]
  try {
    names = readdirSync(root)
  } catch {
    return
  }
  for (const name of names) {
    if (ownerOf(name) === pid) rmSync(join(root, name), { recursive: true, force: true })
  }
}

/** The scratch directories under `root` of this host's processes that are gone, removed. */
export async function removeStaleScratchDirectories (root: string): Promise<void> {
  const names = await readdir(root).catch(() => [])
  await Promise.all(names.map(async (name) => {
    const owner = ownerOf(name)
    if (owner !== undefined && owner !== process.pid && !isRunning(owner)) await rm(join(root, name), { recursive: true, force: true })
  }))
}

/** The pid in a scratch directory's name, when it is one made on this host. */
function ownerOf (name: string): number | undefined {
  const own = `${PREFIX}${HOST}-`
  if (!name.startsWith(own) || name.length < own.length + SUFFIX_LENGTH + 3) return undefined
  const pid = name.slice(own.length, name.length - SUFFIX_LENGTH - 1)
  if (name[name.length - SUFFIX_LENGTH - 1] !== '-' || !/^\d{1,10}$/.test(pid)) return undefined
  return Number(pid)
}

/** Whether a process of this id exists: signal 0 checks without signalling; EPERM is someone else's, alive. */
function isRunning (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Scratch directories of this process not yet destroyed: removed if the process exits first. */
const LIVE = new Set<string>()
let removingAtExit = false

function removedAtExit (path: string): void {
  if (!removingAtExit) process.on('exit', removeLive)
  removingAtExit = true
  LIVE.add(path)
}

/** On 'exit', where only synchronous work runs (a shutdown whose grace ran out ends with `process.exit`). */
function removeLive (): void {
  for (const path of LIVE) rmSync(path, { recursive: true, force: true })
}
