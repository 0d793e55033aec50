import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CAMERA_TAGS, dataUri, ImageFactory, largePng } from '../support/images.ts'
import { runProcess, until } from '../support/processes.ts'
import { deleteKeys, REDIS_URL } from '../support/redis.ts'
import { freePort, PROJECT_ROOT, startService, stopService, type ServiceProcess } from '../support/servers.ts'

// The deployment of docker-compose.yml without Docker (there is no engine here): Debian's nginx with the gateway's
// own configuration (deploy/nginx/gateway.conf.template, its upstreams filled in as the nginx image would) in front of
// two service processes sharing the real Redis. Everything below goes through the gateway.
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path))
const KEY = 'gateway-key-6f1d'
const LIMITED_KEY = 'gateway-limited-key-2b7e'
const CHAT_LIMIT = 20

let dir: string
let prefix: string
let replicas: ServiceProcess[]
let nginx: ChildProcess
let gateway: string
let photo: Buffer

/** The template with the variables the nginx image would fill from its environment, and nothing else. */
function render (template: string, values: Record<string, string>): string {
  return template.replace(/\$\{([A-Z_]+)\}/g, (match, name: string) => values[name] ?? match)
}

beforeAll(async () => {
  expect(NGINX, 'nginx is missing: apt-get install nginx-light (.ci/run does)').toBeDefined()
  dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-gateway-'))
  prefix = `chat-metadata-api-test:${randomUUID()}:`
  const images = new ImageFactory()
  try {
    photo = await images.make('jpeg', { width: 640, height: 480, tags: CAMERA_TAGS })
  } finally {
    await images.close()
  }
  // The keys come from a file, as the compose secret gives them (API_KEYS_FILE).
  await writeFile(join(dir, 'api_keys'), `${KEY}\n${LIMITED_KEY}\n`)
  const env = {
    API_KEYS_FILE: join(dir, 'api_keys'),
    REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    TRUST_PROXY: '1',
    RATE_LIMIT_CHAT_PER_MIN: String(CHAT_LIMIT),
    TMPDIR: dir
  }
  replicas = await Promise.all([startService(env), startService(env)])

  const port = await freePort()
  gateway = `http://127.0.0.1:${port}`
  const template = await readFile(join(PROJECT_ROOT, 'deploy/nginx/gateway.conf.template'), 'utf8')
  const site = render(template, {
    API_UPSTREAMS: replicas.map((replica) => `server 127.0.0.1:${replica.port} max_fails=1 fail_timeout=5s;`).join(' '),
    GATEWAY_PORT: `127.0.0.1:${port}`,
    CLIENT_MAX_BODY_SIZE: '201m'
  })
  await mkdir(join(dir, 'nginx'))
  await writeFile(join(dir, 'nginx/site.conf'), site)
  // The main context the nginx image has around its conf.d, with everything under the test's directory.
  await writeFile(join(dir, 'nginx/nginx.conf'), `
    daemon off;
    worker_processes 1;
    user root;
    pid ${dir}/nginx/nginx.pid;
    error_log ${dir}/nginx/error.log warn;
    events { worker_connections 256; }
    http {
      access_log ${dir}/nginx/access.log;
      client_body_temp_path ${dir}/nginx/body;
      proxy_temp_path ${dir}/nginx/proxy;
      fastcgi_temp_path ${dir}/nginx/fastcgi;
      uwsgi_temp_path ${dir}/nginx/uwsgi;
      scgi_temp_path ${dir}/nginx/scgi;
      include ${dir}/nginx/site.conf;
    }
  `)
  const check = await runProcess(NGINX!, ['-t', '-p', join(dir, 'nginx'), '-c', join(dir, 'nginx/nginx.conf')], { cwd: dir, env: {}, timeoutMs: 10_000 })
  expect(check.exitCode, check.stderr).toBe(0)
  nginx = spawn(NGINX!, ['-p', join(dir, 'nginx'), '-c', join(dir, 'nginx/nginx.conf')], { stdio: 'ignore' })
  await until(async () => {
    try {
      return (await fetch(`${gateway}/openapi.json`)).status === 200
    } catch {
      return false
    }
  }, 200, 50)
})

afterAll(async () => {
  nginx?.kill('SIGQUIT')
  await Promise.all((replicas ?? []).map(stopService))
  await deleteKeys(prefix)
  await rm(dir, { recursive: true, force: true })
})

interface ChatBody { conversation_id: string, intent: string, reply: string, links: Array<{ url: string }> }

async function chat (body: Record<string, unknown>, headers: Record<string, string> = {}, key = KEY): Promise<Response> {
  return await fetch(`${gateway}/v1/chat/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ user_id: 'gateway-customer', ...body })
  })
}

/** The log lines of a request, from every replica, by its request id (once its line has been written). */
async function linesOf (requestId: string): Promise<Array<{ replica: number, line: Record<string, unknown> }>> {
  const lines = (): Array<{ replica: number, line: Record<string, unknown> }> => replicas.flatMap((replica, index) => replica.output().split('\n')
    .filter((text) => text.includes(`"requestId":"${requestId}"`))
    .map((text) => ({ replica: index, line: JSON.parse(text) as Record<string, unknown> })))
  await until(() => lines().length > 0, 100, 20)
  return lines()
}

/**
 * What the replicas logged at error level (pino's 50 and up), and whether either began to close: nothing these tests
 * send should make them. Shown with any answer that was not the one expected.
 */
function troubleLogged (): string {
  const lines = replicas.flatMap((replica, index) => replica.output().split('\n')
    .filter((text) => /"level":(?:5\d|60)\b/.test(text) || text.includes('"msg":"closing'))
    .map((text) => `replica ${index}: ${text}`))
  return lines.length === 0 ? 'the replicas logged no error' : lines.join('\n')
}

async function replicaOf (answer: Response): Promise<number | undefined> {
  return (await linesOf(answer.headers.get('x-request-id')!))[0]?.replica
}

describe('the gateway (deploy/nginx/gateway.conf.template)', () => {
  it('routes /v1 and /api/v1, the docs and the document, and nothing else', async () => {
    expect((await chat({ message: 'hello' })).status).toBe(200)
    const alias = await fetch(`${gateway}/api/v1/chat/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'hi', user_id: 'gateway-customer' })
    })
    expect(alias.status).toBe(200)
    expect((await fetch(`${gateway}/docs`)).status).toBe(200)
    const document = await (await fetch(`${gateway}/openapi.json`)).json() as { servers: Array<{ url: string }> }
    // The document names the gateway, as the gateway's X-Forwarded-* say.
    expect(document.servers[0]?.url).toBe(gateway)
    for (const inside of ['/metrics', '/health/ready', '/health/live', '/']) {
      const answer = await fetch(`${gateway}${inside}`)
      expect(answer.status, inside).toBe(404)
      expect(await answer.json(), inside).toMatchObject({ statusCode: 404, code: 'ROUTE_NOT_FOUND' })
    }
  })

  it('passes the request id through (or makes one), and the client address in X-Forwarded-For', async () => {
    const given = await chat({ message: 'where is order A-1?' }, { 'x-request-id': 'edge-42', 'x-forwarded-for': '203.0.113.7' })
    expect(given.headers.get('x-request-id')).toBe('edge-42')
    const [logged] = await linesOf('edge-42')
    // The service believes the one hop before it (TRUST_PROXY=1): the gateway, which appended the client it saw.
    expect(logged?.line).toMatchObject({ msg: 'request', status: 200, ip: '127.0.0.1' })
    const made = await chat({ message: 'hello again' })
    const id = made.headers.get('x-request-id')
    expect(id).toMatch(/^[0-9a-f]{32}$/)
    expect(await linesOf(id!)).toHaveLength(1)
  })

  it('takes images near the API\'s limit (25 MiB), as multipart and as a JSON data URI', async () => {
    const png = await largePng(24 * 1024 * 1024)
    const form = new FormData()
    form.append('image', new Blob([png]), 'large.png')
    const upload = await fetch(`${gateway}/v1/metadata`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: form })
    expect(await upload.json()).toMatchObject({ format: 'png', filesize_bytes: png.length })
    // As base64 in JSON the same image is a third larger: the gateway's body limit allows for it.
    const json = await fetch(`${gateway}/v1/metadata`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ image: dataUri(png, 'image/png') })
    })
    expect(await json.json()).toMatchObject({ format: 'png', filesize_bytes: png.length })
    const multipart = new FormData()
    multipart.append('image', new Blob([photo]), 'photo.jpg')
    const small = await fetch(`${gateway}/v1/metadata/file`, { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: multipart })
    expect(await small.json()).toMatchObject({ camera: { make: 'NIKON' } })
  })

  it('refuses a body larger than any image in the envelope', async () => {
    const answer = await fetch(`${gateway}/v1/metadata`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: Buffer.alloc(202 * 1024 * 1024, 0x20)
    })
    expect(answer.status).toBe(413)
    expect(await answer.json()).toMatchObject({ statusCode: 413, code: 'BODY_TOO_LARGE' })
  })
})

describe('scale-out behind the gateway', () => {
  it('continues a conversation on the other replica', async () => {
    const first = await chat({ message: 'I want to return the shoes from order G-4410' })
    const body = await first.json() as ChatBody
    const second = await chat({ message: 'has it shipped?', conversation_id: body.conversation_id })
    const next = await second.json() as ChatBody
    expect(second.status, `${JSON.stringify(next)}\n${troubleLogged()}`).toBe(200)
    expect(next.intent).toBe('track_order')
    // The order the first replica heard is remembered by the second.
    expect(next.links[0]?.url).toBe('https://shop.example.com/orders/G-4410/tracking')
    expect(new Set([await replicaOf(first), await replicaOf(second)]).size).toBe(2)
  })

  it('shares the rate limit of a key across replicas', async () => {
    const answers: Response[] = []
    const bodies: unknown[] = []
    for (let i = 0; i <= CHAT_LIMIT; i++) {
      const answer = await chat({ message: 'hi' }, {}, LIMITED_KEY)
      answers.push(answer)
      bodies.push(await answer.json())
    }
    expect(answers.slice(0, CHAT_LIMIT).map((answer) => answer.status), `${JSON.stringify(bodies)}\n${troubleLogged()}`).toEqual(new Array(CHAT_LIMIT).fill(200))
    const refused = answers[CHAT_LIMIT]!
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(bodies[CHAT_LIMIT]).toMatchObject({ code: 'RATE_LIMITED' })
    const served = new Set(await Promise.all(answers.slice(0, CHAT_LIMIT).map(replicaOf)))
    expect(served).toEqual(new Set([0, 1]))
  })

  it('keeps answering, and loses no conversation, when one replica stops', async () => {
    const started = await (await chat({ message: 'please cancel order H-2231' })).json() as ChatBody
    // Up to here neither replica has logged an error or begun to close.
    expect(troubleLogged()).toBe('the replicas logged no error')
    await stopService(replicas[0]!)
    const answers = []
    for (let i = 0; i < 4; i++) {
      const answer = await chat({ message: 'and the invoice for it?', conversation_id: started.conversation_id })
      answers.push({ status: answer.status, body: await answer.json() as ChatBody })
    }
    expect(answers.map((answer) => answer.status), `${JSON.stringify(answers)}\n${troubleLogged()}`).toEqual([200, 200, 200, 200])
    for (const { body } of answers) expect(body.reply).toContain('H-2231')
  })
})

describe('docker-compose.yml', () => {
  it('is valid for docker-compose', async () => {
    const secret = join(dir, 'compose-api-keys')
    await writeFile(secret, 'a-key\n')
    const result = await runProcess('docker-compose', ['-f', join(PROJECT_ROOT, 'docker-compose.yml'), 'config', '--quiet'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env['PATH'], API_KEYS_SECRET_FILE: secret },
      timeoutMs: 30_000
    })
    expect(result.exitCode, result.stderr).toBe(0)
    const rendered = await runProcess('docker-compose', ['-f', join(PROJECT_ROOT, 'docker-compose.yml'), 'config'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env['PATH'], API_KEYS_SECRET_FILE: secret },
      timeoutMs: 30_000
    })
    // The gateway, two replicas and Redis; the keys come from the secret.
    for (const service of ['gateway:', 'api-1:', 'api-2:', 'redis:']) expect(rendered.stdout).toContain(`  ${service}`)
    expect(rendered.stdout).toContain('API_KEYS_FILE: /run/secrets/api_keys')
  })
})
