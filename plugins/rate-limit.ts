import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { RateLimitedError } from '../src/errors.ts'

export interface RateLimitOptions {
  /** Redis keys start with it, beside the conversations. */
  keyPrefix: string
}

/**
 * Requests per minute per API key (@fastify/rate-limit), counted in Redis when the service has one, so that every
 * replica counts the same requests; in memory otherwise. Routes opt in with `config.rateLimit` (`perMinute()`).
 * Over the limit: 429 RATE_LIMITED in the envelope, with Retry-After and the RateLimit-* headers. If Redis cannot
 * count, requests pass: an outage of the counter is not an outage of the API.
 */
async function rateLimits (fastify: FastifyInstance, options: RateLimitOptions): Promise<void> {
  await fastify.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    ...(fastify.hasDecorator('redis') ? { redis: fastify.redis, nameSpace: `${options.keyPrefix}rate-limit:` } : {}),
    skipOnError: true,
    // Counted per key (its id, a hash: keys never reach Redis), not per address: many customers share one gateway.
    keyGenerator: (request) => request.apiKeyId,
    errorResponseBuilder: () => new RateLimitedError(),
    onExceeded: (request) => { fastify.metrics.rateLimited.inc({ route: request.routeOptions.url ?? 'unmatched' }) }
  })
}

/** A route's `config.rateLimit`: `max` requests a minute, or none when `max` is 0. */
export function perMinute (max: number): { max: number, timeWindow: number } | false {
  return max === 0 ? false : { max, timeWindow: 60_000 }
}

export default fp(rateLimits, { name: 'rate-limits', fastify: '5.x', dependencies: ['auth', 'metrics'] })
