import underPressure from '@fastify/under-pressure'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { OverloadedError } from '../src/errors.ts'

export interface OverloadOptions {
  /** Mean event-loop delay over which requests are refused; 0: never. */
  maxEventLoopDelayMs: number
}

/**
 * Refuses the API's requests (503 OVERLOADED with Retry-After, @fastify/under-pressure) while the event loop lags
 * behind: a saturated process answers at once that it is busy instead of letting every request time out. Registered
 * in the API's context only: the health probes and /metrics keep answering. A full ExifTool queue is refused by the
 * metadata extractor itself (503 EXTRACTOR_BUSY).
 */
async function overload (fastify: FastifyInstance, options: OverloadOptions): Promise<void> {
  if (options.maxEventLoopDelayMs === 0) return
  await fastify.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: 250,
    retryAfter: 2,
    customError: OverloadedError
  })
}

export default fp(overload, { name: 'overload', fastify: '5.x' })
