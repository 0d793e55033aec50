import { existsSync } from 'node:fs'
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import { runProcess } from '../support/processes.ts'
import { NODE_FLAGS, PROJECT_ROOT, START_ENV, startService, stopService } from '../support/servers.ts'

// There is no Docker engine here, so the image cannot be built. What the Dockerfile relies on is checked instead:
// its build stage's steps run as written in a directory of their own (the files it copies, production dependencies
// only, the model trained by npm run train), the service starts from there with the command the image runs, and the
// image's HEALTHCHECK command says ready.
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
    expect(env).toMatchObject(START_ENV)
    expect(dockerfile).toMatch(/^HEALTHCHECK /m)
  })

  it('its build steps work as written with production dependencies alone, and the image\'s command and health check work', async () => {
    // The build stage's COPY and RUN lines in order: each COPY as the build does, each RUN with sh, with this Node 24
    // first on the PATH as the image has it (the machine's own may be older).
    const [, build = ''] = dockerfile.split(/^FROM .*$/m)
    const steps = [...build.matchAll(/^(COPY|RUN) (?!--from)(.+)$/gm)].map((match) => ({ kind: match[1]!, text: match[2]! }))
    const copied = steps.filter((step) => step.kind === 'COPY').flatMap((step) => step.text.split(' ').slice(0, -1))
    expect(copied).toEqual(['package.json', 'package-lock.json', 'src', 'plugins', 'schemas', 'domain', 'scripts/train.ts'])
    const runs = steps.filter((step) => step.kind === 'RUN').map((step) => step.text)
    expect(runs).toEqual(['npm ci --omit=dev --ignore-scripts --no-audit --no-fund', 'npm run train'])
    // --ignore-scripts is safe only while no production dependency needs its install script. The project's own
    // (the lock's "" entry: postinstall trains the model) is the Dockerfile's second step.
    const lock = JSON.parse(await readFile(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean, hasInstallScript?: boolean }> }
    expect(Object.entries(lock.packages).filter(([name, entry]) => name !== '' && entry.hasInstallScript === true && entry.dev !== true).map(([name]) => name)).toEqual([])

    const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env['PATH']}`, MODEL_CACHE_DIR: DEFAULT_MODEL_CACHE }
    for (const step of steps) {
      if (step.kind === 'COPY') {
        for (const path of step.text.split(' ').slice(0, -1)) await cp(join(PROJECT_ROOT, path), join(app, path), { recursive: true })
      } else {
        // The training goes into the model cache the suite has already filled (training itself is tested apart).
        const result = await runProcess('sh', ['-c', step.text], { cwd: app, env, timeoutMs: 240_000 })
        expect(result.exitCode, `RUN ${step.text}\n${result.stdout}\n${result.stderr}`).toBe(0)
      }
    }
    expect(existsSync(join(app, 'node_modules/.bin/tsc')), 'no devDependency is installed').toBe(false)

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
    // npm ci and a start: tens of seconds alone, minutes on a loaded machine.
  }, 300_000)
})
