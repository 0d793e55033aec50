/**
 * Types for openapi-fetch, from the live OpenAPI document, by openapi-typescript's documented Node.js API:
 *
 *   node examples/sdk/openapi-typescript.ts http://localhost:3000/openapi.json examples/sdk/generated/openapi-typescript.ts
 *
 * Two documented transforms, because openapi-typescript's CLI types every `format: binary` string, and so a multipart
 * body, as a string: a file is a Blob, and a multipart/form-data request body is a FormData — which openapi-fetch
 * sends as it is, with its own boundary. Nothing else is hand-written.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'

const [input, output] = process.argv.slice(2)
if (input === undefined || output === undefined) {
  process.stderr.write('usage: node examples/sdk/openapi-typescript.ts <openapi.json URL or file> <output.ts>\n')
  process.exit(2)
}
const BLOB = ts.factory.createTypeReferenceNode('Blob')
const FORM_DATA = ts.factory.createTypeReferenceNode('FormData')
const ast = await openapiTS(input.startsWith('http') ? new URL(input) : new URL(input, `file://${process.cwd()}/`), {
  transform: (schema) => schema.format === 'binary' ? BLOB : undefined,
  postTransform: (_type, options) => /\/requestBody\/content\/multipart~1form-data$/.test(options.path ?? '') ? FORM_DATA : undefined
})
mkdirSync(dirname(output), { recursive: true })
writeFileSync(output, astToString(ast))
