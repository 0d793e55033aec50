import { createHash } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { KeyInUrlError, UnauthorizedError } from '../src/errors.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key the request authenticated with (never logged). */
    apiKey: string
    /** An id of that key, safe to store and count by (a hash): conversations and rate limits belong to it. */
    apiKeyId: string
  }
}

export interface AuthOptions {
  apiKeys: readonly string[]
}

/**
 * Query parameters clients put keys in (compared in lower case; `access_token` is RFC 6750's). A key in a URL ends up
 * in proxies' access logs and browser histories, so it is never taken as a credential: a request that offers one and
 * no valid header gets the same 401 as any request without a key, its message saying where the key belongs.
 */
const KEY_PARAMETERS = new Set(['api_key', 'apikey', 'api-key', 'access_token', 'key', 'token'])

/**
 * Bearer API keys on every route of the context it is registered in. @fastify/bearer-auth compares keys in constant
 * time; a missing, malformed or unknown key becomes the envelope's 401 with `WWW-Authenticate: Bearer`.
 */
async function auth (fastify: FastifyInstance, options: AuthOptions): Promise<void> {
  await fastify.register(bearerAuth, {
    keys: new Set(options.apiKeys),
    addHook: false,
    // The scheme name is case-insensitive (RFC 7235 §2.1): `bearer <key>` is as valid as `Bearer <key>`.
    specCompliance: 'rfc6749',
    // The request's one log line already says 401 UNAUTHORIZED.
    verifyErrorLogLevel: 'debug'
  })
  // Hashed once here rather than on every request that needs it.
  const keyIds = new Map(options.apiKeys.map((key) => [key, keyId(key)]))
  fastify.decorateRequest('apiKey', '')
  fastify.decorateRequest('apiKeyId', '')
  fastify.addHook('onRequest', function (request, reply, done) {
    fastify.verifyBearerAuth!(request, reply, (error) => {
      if (error !== undefined) {
        done(keyInQuery(request.query) ? new KeyInUrlError() : new UnauthorizedError())
        return
      }
      // Verified above, so the header is `<scheme> <key>`; conversations belong to the key.
      request.apiKey = (request.headers.authorization ?? '').trim().replace(/^\S+\s+/, '')
      request.apiKeyId = keyIds.get(request.apiKey) ?? keyId(request.apiKey)
      done()
    })
  })
}

/** The first 22 characters (132 bits) of the key's SHA-256, base64url: what stored conversations were always tied to. */
function keyId (key: string): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 22)
}

function keyInQuery (query: unknown): boolean {
  return Object.keys(query as object).some((name) => KEY_PARAMETERS.has(name.toLowerCase()))
}

export default fp(auth, { name: 'auth', fastify: '5.x' })
