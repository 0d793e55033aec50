import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import { runProcess } from '../support/processes.ts'
import { PROJECT_ROOT, startService, stopService, type ServiceProcess } from '../support/servers.ts'

// The first start after `npm ci` reads the chat model that the install trained (the postinstall script), and a start
// that must train says so first. Run with small packs (a few examples per intent) in a model cache of the test's own,
// so that each training takes a second, not the default pack's many.
let dir: string
let cache: string
const services: ServiceProcess[] = []
/** Each test trains a small model or two and starts a service: seconds alone, far more on a loaded machine. */
const TRAINING_TIMEOUT_MS = 120_000

/** A service started and run to its end (SIGTERM), its output kept; stopped in afterAll too, should a test fail. */
async function started (env: Record<string, string>, how: 'node' | 'npm' = 'node'): Promise<ServiceProcess> {
  const service = await startService(env, { how })
  services.push(service)
  await stopService(service)
  return service
}

/** The default pack cut to a few examples per intent, as one JSON file (a pack may be one file). */
async function smallPack (name: string, extra: string): Promise<string> {
  const pack = structuredClone(loadDomainPack())
  for (const intent of Object.values(pack.intents)) {
    intent.examples = intent.examples.slice(0, 30)
    if (intent.situations !== undefined) for (const situation of Object.keys(intent.situations)) intent.situations[situation] = intent.situations[situation]!.slice(0, 5)
  }
  pack.intents.review.examples.push(extra)
  const file = join(dir, `${name}.json`)
  await writeFile(file, JSON.stringify(pack))
  return file
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-first-start-'))
  cache = join(dir, 'cache')
})

afterAll(async () => {
  await Promise.all(services.map(stopService))
  await rm(dir, { recursive: true, force: true })
})

describe('the first start', () => {
  it('npm ci\'s postinstall trains the model into the cache, and npm start then reads it instead of training', async () => {
    const pack = await smallPack('installed', 'five stars for the kettle')
    const env = { PATH: `${process.env['PATH']}`, DOMAIN_PACK: pack, MODEL_CACHE_DIR: cache }
    // What npm ci runs once the dependencies are in.
    const install = await runProcess('npm', ['run', 'postinstall'], { cwd: PROJECT_ROOT, env, timeoutMs: 120_000 })
    expect(install.exitCode, install.stderr).toBe(0)
    expect(install.stdout).toMatch(/training the chat model into .*\(expect usually 10–30 s\)\n.*trained and cached/)
    expect((await readdir(cache)).filter((name) => name.endsWith('.model'))).toHaveLength(1)

    const service = await started({ API_KEYS: 'first-start-key', DOMAIN_PACK: pack, MODEL_CACHE_DIR: cache }, 'npm')
    expect(service.output()).toContain('"msg":"chat model read from the cache"')
    expect(service.output()).not.toContain('training the chat model')
  }, TRAINING_TIMEOUT_MS)

  it('a start that must train logs that it is training and how long to expect, before it trains', async () => {
    const pack = await smallPack('changed', 'the pack changed since the install')
    const service = await started({ API_KEYS: 'first-start-key', DOMAIN_PACK: pack, MODEL_CACHE_DIR: cache })
    const lines = service.output().split('\n').filter((line) => line.includes('chat model'))
    expect(lines, service.output()).toHaveLength(2)
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 30,
      msg: expect.stringMatching(/^training the chat model \(no trained model for this domain pack in the cache\): expect about \d+ s, as the last training here took; `npm run train` trains ahead of a start$/),
      lastTrainingMs: expect.any(Number)
    })
    expect(JSON.parse(lines[1]!)).toMatchObject({ msg: 'chat model trained', source: 'trained' })
  }, TRAINING_TIMEOUT_MS)

  it('without a cache (MODEL_CACHE_DIR empty) every start says it trains', async () => {
    const pack = await smallPack('uncached', 'no cache at all')
    const service = await started({ API_KEYS: 'first-start-key', DOMAIN_PACK: pack, MODEL_CACHE_DIR: '' })
    expect(service.output()).toContain('"msg":"training the chat model (MODEL_CACHE_DIR is empty, so no model is cached): expect usually 10–30 s"')
  }, TRAINING_TIMEOUT_MS)
})
