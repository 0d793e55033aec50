/** The fuzzed server, as scripts/fuzz.ts sees it: started, asked for its state, checked for health, closed. */
import { setTimeout as delay } from 'node:timers/promises'
import type { FuzzBase } from '../../test/support/image-mutations.ts'
import { openFds, readTree } from '../../test/support/proc.ts'
import { forkChild, isAlive, withinTime } from '../../test/support/processes.ts'

/** ExifTool's 10 s per image, once more on a new child, and slack: an answer later than this is a hang. */
export const REQUEST_TIMEOUT_MS = 60_000

export interface ServerState {
  pids: number[]
  procs: number
  scratchFiles: number
  heapUsedMB: number
  /** Memory outside the V8 heap held by JavaScript objects (Buffers among them). */
  externalMB: number
}

export interface FuzzServer {
  pid: number
  baseUrl: string
  /** Set when the process exited before it was asked to. */
  crash: () => string | undefined
  state: () => Promise<ServerState>
  /** Closes the app, then ends the process; once (a later call gets the first one's answer). */
  close: () => Promise<{ leftoverEntries: number | undefined }>
}

/** The server at rest: RSS, open descriptors, and from the server itself its heap after a GC. */
export interface RestingSample {
  rssMB: number
  fds: number
  heapUsedMB: number
  externalMB: number
}

/** Forks scripts/fuzz/service.ts, with --expose-gc so that its state is read after a collection. */
export async function startServer (apiKey: string, tempRoot: string, logFile: string): Promise<FuzzServer> {
  const child = await withinTime(
    forkChild(new URL('./service.ts', import.meta.url), { FUZZ_API_KEY: apiKey, FUZZ_TEMP_ROOT: tempRoot, FUZZ_LOG_FILE: logFile }, ['--expose-gc']),
    120_000, 'the server was not ready within 120000 ms')
  let closing: Promise<{ leftoverEntries: number | undefined }> | undefined
  let crash: string | undefined
  child.exited.then(({ code, signal }) => {
    if (closing === undefined) crash = `the process exited before it was asked to (code ${code}, signal ${signal})`
  })
  const close = async (): Promise<{ leftoverEntries: number | undefined }> => {
    const leftoverEntries = crash === undefined ? await withinTime(child.call<number>('close'), 30_000, 'no answer').catch(() => undefined) : undefined
    await child.stop()
    return { leftoverEntries }
  }
  return {
    pid: child.pid,
    baseUrl: child.url,
    crash: () => crash,
    state: () => withinTime(child.call<ServerState>('state'), 30_000, "the server did not answer 'state' within 30000 ms"),
    close: () => (closing ??= close())
  }
}

/**
 * A valid JPEG answers 200 with its camera (as many at once as the pool has children), the service is ready, and
 * every ExifTool child is alive: undefined, or what is wrong.
 */
export async function healthy (server: FuzzServer, apiKey: string, valid: FuzzBase): Promise<string | undefined> {
  let problem: string | undefined
  // A child may just have been recycled (they retire after 500 tasks) and is replaced on demand: a few rounds.
  for (let round = 0; round < 5; round++) {
    const state = await server.state()
    const answers = await Promise.all(Array.from({ length: state.procs * 2 }, async () => {
      const form = new FormData()
      form.append('image', new Blob([valid.bytes]), 'valid.jpg')
      const response = await fetch(`${server.baseUrl}/v1/metadata`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` }, body: form, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
      return { status: response.status, body: await response.json() as { camera?: { make?: string } } }
    }))
    const wrong = answers.find((answer) => answer.status !== 200 || answer.body.camera?.make !== 'NIKON')
    const ready = await fetch(`${server.baseUrl}/health/ready`)
    const after = await server.state()
    problem = wrong !== undefined
      ? `a valid JPEG got HTTP ${wrong.status} ${JSON.stringify(wrong.body).slice(0, 200)}`
      : ready.status !== 200
        ? `/health/ready answered ${ready.status}`
        : after.pids.length !== after.procs || !after.pids.every(isAlive)
          ? `${after.pids.length} of ${after.procs} ExifTool children alive`
          : undefined
    if (problem === undefined) return undefined
  }
  return problem
}

export async function restingSample (server: FuzzServer): Promise<RestingSample> {
  const state = await server.state()
  await delay(500) // the closed connections' descriptors are released
  const fds = await openFds(server.pid)
  return { rssMB: await residentMB(server.pid), fds, heapUsedMB: state.heapUsedMB, externalMB: state.externalMB }
}

export async function residentMB (pid: number): Promise<number> {
  return (await readTree(pid)).rssMB
}
