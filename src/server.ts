import closeWithGrace from 'close-with-grace'
import { buildApp } from './app.ts'
import { DomainPackError } from './chat/domain-pack/load.ts'
import { ConfigError, loadConfig } from './config.ts'

/** The process entry: read the environment, listen, and close cleanly on SIGTERM/SIGINT. */
async function main (): Promise<void> {
  let config
  try {
    config = loadConfig()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`${error.message}\n`)
    process.exit(1)
  }

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

  closeWithGrace({ delay: config.shutdownGraceMs }, async ({ signal, err }) => {
    if (err !== undefined) app.log.error({ err }, 'closing after an unexpected error')
    else app.log.info({ signal }, 'closing')
    await app.close()
  })

  await app.listen({ port: config.port, host: config.host })
}

await main()
