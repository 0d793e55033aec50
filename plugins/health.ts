import type { FastifyInstance } from 'fastify'
import { HealthStatus } from '../schemas/health.ts'
import { errorResponses } from '../schemas/error.ts'
import { NotReadyError, withHeaders } from '../src/errors.ts'

/** How long the readiness probe waits for an ExifTool child to answer. */
const READY_TIMEOUT_MS = 2000

/** Liveness and readiness for the orchestrator; open without an API key. */
export default async function health (fastify: FastifyInstance): Promise<void> {
  const common = { tags: ['health'], security: [], response: { 200: HealthStatus } }

  fastify.get('/health/live', {
    schema: { ...common, operationId: 'getLiveness', summary: 'The process is up' }
  }, async () => ({ status: 'ok' as const }))

  fastify.get('/health/ready', {
    schema: {
      ...common,
      operationId: 'getReadiness',
      summary: 'The service can take traffic: the ExifTool pool answers',
      response: { ...common.response, ...errorResponses(503) }
    }
  }, async () => {
    if (!await fastify.metadataExtractor.isReady(READY_TIMEOUT_MS)) {
      throw withHeaders(new NotReadyError(), { 'retry-after': '5' })
    }
    return { status: 'ready' as const }
  })
}
