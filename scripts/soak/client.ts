/**
 * The soak's client: one request over node:http with a keep-alive agent, and its outcome. Not autocannon
 * (the bench's): its overallRate paces each connection, not one arrival stream, and it cannot follow the
 * conversation ids it gets back.
 */
import { Agent, request as httpRequest } from 'node:http'
import { performance } from 'node:perf_hooks'
import type { HttpRequest } from '../../test/support/corpus.ts'
import { IN_FLIGHT_CAP, REQUEST_TIMEOUT_MS, type Kind } from './settings.ts'

/** A request of the mix, and what its answer must be. */
export interface Planned extends HttpRequest {
  kind: Kind
  body?: Buffer
  /** Checks a 2xx answer's body; returns what is wrong, or undefined. Updates the conversation on success. */
  check: (body: Buffer) => string | undefined
  /** Called once the request is over, whatever happened (frees its conversation). */
  release: (ok: boolean) => void
}

export interface Outcome {
  kind: Kind
  ok: boolean
  /** Set when not ok: `<status> <code>`, a network error code, TIMEOUT, SKIPPED_AT_CAP or `BAD_BODY <kind>: …`. */
  error?: string
  /** For the error examples: the service's message, or what the check found. */
  detail?: string
  latencyMs: number
}

export function newAgent (): Agent {
  return new Agent({ keepAlive: true, maxSockets: IN_FLIGHT_CAP, maxFreeSockets: IN_FLIGHT_CAP })
}

/** Latency counts from the moment the request is handed to node:http. */
export function send (agent: Agent, port: number, planned: Planned): Promise<Outcome> {
  const started = performance.now()
  return new Promise((resolve) => {
    let settled = false
    const finish = (ok: boolean, error?: string, detail?: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      try {
        planned.release(ok)
      } finally {
        resolve({
          kind: planned.kind,
          ok,
          latencyMs: performance.now() - started,
          ...(error === undefined ? {} : { error }),
          ...(detail === undefined ? {} : { detail })
        })
      }
    }
    const headers: Record<string, string | number> = { ...planned.headers }
    if (planned.body !== undefined) headers['content-length'] = planned.body.length
    const request = httpRequest({ host: '127.0.0.1', port, method: planned.method, path: planned.path, headers, agent }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', (error: NodeJS.ErrnoException) => { finish(false, error.code ?? error.message) })
      response.on('end', () => {
        const status = response.statusCode ?? 0
        const body = Buffer.concat(chunks)
        if (status < 200 || status > 299) {
          const envelope = parseJson(body) as { code?: unknown, message?: unknown } | undefined
          const code = typeof envelope?.code === 'string' ? ` ${envelope.code}` : ''
          finish(false, `${status}${code}`, typeof envelope?.message === 'string' ? envelope.message : body.toString('utf8', 0, 200))
          return
        }
        const wrong = planned.check(body)
        if (wrong === undefined) finish(true)
        else finish(false, `BAD_BODY ${planned.kind}`, wrong)
      })
    })
    const timer = setTimeout(() => {
      finish(false, 'TIMEOUT', `no answer within ${REQUEST_TIMEOUT_MS} ms`)
      request.destroy()
    }, REQUEST_TIMEOUT_MS)
    request.on('error', (error: NodeJS.ErrnoException) => { finish(false, error.code ?? error.message, error.message) })
    request.end(planned.body)
  })
}

export function parseJson (body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
}
