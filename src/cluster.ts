/**
 * WORKERS > 1: the process that `npm start` runs becomes a node:cluster primary. It forks the workers (each runs the
 * service of src/server.ts; they share the port), replaces one that dies, closes them all on SIGTERM/SIGINT, and adds
 * up their metrics for whichever worker is asked for /metrics. The primary serves no request itself.
 */
import cluster, { type Worker } from 'node:cluster'
import type { EventEmitter } from 'node:events'
import { pino, type Logger } from 'pino'
import { AggregatorRegistry, type Registry } from 'prom-client'
import type { ServerConfig } from './config.ts'
import { removeScratchDirectoriesOf } from './scratch-directory.ts'

/** A dead worker is replaced after this, doubled for each other death in the last RESTART_WINDOW_MS. */
const RESTART_DELAY_MS = 100
const RESTART_WINDOW_MS = 60_000
/**
 * More deaths than this within RESTART_WINDOW_MS is a crash loop: the primary stops and exits 1, leaving restarts to
 * whatever runs the container, which sees the failure and backs off on its own terms.
 */
const MAX_DEATHS = 5
/** After the workers' own SHUTDOWN_GRACE_MS has run out, how long the primary waits before killing one still there. */
const FORCE_KILL_MARGIN_MS = 1000
/** How long a worker may take to hand its metrics to the primary; the worker asking waits a second longer. */
const COLLECT_TIMEOUT_MS = 2000

/** Makes this process the cluster's primary; it exits when the last worker has gone. */
export function runPrimary (config: ServerConfig): void {
  const log = pino({ level: config.logLevel })
  // With no key configured, every worker gets the primary's generated one: a key per worker would open only one.
  const env = config.generatedDevKey === undefined ? {} : { API_KEYS: config.generatedDevKey }
  if (config.generatedDevKey !== undefined) {
    log.warn(`No API_KEYS or API_KEYS_FILE set: generated a development API key for this run: ${config.generatedDevKey}`)
  }
  const live = new Set<Worker>()
  /** Workers that listen: the only ones asked for metrics (one still starting has none, and could not answer). */
  const listening = new Set<Worker>()
  let starting = true
  let stopping = false
  let exitCode = 0
  let deaths: number[] = []

  const fork = (): void => {
    const worker = cluster.fork(env)
    live.add(worker)
    answer(worker, 'cluster metrics', async () => await clusterMetrics(listening, log))
    log.info({ worker: worker.id, workerPid: worker.process.pid }, 'worker started')
  }

  const stop = (reason: Record<string, unknown>, message: string): void => {
    stopping = true
    log.info(reason, message)
    // SIGTERM: a listening worker closes gracefully (close-with-grace); one still starting has nothing to finish.
    for (const worker of live) worker.process.kill('SIGTERM')
    setTimeout(() => {
      for (const worker of live) {
        log.error({ worker: worker.id, workerPid: worker.process.pid }, 'worker still running after the shutdown grace: killing it')
        worker.process.kill('SIGKILL')
      }
    }, config.shutdownGraceMs + FORCE_KILL_MARGIN_MS).unref()
    if (live.size === 0) process.exit(exitCode)
  }

  cluster.on('listening', (worker) => {
    listening.add(worker)
    log.info({ worker: worker.id, workerPid: worker.process.pid }, 'worker listening')
    if (listening.size === config.workers) starting = false
  })

  cluster.on('exit', (worker, code, signal) => {
    live.delete(worker)
    listening.delete(worker)
    const what = { worker: worker.id, workerPid: worker.process.pid, code, signal }
    // A worker that died (killed, out of memory) left its scratch directory, and the uploads in it, behind.
    try {
      if (worker.process.pid !== undefined) removeScratchDirectoriesOf(config.tempRoot, worker.process.pid)
    } catch (error) {
      log.error({ ...what, err: error }, 'the worker\'s scratch directory could not be removed')
    }
    if (stopping) {
      log.info(what, 'worker exited')
      // SIGTERM ends a worker that was still starting; any other end but 0 is a close that went wrong.
      if (code !== 0 && signal !== 'SIGTERM') exitCode = 1
      if (live.size === 0) process.exit(exitCode)
      return
    }
    log.error(what, 'worker exited unexpectedly')
    const now = Date.now()
    deaths = [...deaths.filter((time) => now - time < RESTART_WINDOW_MS), now]
    // A worker that cannot start (a bad domain pack, Redis out of reach) will not start the next time either; it has
    // said why on stderr.
    if (starting || deaths.length > MAX_DEATHS) {
      exitCode = 1
      if (starting) stop({}, 'a worker failed to start: stopping')
      else stop({ deaths: deaths.length, withinMs: RESTART_WINDOW_MS }, 'workers keep dying: stopping')
      return
    }
    setTimeout(() => { if (!stopping) fork() }, RESTART_DELAY_MS * 2 ** (deaths.length - 1))
  })

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (!stopping) { stop({ signal }, 'closing'); return }
      log.error({ signal }, 'second signal: killing the workers')
      for (const worker of live) worker.process.kill('SIGKILL')
      process.exit(1)
    })
  }

  log.info({ workers: config.workers }, 'starting workers')
  for (let index = 0; index < config.workers; index++) fork()
}

/**
 * Every listening worker's metrics added up by prom-client's rules (AggregatorRegistry.aggregate): counters and
 * histograms summed, gauges summed unless the metric says otherwise (event-loop lag averaged, start time left out).
 * Asked here rather than with `AggregatorRegistry#clusterMetrics`, which asks every connected worker and so waits
 * 5 s and fails whenever one is still starting (after a crash, say).
 */
async function clusterMetrics (workers: Iterable<Worker>, log: Logger): Promise<string> {
  const answers = await Promise.all([...workers].map(async (worker) => {
    try {
      return await ask<WorkerMetrics>(worker, 'worker metrics', COLLECT_TIMEOUT_MS)
    } catch (error) {
      log.error({ worker: worker.id, err: error }, 'worker did not give its metrics')
      throw error
    }
  }))
  // A worker that went away meanwhile took its counts with it.
  return await AggregatorRegistry.aggregate(answers.filter((metrics) => metrics !== undefined)).metrics()
}

/** In a worker: hands this worker's registry to the primary when it adds up the cluster's; returns the undo. */
export function shareMetricsWithPrimary (registry: Registry): () => void {
  return answer(process, 'worker metrics', async () => await registry.getMetricsAsJSON())
}

/** In a worker: the metrics of every worker of the cluster, summed by the primary, in Prometheus' text format. */
export async function metricsOfAllWorkers (): Promise<string> {
  const text = await ask<string>(process, 'cluster metrics', COLLECT_TIMEOUT_MS + 1000)
  if (text === undefined) throw new Error('The cluster\'s primary is gone')
  return text
}

type WorkerMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>
type Topic = 'worker metrics' | 'cluster metrics'

/** The questions the primary and its workers ask each other over the IPC channel, and their answers. */
const QUESTION = 'chat-metadata-api:question'
const ANSWER = 'chat-metadata-api:answer'
interface Question { type: typeof QUESTION, id: number, topic: Topic }
interface Answer { type: typeof ANSWER, id: number, value?: unknown, error?: string }

/** A worker seen from the primary, or the primary seen from a worker (`process`). */
type Channel = Pick<EventEmitter, 'on' | 'off'> & {
  send?: (message: Question | Answer, callback: (error: Error | null) => void) => boolean
}

let lastId = 0

/**
 * Asks the other end of `channel` about `topic`: its answer, undefined if it went away first (its channel closed);
 * an error if it answered one, or did not answer within `timeoutMs`.
 */
async function ask<T> (channel: Channel, topic: Topic, timeoutMs: number): Promise<T | undefined> {
  const id = ++lastId
  return await new Promise<T | undefined>((resolve, reject) => {
    const settle = (): void => {
      clearTimeout(timer)
      channel.off('message', onMessage)
      channel.off('disconnect', onGone)
    }
    const onMessage = (message: Partial<Answer>): void => {
      if (message.type !== ANSWER || message.id !== id) return
      settle()
      if (message.error === undefined) resolve(message.value as T)
      else reject(new Error(message.error))
    }
    const onGone = (): void => { settle(); resolve(undefined) }
    const timer = setTimeout(() => { settle(); reject(new Error(`No answer about ${topic} within ${timeoutMs} ms`)) }, timeoutMs)
    channel.on('message', onMessage)
    channel.on('disconnect', onGone)
    channel.send?.({ type: QUESTION, id, topic }, (error) => { if (error !== null) onGone() })
  })
}

/** Answers the questions about `topic` that come over `channel`, until the returned function is called. */
function answer (channel: Channel, topic: Topic, value: () => Promise<unknown>): () => void {
  const reply = (message: Answer): void => { channel.send?.(message, () => {}) }
  const onMessage = (message: Partial<Question>): void => {
    if (message.type !== QUESTION || message.topic !== topic || message.id === undefined) return
    const { id } = message
    value().then(
      (result) => { reply({ type: ANSWER, id, value: result }) },
      (error: unknown) => { reply({ type: ANSWER, id, error: (error as Error).message }) }
    )
  }
  channel.on('message', onMessage)
  return () => { channel.off('message', onMessage) }
}
