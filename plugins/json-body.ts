import { isUtf8 } from 'node:buffer'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import secureJson from 'secure-json-parse'
import { ForbiddenKeyError, InvalidJsonError } from '../src/errors.ts'

/**
 * JSON bodies, parsed as Fastify does (secure-json-parse, which refuses keys that could reach an object's
 * prototype), but saying which key was refused rather than calling valid JSON invalid. Bytes that are not UTF-8 are
 * not JSON (RFC 8259 §8.1): decoding them would put U+FFFD in place of what the customer wrote, and the garbled
 * text would be answered and kept as if it had been sent. A `charset` parameter changes nothing (RFC 8259 §11).
 * Registered by the routes that take such a body (plugins/chat.ts); the metadata route reads its own as it streams
 * (plugins/json-image-body.ts).
 */
async function jsonBody (fastify: FastifyInstance): Promise<void> {
  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    const bytes = body as Buffer
    if (bytes.length === 0 || !isUtf8(bytes)) {
      done(new InvalidJsonError(), undefined)
      return
    }
    const text = bytes.toString('utf8')
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
