import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/**
 * The API reference at GET /docs: Swagger UI (@fastify/swagger-ui, its assets served from the package, nothing from a
 * CDN) over the live OpenAPI document. No key is needed to read it; "Authorize" takes one to try the operations.
 */
async function docs (fastify: FastifyInstance): Promise<void> {
  await fastify.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // BaseLayout: without the standalone layout's top bar, whose logo is an SVG with an inline <style> that the page's
    // Content-Security-Policy (style-src 'self') refuses, an error in every visitor's console.
    uiConfig: { layout: 'BaseLayout', docExpansion: 'list', deepLinking: true, displayOperationId: true, persistAuthorization: false }
  })
}

export default fp(docs, { name: 'docs', fastify: '5.x', dependencies: ['openapi'] })
