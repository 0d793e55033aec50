import { execFileSync, spawnSync } from 'node:child_process'
import { request as httpRequest } from 'node:http'
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDirectoryPrefix } from '../../src/scratch-directory.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { isAlive, until } from '../support/processes.ts'
import { startService, stopService } from '../support/servers.ts'

// The real server process, started as a container would start it (`node src/server.ts`) and as `npm start` does,
// stopped with SIGTERM while an upload is in flight.
const KEY = 'shutdown-test-key'
let photo: Buffer
let tempRoot: string

beforeAll(async () => {
  const images = new ImageFactory()
  try {
    photo = await images.make('jpeg', { width: 640, height: 480, tags: CAMERA_TAGS })
  } finally {
    await images.close()
  }
  tempRoot = await mkdtemp(join(tmpdir(), 'chat-metadata-api-shutdown-'))
})

afterAll(async () => { await rm(tempRoot, { recursive: true, force: true }) })

/** The server's process and every process below it (npm → node → perl/exiftool). */
function processTree (root: number): number[] {
  const lines = execFileSync('ps', ['-eo', 'pid=,ppid=']).toString().trim().split('\n')
  const parents = lines.map((line) => line.trim().split(/\s+/).map(Number) as [number, number])
  const tree = [root]
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, ppid] of parents) {
      if (tree.includes(ppid) && !tree.includes(pid)) {
        tree.push(pid)
        grew = true
      }
    }
  }
  return tree
}

/** Files in the service's scratch directories under TMPDIR. */
async function scratchFiles (): Promise<string[]> {
  const directories = (await readdir(tempRoot)).filter((name) => name.startsWith('chat-metadata-api-'))
  return (await Promise.all(directories.map(async (name) => await readdir(join(tempRoot, name)).catch(() => [])))).flat()
}

/** A multipart upload whose body is sent in two parts; the second only when `release` is called. */
function slowUpload (port: number): { release: () => void, answer: Promise<{ status: number, body: string }> } {
  const boundary = 'shutdown-test-boundary'
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="image"; filename="photo.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`)
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`)
  // Trailing bytes after the JPEG make the first part longer than the 512 KiB the intake holds in memory before it
  // opens the scratch file, so the file exists while the request waits for its second part.
  const body = Buffer.concat([head, photo, Buffer.alloc(1024 * 1024), tail])
  const half = head.length + photo.length + 768 * 1024
  const request = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/v1/metadata',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': body.length }
  })
  const answer = new Promise<{ status: number, body: string }>((resolve, reject) => {
    request.on('response', (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => { text += chunk.toString() })
      response.on('end', () => { resolve({ status: response.statusCode ?? 0, body: text }) })
    })
    request.on('error', reject)
  })
  request.write(body.subarray(0, half))
  return { release: () => { request.end(body.subarray(half)) }, answer }
}

describe.each([{ how: 'node' as const }, { how: 'npm' as const }])('SIGTERM to `$how`', ({ how }) => {
  it('finishes the request in flight, refuses new connections, ends ExifTool and exits 0', async () => {
    const server = await startService({ API_KEYS: KEY, TMPDIR: tempRoot, SHUTDOWN_GRACE_MS: '10000' }, { how })
    const upload = slowUpload(server.port)
    // The upload has begun: the server holds an open request, its first half already in the scratch directory
    // (a fixed wait would race a loaded machine: a request not yet read when SIGTERM comes is refused with 503).
    await until(async () => (await scratchFiles()).length > 0, 200, 50)
    const tree = processTree(server.child.pid!)
    expect(tree.length).toBeGreaterThan(1)

    server.child.kill('SIGTERM')
    // Stopped accepting: a new connection is refused while the request in flight goes on.
    await until(async () => {
      try {
        await fetch(`http://127.0.0.1:${server.port}/health/live`)
        return false
      } catch {
        return true
      }
    }, 100, 50)
    upload.release()
    const answer = await upload.answer
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ camera: { make: 'NIKON', model: 'COOLPIX P6000' }, format: 'jpeg' })

    const exit = await server.exited
    expect(exit).toEqual({ code: 0, signal: null })
    expect(server.output()).toMatch(/"signal":"SIGTERM","msg":"closing"/)
    // No process of the server's is left, ExifTool's included, and its scratch directory is gone (npm and Node may
    // keep their own caches under TMPDIR).
    await until(() => tree.every((pid) => !isAlive(pid)), 100, 50)
    expect((await readdir(tempRoot)).filter((name) => name.startsWith('chat-metadata-api-'))).toEqual([])
  })
})

describe('scratch directories', () => {
  it('SIGTERM while a request hangs: the process exits when its grace runs out, and its scratch directory goes with it', async () => {
    const server = await startService({ API_KEYS: KEY, TMPDIR: tempRoot, SHUTDOWN_GRACE_MS: '1000' })
    // Half an upload, and no more ever: the request can only end with the process.
    const upload = slowUpload(server.port)
    upload.answer.catch(() => {})
    await until(async () => (await scratchFiles()).length > 0, 200, 50)
    server.child.kill('SIGTERM')
    expect(await server.exited).toEqual({ code: 1, signal: null })
    expect(server.output()).toMatch(/killed by timeout/)
    expect((await readdir(tempRoot)).filter((name) => name.startsWith('chat-metadata-api-'))).toEqual([])
  })

  it('at start-up, those of this host\'s processes that are gone are removed, with the uploads they hold; no other', async () => {
    const root = await mkdtemp(join(tmpdir(), 'chat-metadata-api-stale-'))
    try {
      // A process that has come and gone: its id is free.
      const gone = spawnSync('true').pid!
      expect(isAlive(gone)).toBe(false)
      const stale = `${scratchDirectoryPrefix(gone)}Ab12Cd`
      const keep = [
        // This test's own process, alive.
        `${scratchDirectoryPrefix(process.pid)}Ef34Gh`,
        // Another host's (TMPDIR shared over a volume): its processes cannot be seen from here.
        `chat-metadata-api-another_host-${gone}-Ij56Kl`,
        // Not a scratch directory of the service at all.
        'chat-metadata-api-notes'
      ]
      for (const name of [stale, ...keep]) {
        await mkdir(join(root, name))
        await writeFile(join(root, name, 'partial-upload.jpg'), photo)
      }
      const server = await startService({ API_KEYS: KEY, TMPDIR: root })
      try {
        const names = await readdir(root)
        expect(names).not.toContain(stale)
        expect(names).toEqual(expect.arrayContaining(keep))
        // And its own, made after the sweep.
        expect(names.filter((name) => name.startsWith(scratchDirectoryPrefix(server.child.pid!)))).toHaveLength(1)
      } finally {
        await stopService(server)
      }
      expect((await readdir(root)).sort()).toEqual([...keep].sort())
    } finally {
      await rm(root, { recursive: true, force: true })
    }
  })
})
