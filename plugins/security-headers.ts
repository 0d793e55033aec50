import type { IncomingMessage, ServerResponse } from 'node:http'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'

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

/**
 * Helmet's headers for our options, asked of helmet once, with `Cache-Control: no-store`. They depend on nothing in
 * the request (no CSP nonces), so every answer gets the same set. @fastify/helmet builds helmet's middleware anew for
 * every request; this asks helmet the same question once. Left out: the headers for old browsers' HTML
 * (X-XSS-Protection, X-Download-Options, X-DNS-Prefetch-Control, Origin-Agent-Cluster), which an API's JSON answers
 * do not need.
 */
function answerHeaders (): Record<string, string> {
  const headers: Record<string, string> = {}
  const recorder = {
    setHeader (name: string, value: string | number) { headers[name.toLowerCase()] = String(value) },
    removeHeader (name: string) { delete headers[name.toLowerCase()] }
  }
  const middleware = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
    xXssProtection: false,
    xDownloadOptions: false,
    xDnsPrefetchControl: false,
    originAgentCluster: false
  })
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (error?: unknown) => { if (error !== undefined) throw error })
  return { ...headers, 'cache-control': HEADERS_WITHOUT_HOOKS['cache-control']! }
}

/**
 * The headers every answer carries, set as the request comes in, so that a route can replace any of them. Answers
 * hold GPS positions, transcripts and customers' words: no cache may keep them (`Cache-Control: no-store` unless a
 * route says otherwise) and no browser may sniff them into something else. Helmet adds the rest that fits an API: a
 * Content-Security-Policy under which a JSON answer opened in a browser can load and run nothing, nor be framed (the
 * docs page sets its own), no Referer leaks, HSTS.
 */
async function securityHeaders (fastify: FastifyInstance): Promise<void> {
  const headers = answerHeaders()
  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers)
    done()
  })
}

export default fp(securityHeaders, { name: 'security-headers', fastify: '5.x' })
