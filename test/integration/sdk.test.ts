import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PHOTO_METADATA as PHOTO } from '../../schemas/examples.ts'
import { runProcess } from '../support/processes.ts'
import { PROJECT_ROOT, startService, stopService, type ServiceProcess } from '../support/servers.ts'

// What docs/api.md's SDK section tells a user to do, done for real and as written: with a service running,
// `npm run sdk:generate` generates both clients from its live /openapi.json (@hey-api/openapi-ts; openapi-typescript
// for openapi-fetch), the example programs in examples/sdk/ type-check under `strict`, and `npm run sdk:hey-api` and
// `npm run sdk:openapi-fetch` run them as programs, on the project's Node, against the service.
const KEY = 'sdk-key-3c9e'
const EXAMPLES = join(PROJECT_ROOT, 'examples/sdk')

interface Printed {
  chat: Array<{ conversation_id: string, intent: string, reply: string, links: Array<{ url: string }> }>
  json: unknown
  file: unknown
  error: { status: number, body: unknown }
}

let service: ServiceProcess
let env: NodeJS.ProcessEnv

beforeAll(async () => {
  service = await startService({ API_KEYS: KEY })
  const url = `http://127.0.0.1:${service.port}`
  env = { PATH: process.env['PATH'], HOME: process.env['HOME'], NO_COLOR: '1', OPENAPI_URL: `${url}/openapi.json`, API_URL: url, API_KEY: KEY }
  await rm(join(EXAMPLES, 'generated'), { recursive: true, force: true })
})

afterAll(async () => { await stopService(service) })

async function npm (...args: string[]): Promise<string> {
  const result = await runProcess('npm', args, { cwd: PROJECT_ROOT, env, timeoutMs: 120_000 })
  expect(result.exitCode, `npm ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0)
  return result.stdout
}

describe('client SDKs generated from the live OpenAPI document', () => {
  it('npm run sdk:generate generates both; the examples type-check under strict, without casts', async () => {
    await npm('run', 'sdk:generate')
    // The hey-api client imports its modules with their .ts extension: Node runs it without a bundler.
    expect(await readFile(join(EXAMPLES, 'generated/hey-api/sdk.gen.ts'), 'utf8')).toMatch(/from '\.\/client\.gen\.ts'/)
    const check = await runProcess(join(PROJECT_ROOT, 'node_modules/.bin/tsc'), ['-p', join(EXAMPLES, 'tsconfig.json')], { cwd: PROJECT_ROOT, env, timeoutMs: 120_000 })
    expect(check.exitCode, check.stdout).toBe(0)
    for (const example of ['hey-api.ts', 'openapi-fetch.ts']) {
      // The code without its comments (which may well say "as JSON").
      const source = (await readFile(join(EXAMPLES, example), 'utf8')).replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '')
      // No type casts and no serializer of one's own.
      expect(source, example).not.toMatch(/\bas [A-Z{(]|\bany\b|@ts-|<[A-Z]\w*>\(|bodySerializer|formDataBodySerializer/)
    }
  }, 180_000)

  for (const script of ['sdk:hey-api', 'sdk:openapi-fetch']) {
    it(`npm run ${script} chats over two turns, reads metadata as JSON and as multipart, and gets a typed 404`, async () => {
      const printed = JSON.parse(await npm('run', '--silent', script)) as Printed
      const [first, second] = printed.chat
      expect(first).toMatchObject({ intent: 'track_order', links: [{ url: 'https://shop.example.com/orders/A-10042/tracking' }] })
      // The second turn is in the same conversation, which remembers the order.
      expect(second?.conversation_id).toBe(first?.conversation_id)
      expect(second).toMatchObject({ intent: 'cancel_order', links: [{ url: 'https://shop.example.com/orders/A-10042/cancel' }] })
      expect(printed.json).toEqual(PHOTO)
      expect(printed.file).toEqual(PHOTO)
      expect(printed.error).toEqual({
        status: 404,
        body: { statusCode: 404, code: 'CONVERSATION_NOT_FOUND', error: 'Not Found', message: 'Conversation not found' }
      })
    })
  }
})
