import underPressure from '@fastify/under-pressure'
import type { FastifyInstance, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { OverloadedError } from '../src/errors.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** under-pressure's per-route answer to pressure; the one it types only in its own options. */
    pressureHandler?: () => undefined
  }
}

export interface OverloadOptions {
  /** Mean event-loop delay over which requests are refused; 0: never. */
  maxEventLoopDelayMs: number
  /** Routes under this prefix are refused while the process lags; the rest (probes, metrics, docs) keep answering. */
  apiPrefix: string
}

/** Lets a request through whatever the pressure (under-pressure's per-route `pressureHandler`). */
const passThrough = (): undefined => undefined

/**
 * Refuses the API's requests (503 OVERLOADED with Retry-After, @fastify/under-pressure) while the event loop lags
 * behind: a saturated process answers at once that it is busy instead of letting every request time out. The health
 * probes, /metrics and the docs keep answering, and readiness reads `isUnderPressure()` so that a gateway stops
 * sending work to a process that would refuse it (a process that has just started counts its start-up as lag until
 * the next sample; src/server.ts listens only after it). A full ExifTool queue is refused by the metadata extractor
 * itself (503 EXTRACTOR_BUSY).
 */
async function overload (fastify: FastifyInstance, options: OverloadOptions): Promise<void> {
  if (options.maxEventLoopDelayMs === 0) {
    fastify.decorate('isUnderPressure', () => false)
    return
  }
  fastify.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.startsWith(options.apiPrefix)) route.config = { ...route.config, pressureHandler: passThrough }
  })
  await fastify.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: 250,
    retryAfter: 2,
    customError: OverloadedError
  })
}

export default fp(overload, { name: 'overload', fastify: '5.x' })
