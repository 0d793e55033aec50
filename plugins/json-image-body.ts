import { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { releaseChunk } from '../src/metadata/intake.ts'
import { receiveJsonImageBody, type JsonImageBody } from '../src/metadata/json-image-body.ts'

/**
 * `application/json` for the context it is registered in, left unread until the route's handler reads it
 * (`receiveDataUri`), once the request has passed its checks: a body that carries an image as a data URI, tens of
 * megabytes, is never parsed whole. Fastify enforces no body limit on such a parser; the reading does.
 */
async function jsonImageBody (fastify: FastifyInstance): Promise<void> {
  fastify.addContentTypeParser('application/json', (_request, _payload, done) => { done(null) })
}

/**
 * The request's JSON body, read as it arrives (src/metadata/json-image-body.ts): its `image` data URI decoded straight
 * into a scratch file of the request, the body checked as the service's JSON parser would, and refused as soon as it
 * is longer than any body carrying an image of `maxBytes` could be. Read to its end unless it is too long.
 */
export async function receiveDataUri (request: FastifyRequest, maxBytes: number): Promise<JsonImageBody> {
  const raw = request.raw
  const declared = raw.headers['content-length']
  return await receiveJsonImageBody(raw.iterator({ destroyOnReturn: false }), {
    maxBytes,
    ...(declared === undefined ? {} : { declaredBytes: Number(declared) }),
    scratchFile: (extension) => request.scratchFile(extension),
    // A socket's body chunks are copies the HTTP parser made for this request alone, freed once scanned. Not so under
    // `inject` (light-my-request), where a chunk may be the caller's own buffer.
    ...(raw.socket instanceof Socket ? { release: releaseChunk } : {})
  })
}

export default fp(jsonImageBody, { name: 'json-image-body', fastify: '5.x' })
