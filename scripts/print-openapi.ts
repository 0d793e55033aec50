import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'

/**
 * Prints the OpenAPI document to standard output, for SDK generators: `npm run --silent openapi > openapi.json`.
 * Builds the app exactly as it serves the document, then closes it (ending its ExifTool pool).
 */
const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent', API_KEYS: 'openapi-export', EXIFTOOL_PROCS: '1' })
const app = await buildApp(config)
await app.ready()
process.stdout.write(`${JSON.stringify(app.swagger(), null, 2)}\n`)
await app.close()
