import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import errorEnvelope from '../../plugins/error-envelope.ts'
import { NoImageError, ExtractorBusyError } from '../../src/errors.ts'

// The envelope plugin alone, on a bare Fastify instance, with routes that fail in every way it must handle.
async function appWithFailingRoutes () {
  const app = Fastify({ logger: false })
  await app.register(errorEnvelope)
  app.get('/internal', async () => { throw new Error('ENOENT: /var/tmp/chat-metadata-api-x/secret.jpg exiftool said: boom') })
  app.get('/typed-500', async () => { throw Object.assign(new Error('pool exploded at /usr/lib/perl'), { statusCode: 500, code: 'EXIFTOOL' }) })
  // eslint-disable-next-line no-throw-literal -- a dependency throwing a non-Error must still get the envelope
  app.get('/thrown-string', async () => { throw 'a string, not an Error' })
  app.get('/ours', async () => { throw new NoImageError() })
  app.get('/busy', async () => { throw new ExtractorBusyError() })
  app.post('/json', async () => ({ ok: true }))
  return app
}

describe('the error envelope', () => {
  it.each(['/internal', '/typed-500', '/thrown-string'])('hides internals of an unexpected failure (%s)', async (url) => {
    const app = await appWithFailingRoutes()
    const response = await app.inject({ method: 'GET', url })
    expect(response.statusCode).toBe(500)
    expect(response.json()).toEqual({ statusCode: 500, code: 'INTERNAL_ERROR', error: 'Internal Server Error', message: 'Internal Server Error' })
    expect(response.body).not.toMatch(/tmp|perl|exiftool|stack/i)
  })

  it('gives the service\'s own errors the status and headers of their code', async () => {
    const app = await appWithFailingRoutes()
    const ours = await app.inject({ method: 'GET', url: '/ours' })
    expect(ours.statusCode).toBe(400)
    expect(ours.json()).toEqual({ statusCode: 400, code: 'NO_IMAGE', error: 'Bad Request', message: 'No image provided' })
    const busy = await app.inject({ method: 'GET', url: '/busy' })
    expect(busy.statusCode).toBe(503)
    expect(busy.headers['retry-after']).toBe('1')
  })

  it('answers an unknown route with 404 in the envelope', async () => {
    const app = await appWithFailingRoutes()
    const response = await app.inject({ method: 'DELETE', url: '/nowhere?x=1' })
    expect(response.statusCode).toBe(404)
    expect(response.json()).toEqual({ statusCode: 404, code: 'ROUTE_NOT_FOUND', error: 'Not Found', message: 'Route DELETE:/nowhere not found' })
  })

  it('translates Fastify\'s body errors to the service\'s codes', async () => {
    const app = await appWithFailingRoutes()
    const badJson = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json' }, payload: '{' })
    expect(badJson.json()).toEqual({ statusCode: 400, code: 'INVALID_JSON', error: 'Bad Request', message: 'The request body is not valid JSON' })
    const emptyJson = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json' }, payload: '' })
    expect(emptyJson.json()).toMatchObject({ statusCode: 400, code: 'INVALID_JSON' })
    const tooLarge = await app.inject({ method: 'POST', url: '/json', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }) })
    expect(tooLarge.json()).toEqual({ statusCode: 413, code: 'BODY_TOO_LARGE', error: 'Payload Too Large', message: 'The request body is larger than the limit of 1048576 bytes' })
  })
})
