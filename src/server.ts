/**
 * The process entry: one process serving the API, or with WORKERS > 1 a node:cluster primary (src/cluster.ts) whose
 * workers each run this file again and serve.
 */
import cluster from 'node:cluster'
import { setTimeout as delay } from 'node:timers/promises'
import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.ts'
import { DomainPackError } from './chat/domain-pack/load.ts'
import { runPrimary } from './cluster.ts'
import { ConfigError, loadConfig, type ServerConfig } from './config.ts'

/** The environment, read and checked; a bad value ends the process with a one-line message. */
function configOrExit (): ServerConfig {
  try {
    return loadConfig()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  }
}

/** One process serving the API: build it, listen, and close cleanly on SIGTERM/SIGINT. */
async function serve (config: ServerConfig): Promise<void> {
  let app
  try {
    app = await buildApp(config)
  } catch (error) {
    // An invalid domain pack or an unreachable Redis: say what, without a stack trace.
    const message = error instanceof DomainPackError ? error.message : `Start-up failed: ${(error as Error).message}`
    process.stderr.write(`${message}\n`)
    process.exit(1)
  }
  if (config.generatedDevKey !== undefined) {
    // Deliberately logged once: it is the only way to call a development instance started without keys.
    app.log.warn(`No API_KEYS or API_KEYS_FILE set: generated a development API key for this run: ${config.generatedDevKey}`)
  }

  // A worker leaves SIGINT to its primary (below).
  closeWithGrace({ delay: config.shutdownGraceMs, skip: cluster.isWorker ? ['SIGINT'] : [] }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'closing')
    await app.close()
  })

  await app.ready()
  // A process just built counts its own start-up as event-loop lag until under-pressure's next sample
  // (plugins/overload.ts), and would answer the API with 503 until then: listen once it would take requests, so that
  // no connection meets that refusal (a cluster's primary hands connections to a new worker as soon as it listens).
  for (const started = Date.now(); app.isUnderPressure() && Date.now() - started < READY_WAIT_MS;) await delay(20)
  await app.listen({ port: config.port, host: config.host })
}

/** The longest start-up waits for the event loop to be counted as keeping up before it listens anyway. */
const READY_WAIT_MS = 2000

const config = configOrExit()
if (config.workers > 1 && cluster.isPrimary) {
  runPrimary(config)
} else {
  // The primary decides when its workers close: Ctrl-C sends SIGINT to the whole process group, and a worker that took
  // it and then the primary's SIGTERM would see a second signal, which close-with-grace answers by exiting at once.
  if (cluster.isWorker) process.on('SIGINT', () => {})
  await serve(config)
}
