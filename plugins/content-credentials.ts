import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { ContentCredentialsVerifier, type ContentCredentialsConfig } from '../src/metadata/provenance/c2pa-verifier.ts'

declare module 'fastify' {
  interface FastifyInstance {
    contentCredentialsVerifier: ContentCredentialsVerifier
  }
}

/** The C2PA validator's worker threads as an app resource: started with the app, ended when it closes. */
async function contentCredentials (fastify: FastifyInstance, options: ContentCredentialsConfig): Promise<void> {
  const verifier = await ContentCredentialsVerifier.start(options)
  fastify.decorate('contentCredentialsVerifier', verifier)
  fastify.addHook('onClose', async () => { await verifier.close() })
}

export default fp(contentCredentials, { name: 'content-credentials', fastify: '5.x' })
