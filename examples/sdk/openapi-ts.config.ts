/**
 * @hey-api/openapi-ts's configuration for `npm run sdk:generate`: a client from the live OpenAPI document of a running
 * service (OPENAPI_URL, by default http://localhost:3000/openapi.json) into examples/sdk/generated/hey-api/. Its
 * modules import each other with their `.ts` extension (`module.extension`; older versions called it
 * `importFileExtension`), so Node 24 runs the client as it is, without a bundler.
 */
import { defineConfig } from '@hey-api/openapi-ts'

export default defineConfig({
  input: process.env['OPENAPI_URL'] ?? 'http://localhost:3000/openapi.json',
  output: { path: 'examples/sdk/generated/hey-api', module: { extension: '.ts' } }
})
