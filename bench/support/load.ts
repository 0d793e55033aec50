import { createRequire } from 'node:module'
import type { HttpRequest } from '../../test/support/corpus.ts'
import { startSampling, waitQuiet, type Usage } from '../../test/support/proc.ts'
import type { Side, Target } from './rounds.ts'

export type { HttpRequest }

export interface LoadOptions {
  /** The process that serves, whose tree is sampled. */
  server: { pid: number, url: string }
  connections: number
  /** What each connection sends, in turn; a function gives each connection (0, 1, …) its own list. */
  requests: HttpRequest[] | ((connection: number) => HttpRequest[])
  timeoutSeconds?: number
  /** RSS sampling interval. */
  sampleMs?: number
}

export interface LoadResult {
  requestsPerSecond: number
  p50: number
  p99: number
  usage: Usage
}

/** Every run that had a request fail (not 2xx, a socket error, a timeout): the bench exits non-zero. */
export const failures: string[] = []

/** The part of autocannon's API used here (it ships no types). */
interface AutocannonClient { setRequests: (requests: HttpRequest[]) => void }
interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  non2xx: number
  statusCodeStats: Record<string, { count: number }>
  latency: { p50: number, p99: number }
  requests: { total: number }
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

/**
 * Load from autocannon in this process for `seconds`, while the server's process tree (with its ExifTool children)
 * is sampled from /proc; this process's own CPU over the run is the load generator's cost.
 */
export async function load (name: string, options: LoadOptions, seconds: number): Promise<LoadResult> {
  const { server, requests } = options
  let connection = 0
  const stop = await startSampling(server.pid, options.sampleMs)
  const result = await autocannon({
    url: server.url,
    connections: options.connections,
    duration: seconds,
    timeout: options.timeoutSeconds ?? 30,
    requests: typeof requests === 'function' ? requests(0) : requests,
    ...(typeof requests === 'function' ? { setupClient: (client: AutocannonClient) => { client.setRequests(requests(connection++)) } } : {})
  })
  const usage = await stop()
  await waitQuiet(server.pid)
  if (result.non2xx + result.errors + result.timeouts > 0) {
    const codes = Object.entries(result.statusCodeStats).map(([code, { count }]) => `${count}×${code}`).join(', ')
    failures.push(`${name}: ${result.non2xx} not 2xx (${codes}), ${result.errors} errors, ${result.timeouts} timeouts`)
  }
  return { requestsPerSecond: result.requests.total / result.duration, p50: result.latency.p50, p99: result.latency.p99, usage }
}

/** A side whose value is requests per second; beside it latency, the server's CPU and the load generator's. */
export function httpSide (name: string, options: LoadOptions & { peer?: string, targets?: Target[] }): Side {
  return {
    name,
    ...(options.peer === undefined ? {} : { peer: options.peer }),
    ...(options.targets === undefined ? {} : { targets: options.targets }),
    run: async (seconds) => {
      const { requestsPerSecond, p50, p99, usage } = await load(name, options, seconds)
      return { value: requestsPerSecond, extras: { p50Ms: p50, p99Ms: p99, cpu: usage.cpu, loadgen: usage.loadgen } }
    }
  }
}
