import helmet from '@fastify/helmet'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The headers every answer carries. Answers hold GPS positions, transcripts and customers' words: no cache may keep
 * them (`Cache-Control: no-store` unless a route says otherwise) and no browser may sniff them into something
 * else. @fastify/helmet adds the rest that fits an API: a Content-Security-Policy under which a JSON answer opened
 * in a browser can load and run nothing, nor be framed (the docs page sets its own), no Referer leaks, HSTS.
 */
/**
 * What an answer written before any hook runs still carries (the router's refusals, Node's client errors answered on
 * the socket): helmet never sees those, and they are error envelopes, so the headers that matter for them suffice.
 */
export const HEADERS_WITHOUT_HOOKS: Readonly<Record<string, string>> = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'referrer-policy': 'no-referrer'
}

async function securityHeaders (fastify: FastifyInstance): Promise<void> {
  await fastify.register(helmet, {
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } }
  })
  fastify.addHook('onSend', async (_request, reply, payload) => {
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
    return payload
  })
}

export default fp(securityHeaders, { name: 'security-headers', fastify: '5.x' })
