import type { FastifyInstance } from 'fastify'
import { HealthStatus } from '../schemas/health.ts'
import { notReady } from '../schemas/error.ts'
import { NotReadyError } from '../src/errors.ts'

/** How long the readiness probe waits for an ExifTool child, or Redis, to answer. */
const READY_TIMEOUT_MS = 2000

/** Whether a check settles successfully within `timeoutMs`. */
async function answers (check: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<false>((resolve) => { timer = setTimeout(resolve, timeoutMs, false) })
  try {
    return await Promise.race([check.then(() => true, () => false), timeout])
  } finally {
    clearTimeout(timer)
  }
}

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
      summary: 'The service can take traffic: the ExifTool pool answers, Redis when the service uses it, and the process is not overloaded',
      response: { ...common.response, 503: notReady }
    }
  }, async (request) => {
    const [exiftool, redis] = await Promise.all([
      fastify.metadataExtractor.isReady(READY_TIMEOUT_MS),
      fastify.hasDecorator('redis') ? answers(fastify.redis.ping(), READY_TIMEOUT_MS) : true
    ])
    const overloaded = fastify.isUnderPressure()
    if (!exiftool || !redis || overloaded) {
      request.logFields = { exiftool, redis, overloaded }
      throw new NotReadyError()
    }
    return { status: 'ready' as const }
  })
}
