import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import secureJson from 'secure-json-parse'
import { ForbiddenKeyError, InvalidJsonError } from '../src/errors.ts'

/**
 * JSON bodies, parsed as Fastify does (secure-json-parse, which refuses keys that could reach an object's
 * prototype), but saying which key was refused rather than calling valid JSON invalid.
 */
async function jsonBody (fastify: FastifyInstance): Promise<void> {
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string
    if (text.length === 0) {
      done(new InvalidJsonError(), undefined)
      return
    }
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }))
    } catch (error) {
      // secure-json-parse says "forbidden prototype property" for `__proto__` and `constructor.prototype` alike.
      const forbidden = /forbidden (?:prototype|constructor) property/.test((error as Error).message)
      done(forbidden ? new ForbiddenKeyError('"__proto__" or "constructor.prototype"') : new InvalidJsonError(), undefined)
    }
  })
}

export default fp(jsonBody, { name: 'json-body', fastify: '5.x' })
