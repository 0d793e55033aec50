/**
 * Types for openapi-fetch from the live OpenAPI document of a running service (OPENAPI_URL, by default
 * http://localhost:3000/openapi.json), by openapi-typescript's documented Node.js API, into
 * examples/sdk/generated/openapi-typescript.ts. `npm run sdk:generate` runs it.
 *
 * Two documented transforms, because openapi-typescript types every `format: binary` string, and so a multipart body,
 * as a string: a file is a Blob, and a multipart/form-data request body is a FormData — which openapi-fetch sends as
 * it is, with its own boundary. Nothing else is hand-written.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'

const input = process.env['OPENAPI_URL'] ?? 'http://localhost:3000/openapi.json'
const output = new URL('generated/openapi-typescript.ts', import.meta.url).pathname
const BLOB = ts.factory.createTypeReferenceNode('Blob')
const FORM_DATA = ts.factory.createTypeReferenceNode('FormData')
const ast = await openapiTS(new URL(input), {
  transform: (schema) => schema.format === 'binary' ? BLOB : undefined,
  postTransform: (_type, options) => /\/requestBody\/content\/multipart~1form-data$/.test(options.path ?? '') ? FORM_DATA : undefined
})
mkdirSync(dirname(output), { recursive: true })
writeFileSync(output, astToString(ast))
process.stdout.write(`openapi-typescript: ${input} → ${output}\n`)
