import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'

/**
 * Prints the OpenAPI document to standard output, for SDK generators: `npm run --silent openapi > openapi.json`.
 * Builds the app and asks it for /openapi.json, exactly as a client would get it; its `servers` entry is PUBLIC_URL,
 * else http://localhost:PORT. Then closes the app (ending its ExifTool pool).
 */
const config = loadConfig({ ...process.env, LOG_LEVEL: 'silent', API_KEYS: 'openapi-export', EXIFTOOL_PROCS: '1' })
const app = await buildApp(config)
const answer = await app.inject({ method: 'GET', url: '/openapi.json', headers: { host: `localhost:${config.port}` } })
process.stdout.write(`${JSON.stringify(answer.json(), null, 2)}\n`)
await app.close()
