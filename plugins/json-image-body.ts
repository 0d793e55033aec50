import { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { BodyTooLargeError } from '../src/errors.ts'
import { releaseChunk } from '../src/metadata/intake.ts'
import { receiveJsonImageBody } from '../src/metadata/json-image-body.ts'
import { acceptedContentTypes } from './error-envelope.ts'

declare module 'fastify' {
  interface FastifyRequest {
    /** Why the JSON body's image was refused; thrown by the route once the request has passed its own checks. */
    imageRefused: Error | undefined
  }
}

export interface JsonImageBodyOptions {
  /** Largest image in a JSON data URI. */
  maxImageBytes: number
}

/**
 * `application/json` for the context it is registered in, streamed the way multipart is: the body is read as it
 * arrives, its `image` data URI decoded straight into the metadata intake (a scratch file, never memory), and the
 * route gets a body of the same shape without its contents, for its schema to validate. Replaces the service's
 * buffered JSON parser (plugins/json-body.ts) here only, with its contract: invalid JSON, UTF-8 and forbidden keys
 * refused alike. Fastify enforces no body limit on a streaming parser: the route's `bodyLimit` is checked against
 * the Content-Length before reading and against the bytes as they arrive. Depends on the scratch plugin.
 */
async function jsonImageBody (fastify: FastifyInstance, options: JsonImageBodyOptions): Promise<void> {
  // Declared with the multipart plugin's, which sets it too.
  if (!fastify.hasRequestDecorator('uploadedImage')) fastify.decorateRequest('uploadedImage', undefined)
  fastify.decorateRequest('imageRefused', undefined)

  fastify.removeContentTypeParser('application/json')
  fastify.addContentTypeParser('application/json', async (request: FastifyRequest, payload: AsyncIterable<Buffer>) => {
    const limit = request.routeOptions.bodyLimit
    if (Number(request.headers['content-length']) > limit) throw new BodyTooLargeError(limit)
    const received = await receiveJsonImageBody(payload, {
      maxBodyBytes: limit,
      maxBytes: options.maxImageBytes,
      scratchFile: (extension) => request.scratchFile(extension),
      // A route that takes no JSON answers 415 after the body has been checked, as it did with a buffered body.
      receive: acceptedContentTypes(request).includes('application/json'),
      // A socket's body chunks are copies the HTTP parser made for this request alone, freed once scanned. Not so
      // under `inject` (light-my-request), where a chunk may be the caller's own buffer, nor after a hook replaced
      // the stream.
      ...(payload === request.raw && request.raw.socket instanceof Socket ? { release: releaseChunk } : {})
    })
    request.uploadedImage = received.image
    request.imageRefused = received.imageError
    return received.body
  })
}

export default fp(jsonImageBody, { name: 'json-image-body', fastify: '5.x', dependencies: ['scratch'] })
