import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestApp, type TestApp } from '../support/app.ts'
import { runProcess } from '../support/processes.ts'

interface Media { schema: { $ref?: string } }
interface Response { description: string, content?: Record<string, Media>, headers?: Record<string, unknown> }
interface Operation {
  operationId?: string
  security?: unknown[]
  requestBody?: { required?: boolean, content: Record<string, Media> }
  parameters?: Array<{ name: string, in: string, required?: boolean }>
  responses: Record<string, Response>
}
interface OpenApiDocument {
  openapi: string
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, unknown>, securitySchemes: Record<string, Record<string, unknown>> }
  security?: Array<Record<string, unknown[]>>
}
interface LintProblem { ruleId: string, severity: string, message: string, location: Array<{ pointer: string }> }
interface LintReport { totals: { errors: number, warnings: number }, problems: LintProblem[] }

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'])
const REDOCLY = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url))

/**
 * Warnings of the recommended ruleset the document keeps on purpose: the health probes have no 4xx answer to
 * document, and inventing one would mislead clients.
 */
const ACCEPTED_WARNINGS = [
  { ruleId: 'operation-4xx-response', pointer: '#/paths/~1health~1live/get/responses' },
  { ruleId: 'operation-4xx-response', pointer: '#/paths/~1health~1ready/get/responses' }
]

let t: TestApp
let document: OpenApiDocument
let lintDir: string

beforeAll(async () => {
  t = await createTestApp()
  // As a deployment serves it (a host that is neither localhost nor example.com, which Redocly warns about).
  const response = await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'api.shop.internal' } })
  expect(response.statusCode).toBe(200)
  document = response.json()
  lintDir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-openapi-'))
})
afterAll(async () => {
  await t.close()
  await rm(lintDir, { recursive: true, force: true })
})

function operations (): Array<{ path: string, method: string, operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).filter(([method]) => HTTP_METHODS.has(method)).map(([method, operation]) => ({ path, method, operation })))
}

function sendChatMessage (): Operation {
  const operation = document.paths['/v1/chat/send']?.['post']
  if (operation === undefined) throw new Error('POST /v1/chat/send is not documented')
  return operation
}

function extractMetadata (doc = document): Operation {
  const operation = doc.paths['/v1/metadata']?.['post']
  if (operation === undefined) throw new Error('POST /v1/metadata is not documented')
  return operation
}

/** Resolves a local JSON pointer ref (`#/a/b~1c`) against the document; undefined when it leads nowhere. */
function resolve (ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined
  let node: unknown = document
  for (const token of ref.slice(2).split('/').map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, token)) return undefined
    node = (node as Record<string, unknown>)[token]
  }
  return node
}

function collectRefs (node: unknown, refs: string[] = []): string[] {
  if (typeof node !== 'object' || node === null) return refs
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string') refs.push(value)
    else collectRefs(value, refs)
  }
  return refs
}

/** Runs the project's own Redocly CLI on the Node that runs the tests, offline and without telemetry. */
async function lint (file: string): Promise<{ exitCode: number | null, report: LintReport, stderr: string }> {
  const { exitCode, stdout, stderr } = await runProcess(process.execPath, [REDOCLY, 'lint', '--extends=recommended', '--format=json', file], {
    // Its own directory, so no redocly.yaml lying around changes the rules.
    cwd: lintDir,
    env: {
      PATH: process.env['PATH'],
      HOME: lintDir,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      CI: 'true',
      NO_COLOR: '1'
    },
    timeoutMs: 60_000
  })
  return { exitCode, report: JSON.parse(stdout) as LintReport, stderr }
}

function describeProblems (problems: LintProblem[]): string[] {
  return problems.map((problem) => `${problem.severity} ${problem.ruleId} at ${problem.location[0]?.pointer}: ${problem.message}`)
}

describe('GET /openapi.json', () => {
  it('names the server it was fetched from, or PUBLIC_URL, so that generated clients call the right host', async () => {
    const servers = (answer: { json: () => unknown }): unknown => (answer.json() as { servers: unknown }).servers
    const direct = await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'api.internal:3000' } })
    expect(servers(direct)).toEqual([{ url: 'http://api.internal:3000', description: 'The server that served this document' }])
    // X-Forwarded-* are believed only from a trusted proxy.
    const forged = await t.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'api.internal:3000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' } })
    expect(servers(forged)).toEqual([{ url: 'http://api.internal:3000', description: 'The server that served this document' }])
    const proxied = await createTestApp({ trustProxy: true })
    const configured = await createTestApp({ publicUrl: 'https://api.shop.example.com' })
    try {
      const behind = await proxied.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: 'api-1:3000', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.shop.example.com' } })
      expect(servers(behind)).toEqual([{ url: 'https://api.shop.example.com', description: 'The server that served this document' }])
      expect(servers(await configured.app.inject({ method: 'GET', url: '/openapi.json' }))).toEqual([{ url: 'https://api.shop.example.com', description: 'The API' }])
    } finally {
      await proxied.close()
      await configured.close()
    }
  })

  it('is served as JSON without an API key', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' })
    expect(response.statusCode).toBe(200)
    expect(response.headers['content-type']).toMatch(/^application\/json/)
    expect(document.openapi).toMatch(/^3\.\d+\.\d+$/)
  })

  it('documents the operations, but not the /api alias nor itself', () => {
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining([
      '/v1/metadata', '/v1/chat/send', '/v1/chat/conversations/{conversation_id}', '/health/live', '/health/ready'
    ]))
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/api'))).toEqual([])
    expect(document.paths).not.toHaveProperty(['/openapi.json'])
  })

  it('gives every operation a unique operationId, extractMetadata for POST /v1/metadata', () => {
    const ids = operations().map(({ operation }) => operation.operationId)
    for (const id of ids) expect(id).toMatch(/^[A-Za-z][A-Za-z0-9]*$/)
    expect(new Set(ids).size).toBe(ids.length)
    expect(extractMetadata().operationId).toBe('extractMetadata')
  })

  it('resolves every $ref inside the document', () => {
    const refs = collectRefs(document)
    expect(refs.length).toBeGreaterThan(0)
    expect(refs.filter((ref) => resolve(ref) === undefined)).toEqual([])
  })

  it('names the shared schemas as components', () => {
    expect(Object.keys(document.components.schemas)).toEqual(expect.arrayContaining([
      'ErrorResponse',
      'ImageMetadata',
      'ImageLacksMetadataResponse',
      'MetadataJsonBody',
      'MetadataMultipartBody',
      'HealthStatus',
      'Camera',
      'Gps',
      'Resolution'
    ]))
  })

  it('requires the bearer scheme by default and leaves the health probes open', () => {
    expect(document.components.securitySchemes['bearerAuth']).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(document.security).toEqual([{ bearerAuth: [] }])
    expect(extractMetadata().security).toBeUndefined()
    expect(document.paths['/health/live']?.['get']?.security).toEqual([])
    expect(document.paths['/health/ready']?.['get']?.security).toEqual([])
  })

  it('documents sendChatMessage: its body, its reply and its errors', () => {
    const operation = sendChatMessage()
    expect(operation.operationId).toBe('sendChatMessage')
    expect(operation.security).toBeUndefined()
    expect(operation.requestBody?.content['application/json']?.schema.$ref).toBe('#/components/schemas/ChatRequest')
    expect(Object.keys(operation.responses).sort()).toEqual(['200', '400', '401', '404', '413', '415', '429', '500', '503'])
    expect(operation.responses['200']?.content?.['application/json']?.schema.$ref).toBe('#/components/schemas/ChatReply')
    expect(operation.responses['404']?.description).toMatch(/conversation/)
    const reply = document.components.schemas['ChatReply'] as { required: string[], properties: Record<string, { enum?: string[] }> }
    expect(reply.required.sort()).toEqual(['confidence', 'conversation_id', 'handoff', 'intent', 'links', 'reply', 'timestamp'])
    expect(reply.properties['intent']?.enum).toHaveLength(31)
  })

  it('documents the transcript as getChatTranscript', () => {
    const operation = document.paths['/v1/chat/conversations/{conversation_id}']?.['get']
    expect(operation?.operationId).toBe('getChatTranscript')
    expect(operation?.parameters).toContainEqual(expect.objectContaining({ name: 'conversation_id', in: 'path', required: true }))
    expect(operation?.responses['200']?.content?.['application/json']?.schema.$ref).toBe('#/components/schemas/ChatTranscript')
  })

  it('documents both request bodies of extractMetadata', () => {
    const body = extractMetadata().requestBody
    expect(body?.required).toBe(true)
    expect(body?.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/MetadataJsonBody' } },
      'multipart/form-data': { schema: { $ref: '#/components/schemas/MetadataMultipartBody' } }
    })
  })

  it('documents every response of extractMetadata with its schema', () => {
    const { responses } = extractMetadata()
    const schemaOf = (status: string): string | undefined => responses[status]?.content?.['application/json']?.schema.$ref
    expect(Object.keys(responses).sort()).toEqual(['200', '400', '401', '413', '415', '422', '429', '500', '503'])
    expect(schemaOf('200')).toBe('#/components/schemas/ImageMetadata')
    expect(schemaOf('422')).toBe('#/components/schemas/ImageLacksMetadataResponse')
    for (const status of ['400', '401', '413', '415', '429', '500', '503']) {
      expect(schemaOf(status), status).toBe('#/components/schemas/ErrorResponse')
    }
    for (const [status, response] of Object.entries(responses)) {
      expect(response.description, status).not.toBe('Default Response')
    }
  })

  it('describes every response of every operation as it is meant there, none as "Default Response"', () => {
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(response.description, `${method} ${path} ${status}`).not.toBe('Default Response')
      }
    }
    // The chat's errors speak of the chat, not of images.
    for (const status of ['400', '413', '415']) expect(sendChatMessage().responses[status]?.description, status).not.toMatch(/image/i)
    expect(extractMetadata().responses['413']?.description).toMatch(/image/)
  })

  it('has extractMetadataFromFile, the same operation with a multipart body alone, for generated clients', () => {
    const operation = document.paths['/v1/metadata/file']?.['post']
    expect(operation?.operationId).toBe('extractMetadataFromFile')
    expect(Object.keys(operation?.requestBody?.content ?? {})).toEqual(['multipart/form-data'])
    expect(Object.keys(operation?.responses ?? {}).sort()).toEqual(Object.keys(extractMetadata().responses).sort())
    expect(Object.keys(extractMetadata().requestBody?.content ?? {})).toEqual(['application/json', 'multipart/form-data'])
  })

  it('documents the WWW-Authenticate and Retry-After headers that come with 401 and 503', () => {
    const { responses } = extractMetadata()
    expect(responses['401']?.headers).toHaveProperty(['WWW-Authenticate'])
    expect(responses['503']?.headers).toHaveProperty(['Retry-After'])
  })

  it('lets clients leave out the ?full query parameter, which has a default', () => {
    const full = extractMetadata().parameters?.find((parameter) => parameter.name === 'full')
    expect(full).toMatchObject({ in: 'query' })
    expect(full?.required).not.toBe(true)
  })

  it('answers the health probes with the HealthStatus schema', () => {
    for (const path of ['/health/live', '/health/ready']) {
      expect(document.paths[path]?.['get']?.responses['200']?.content?.['application/json']?.schema.$ref, path)
        .toBe('#/components/schemas/HealthStatus')
    }
  })
})

describe('Redocly lint, recommended rules', () => {
  let result: Awaited<ReturnType<typeof lint>>

  beforeAll(async () => {
    const file = join(lintDir, 'openapi.json')
    await writeFile(file, JSON.stringify(document, null, 2))
    result = await lint(file)
  })

  it('finds no errors', () => {
    const errors = result.report.problems.filter((problem) => problem.severity === 'error')
    expect(describeProblems(errors)).toEqual([])
    expect(result.report.totals.errors).toBe(0)
    expect(result.exitCode).toBe(0)
  })

  it('finds no warnings but the accepted ones', () => {
    const unexpected = result.report.problems.filter((problem) => problem.severity !== 'error' &&
      !ACCEPTED_WARNINGS.some((accepted) => accepted.ruleId === problem.ruleId && accepted.pointer === problem.location[0]?.pointer))
    expect(describeProblems(unexpected)).toEqual([])
  })

  it('does fail a broken document, so a clean result means something', async () => {
    const broken = structuredClone(document)
    extractMetadata(broken).responses['200'] = {
      description: 'Points at a schema that does not exist',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Missing' } } }
    }
    const file = join(lintDir, 'broken.json')
    await writeFile(file, JSON.stringify(broken))
    const { exitCode, report } = await lint(file)
    expect(exitCode).not.toBe(0)
    expect(report.problems).toContainEqual(expect.objectContaining({ ruleId: 'no-unresolved-refs', severity: 'error' }))
  })
})
