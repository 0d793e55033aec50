import cluster from 'node:cluster'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import { metricsOfAllWorkers, shareMetricsWithPrimary } from '../src/cluster.ts'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: ServiceMetrics
  }
}

/** What the routes count besides requests. */
export interface ServiceMetrics {
  chatReplies: Counter<'intent'>
  chatHandoffs: Counter
  conversationStoreErrors: Counter
  rateLimited: Counter<'route'>
}

export interface MetricsOptions {
  /** EXIFTOOL_PROCS: the most ExifTool processes the pool may run, shown beside the live count. */
  exiftoolMaxProcesses: number
}

/**
 * Prometheus metrics at GET /metrics (prom-client; no key: the gateway does not route it outside): requests and their
 * latency by route and status, the ExifTool pool (processes, its configured maximum, busy ones, queue, failures,
 * files refused, processes retired), the C2PA validator (threads, queue, outcomes), chat answers by intent, handoffs,
 * conversation-store errors, rate-limit refusals, and Node's own (event loop, memory, GC). One registry per app, so that apps built side by side (tests) count apart.
 * In a cluster worker (WORKERS > 1) a scrape lands on any one worker, so it answers for all: the primary adds up every
 * worker's registry (src/cluster.ts).
 */
async function metrics (fastify: FastifyInstance, options: MetricsOptions): Promise<void> {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const registers = [registry]

  const requests = new Counter({ name: 'http_requests_total', help: 'Requests answered', labelNames: ['method', 'route', 'status'], registers })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers
  })
  fastify.addHook('onResponse', (request, reply, done) => {
    // The route's template, never the path: ids in paths would make a series per conversation.
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) }
    requests.inc(labels)
    duration.observe(labels, reply.elapsedTime / 1000)
    done()
  })

  const extractor = fastify.metadataExtractor
  const pool = { registers: [] }
  registry.registerMetric(new Gauge({ ...pool, name: 'exiftool_processes', help: 'ExifTool processes in the pool', collect () { this.set(extractor.pids.length) } }))
  // The pool starts processes as reads need them, up to this: the live count alone cannot tell a pool that is small
  // for want of work from one that is full.
  registry.registerMetric(new Gauge({ ...pool, name: 'exiftool_max_processes', help: 'ExifTool processes the pool may run at most (EXIFTOOL_PROCS)', collect () { this.set(options.exiftoolMaxProcesses) } }))
  registry.registerMetric(new Gauge({ ...pool, name: 'exiftool_busy_processes', help: 'ExifTool processes reading an image now', collect () { this.set(extractor.busyProcs) } }))
  registry.registerMetric(new Gauge({ ...pool, name: 'exiftool_queue', help: 'Images waiting for an ExifTool process', collect () { this.set(extractor.pendingTasks) } }))
  registry.registerMetric(new Counter({
    ...pool,
    name: 'exiftool_failures_total',
    help: 'Reads refused (busy: the queue was full) or failed after their retry (timeout, unavailable: the child died)',
    labelNames: ['kind'],
    collect () {
      this.reset()
      for (const [kind, count] of Object.entries(extractor.failures)) this.inc({ kind }, count)
    }
  }))

  registry.registerMetric(new Counter({
    ...pool,
    name: 'exiftool_refusals_total',
    help: 'Images refused as beyond what ExifTool may spend on one (415 IMAGE_TOO_COMPLEX), by reason: cpu (its read ran past its CPU time), memory (its child hit the memory limit), crash (its child died on it), each costing one child; remembered (a resend of such a file, refused without ExifTool)',
    labelNames: ['reason'],
    collect () {
      this.reset()
      for (const [reason, count] of Object.entries(extractor.refusals)) this.inc({ reason }, count)
    }
  }))
  registry.registerMetric(new Counter({
    ...pool,
    name: 'exiftool_retired_total',
    help: 'ExifTool processes replaced because a read left them holding much memory',
    collect () { this.reset(); this.inc(extractor.retiredChildren) }
  }))

  const verifier = fastify.contentCredentialsVerifier
  registry.registerMetric(new Gauge({ ...pool, name: 'c2pa_threads', help: 'Worker threads of the C2PA validator', collect () { this.set(verifier.threads) } }))
  registry.registerMetric(new Gauge({ ...pool, name: 'c2pa_queue', help: 'Files waiting for a C2PA validator thread', collect () { this.set(verifier.queueSize) } }))
  registry.registerMetric(new Counter({
    ...pool,
    name: 'c2pa_validations_total',
    help: 'Files the C2PA validator was asked about, by outcome: report (a manifest read), absent, unreadable, timeout, busy (refused: the queue was full), unavailable (no thread could load the validator)',
    labelNames: ['outcome'],
    collect () {
      this.reset()
      for (const [outcome, count] of Object.entries(verifier.outcomes)) this.inc({ outcome }, count)
    }
  }))

  fastify.decorate('metrics', {
    chatReplies: new Counter({ name: 'chat_replies_total', help: 'Chat answers, by the intent answered', labelNames: ['intent'], registers }),
    chatHandoffs: new Counter({ name: 'chat_handoffs_total', help: 'Chat answers that routed the customer to a person', registers }),
    conversationStoreErrors: new Counter({ name: 'chat_store_errors_total', help: 'Chat requests the conversation store failed', registers }),
    rateLimited: new Counter({ name: 'rate_limited_total', help: 'Requests refused by a rate limit', labelNames: ['route'], registers })
  } satisfies ServiceMetrics)

  const stopSharing = cluster.isWorker ? shareMetricsWithPrimary(registry) : undefined
  fastify.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return cluster.isWorker ? await metricsOfAllWorkers() : await registry.metrics()
  })
  fastify.addHook('onClose', async () => {
    stopSharing?.()
    registry.clear()
  })
}

export default fp(metrics, { name: 'metrics', fastify: '5.x', dependencies: ['exiftool-pool', 'content-credentials'] })
