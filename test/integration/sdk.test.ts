import { readFile, rm } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'
import { CAMERA_TAGS, ImageFactory } from '../support/images.ts'
import { runProcess } from '../support/processes.ts'

// What docs/api.md's SDK section tells a user to do, done for real: generate clients from the live /openapi.json of a
// running server with @hey-api/openapi-ts and with openapi-typescript (+ openapi-fetch), type-check the example
// programs in examples/sdk/ under `strict`, and run them against the server.
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const EXAMPLES = `${ROOT}examples/sdk/`
const BIN = `${ROOT}node_modules/.bin/`

describe('clients generated from the live OpenAPI document', () => {
  let t: TestApp
  let base: string
  let photo: Uint8Array<ArrayBuffer>

  beforeAll(async () => {
    const images = new ImageFactory()
    try {
      photo = new Uint8Array(await images.make('jpeg', { width: 320, height: 240, tags: CAMERA_TAGS }))
    } finally {
      await images.close()
    }
    t = await createTestApp()
    base = await listen(t)
    await rm(`${EXAMPLES}generated`, { recursive: true, force: true })
  })

  afterAll(async () => { await t.close() })

  const run = async (command: string, args: string[]): Promise<void> => {
    const result = await runProcess(command, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, timeoutMs: 60_000 })
    expect(result.exitCode, `${command} ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0)
  }

  it('generate, type-check under strict, and call chat, metadata as JSON and metadata as multipart', async () => {
    await run(`${BIN}openapi-ts`, ['-i', `${base}/openapi.json`, '-o', `${EXAMPLES}generated/hey-api`])
    await run(process.execPath, [`${EXAMPLES}openapi-typescript.ts`, `${base}/openapi.json`, `${EXAMPLES}generated/openapi-typescript.ts`])
    await run(`${BIN}tsc`, ['-p', `${EXAMPLES}tsconfig.json`])

    for (const example of ['hey-api.ts', 'openapi-fetch.ts']) {
      const source = await readFile(`${EXAMPLES}${example}`, 'utf8')
      // No type casts and no serializer of one's own.
      expect(source, example).not.toMatch(/\bas [A-Z{(]|\bany\b|@ts-|<[A-Z]\w*>\(|bodySerializer|formDataBodySerializer/)
      const { run: call } = await import(`${EXAMPLES}${example}`) as { run: (baseUrl: string, apiKey: string, photo: Uint8Array<ArrayBuffer>) => Promise<Record<string, Record<string, unknown> | undefined>> }
      const calls = await call(base, API_KEY, photo)
      expect(calls['chat'], example).toMatchObject({ intent: 'track_order', links: [{ url: 'https://shop.example.com/orders/A-10042/tracking' }] })
      const metadata = { camera: { make: 'NIKON', model: 'COOLPIX P6000' }, resolution: { width: 320, height: 240 }, format: 'jpeg' }
      expect(calls['json'], example).toMatchObject(metadata)
      expect(calls['file'], example).toMatchObject(metadata)
    }
  })
})
