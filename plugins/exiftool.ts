import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { MetadataExtractor, type ExifToolConfig } from '../src/metadata/extractor.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metadataExtractor: MetadataExtractor
  }
}

/** The ExifTool pool as an app resource: created with the app, its children ended when the app closes. */
async function exiftoolPool (fastify: FastifyInstance, options: ExifToolConfig): Promise<void> {
  const extractor = new MetadataExtractor(options)
  // Its first child starts while the rest of the app is built.
  extractor.start()
  fastify.decorate('metadataExtractor', extractor)
  fastify.addHook('onClose', async () => { await extractor.end() })
}

export default fp(exiftoolPool, { name: 'exiftool-pool', fastify: '5.x' })
