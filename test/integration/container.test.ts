import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import { runProcess } from '../support/processes.ts'
import { NODE_FLAGS, PROJECT_ROOT, START_ENV, startService, stopService } from '../support/servers.ts'

// There is no Docker engine here, so the image cannot be built. What the Dockerfile relies on is checked instead:
// its build stage's steps run as written in a directory of their own (the files it copies, production dependencies
// only, the model trained), the service starts from there with the command the image runs, and the image's
// HEALTHCHECK command says ready.
let dockerfile: string
let app: string

beforeAll(async () => {
  dockerfile = await readFile(join(PROJECT_ROOT, 'Dockerfile'), 'utf8')
  app = await mkdtemp(join(tmpdir(), 'chat-metadata-api-image-'))
})

afterAll(async () => { await rm(app, { recursive: true, force: true }) })

describe('the Dockerfile', () => {
  it('builds on the official Node 24 slim image, runs as a non-root user under tini, with the node command of npm start', () => {
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1])
    expect(stages.length).toBeGreaterThanOrEqual(2)
    for (const image of stages) expect(image).toMatch(/^node:24-[a-z]+-slim\b/)
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev\b/m)
    expect(dockerfile).toMatch(/apt-get install -y --no-install-recommends perl tini/)
    expect(dockerfile).toMatch(/^USER node$/m)
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/bin\/tini", "--"\]$/m)
    // The command is `npm start`'s, Node's flags included, without npm in between.
    expect(JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!)).toEqual(['node', ...NODE_FLAGS, 'src/server.ts'])
    // And its environment variables, set for the image.
    const env = Object.fromEntries([.../^ENV ((?:.*\\\n)*.*)$/m.exec(dockerfile)![1]!.matchAll(/([A-Z_]+)=(\S+)/g)].map((match) => [match[1]!, match[2]!]))
    expect(Object.keys(START_ENV)).not.toHaveLength(0)
    expect(env).toMatchObject(START_ENV)
    expect(dockerfile).toMatch(/^HEALTHCHECK /m)
  })

  it('its build steps work with production dependencies alone, and the image\'s command and health check work', async () => {
    // COPY … as the build stage does.
    const copied = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) => match[1]!.split(' '))
    expect(copied).toEqual(['package.json', 'package-lock.json', 'src', 'plugins', 'schemas', 'domain', 'scripts/train.ts'])
    for (const path of copied) await cp(join(PROJECT_ROOT, path), join(app, path), { recursive: true })

    const install = await runProcess('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app, env: { ...process.env }, timeoutMs: 240_000 })
    expect(install.exitCode, install.stderr).toBe(0)
    // RUN node scripts/train.ts, into the model cache the suite has already filled (training itself is tested apart).
    const train = await runProcess(process.execPath, ['scripts/train.ts'], { cwd: app, env: { PATH: process.env['PATH'], MODEL_CACHE_DIR: DEFAULT_MODEL_CACHE }, timeoutMs: 120_000 })
    expect(train.exitCode, train.stderr).toBe(0)

    const service = await startService({ API_KEYS: 'image-key', NODE_ENV: 'production' }, { cwd: app })
    try {
      const chat = await fetch(`http://127.0.0.1:${service.port}/v1/chat/send`, {
        method: 'POST',
        headers: { authorization: 'Bearer image-key', 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'how do I reset my password', user_id: 'u' })
      })
      expect(chat.status).toBe(200)
      const healthcheck = JSON.parse(/^HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[]
      expect(healthcheck[0]).toBe('node')
      const healthy = await runProcess(process.execPath, healthcheck.slice(1), { cwd: app, env: { PORT: String(service.port) }, timeoutMs: 10_000 })
      expect(healthy.exitCode).toBe(0)
    } finally {
      await stopService(service)
    }
    // Once the service is gone, the same check fails.
    const healthcheck = JSON.parse(/^HEALTHCHECK[^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[]
    expect((await runProcess(process.execPath, healthcheck.slice(1), { cwd: app, env: { PORT: '1' }, timeoutMs: 10_000 })).exitCode).toBe(1)
  })
})
