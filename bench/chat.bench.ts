/**
 * Speed of the support assistant, measured rather than asserted in tests.
 *
 *   npm run bench:chat                    # HTTP runs of 10 s each
 *   BENCH_SECONDS=3 npm run bench:chat    # shorter (or longer, up to 120) HTTP runs
 *
 * 1. Training: the default domain pack's understanding (model, 3 seeds, and rejector, 5 folds) trained in a fresh
 *    process, then read back from the model cache as a start does; understanding time per message (median and p99,
 *    each message timed alone) over the project's held-out messages (test/fixtures/*heldout*.csv).
 * 2. POST /v1/chat/send under autocannon (8 connections), a new conversation per request, with conversations in
 *    memory and in the Redis on 127.0.0.1:6379 (REDIS_URL overrides). The server runs in a child process forked
 *    from this file so autocannon does not share its event loop.
 * Output: a table, then one JSON line (the last line). Exit code 1 when any HTTP request was not 2xx or failed.
 */
import { fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { cpus, loadavg } from 'node:os'
import { createRequire } from 'node:module'
import { timeClassification } from '../scripts/classification-timing.ts'

const SERVER_FLAG = '--bench-server'
const CONNECTIONS = 8
const API_KEY = `bench-${randomUUID()}`
const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const MESSAGES = [
  'where is my order #A-10042?',
  'i want my money back for the shoes',
  'how do I reset my password',
  'what payment methods do you accept',
  'can I talk to a real person please'
]

if (process.argv.includes(SERVER_FLAG)) await serve()
else await main()

async function serve (): Promise<void> {
  const { buildApp } = await import('../src/app.ts')
  const { loadConfig } = await import('../src/config.ts')
  const redisUrl = process.env['BENCH_REDIS_URL']
  // The service's own defaults, as `npm start` reads them, but for the key, one ExifTool process and no rate limit.
  const app = await buildApp(loadConfig({
    API_KEYS: apiKeyFromParent(),
    EXIFTOOL_PROCS: '1',
    RATE_LIMIT_CHAT_PER_MIN: '0',
    REDIS_KEY_PREFIX: `chat-metadata-api-bench:${randomUUID()}:`,
    CONVERSATION_TTL_SECONDS: '120',
    ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl })
  }), { logStream: { write () {} } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')
  process.send?.({ port: address.port })
  process.on('message', () => {
    app.close().then(() => process.exit(0), () => process.exit(1))
  })
}

function apiKeyFromParent (): string {
  const key = process.env['BENCH_API_KEY']
  if (key === undefined) throw new Error('BENCH_API_KEY is not set')
  return key
}

async function main (): Promise<void> {
  const seconds = Math.min(120, Math.max(1, Number(process.env['BENCH_SECONDS'] ?? 10)))
  console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, load ${loadavg().map((n) => n.toFixed(2)).join(' ')}, node ${process.version}`)

  const understanding = await measureUnderstanding()
  console.log(`intent model: trained in ${understanding.trainingMs.toFixed(0)} ms (cold), read from the cache in ${understanding.cacheMs.toFixed(0)} ms; ` +
    `${understanding.medianUs.toFixed(1)} µs per message median, ${understanding.p99Us.toFixed(1)} p99 ` +
    `(${understanding.messages} held-out messages, each timed alone)`)

  const runs = []
  for (const [name, redisUrl] of [['memory', undefined], ['redis', REDIS_URL]] as const) {
    const result = await httpRun(seconds, redisUrl)
    runs.push({ store: name, ...result })
    console.log(`POST /v1/chat/send, conversations in ${name.padEnd(6)}: ${result.requestsPerSecond.toFixed(0)} req/s, ` +
      `latency p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, non-2xx ${result.non2xx}, errors ${result.errors}`)
  }
  console.log(JSON.stringify({ understanding, http: runs, seconds, connections: CONNECTIONS }))
  if (runs.some((run) => run.non2xx > 0 || run.errors > 0)) process.exitCode = 1
}

async function measureUnderstanding (): Promise<{ trainingMs: number, cacheMs: number, medianUs: number, p99Us: number, messages: number }> {
  const { readdirSync } = await import('node:fs')
  const { loadDomainPack } = await import('../src/chat/domain-pack/load.ts')
  const { readLabelledMessages } = await import('../src/chat/evaluation/intents.ts')
  const { trainedForPack } = await import('../src/chat/nlu/model-cache.ts')
  const { Understander } = await import('../src/chat/nlu/understand.ts')
  const { DEFAULT_MODEL_CACHE: cache } = await import('../src/chat/nlu/model-cache.ts')
  const pack = loadDomainPack()
  let start = performance.now()
  trainedForPack(pack, undefined)
  const trainingMs = performance.now() - start
  trainedForPack(pack, cache)
  start = performance.now()
  const understander = new Understander(trainedForPack(pack, cache).trained, pack.understanding)
  const cacheMs = performance.now() - start
  const fixtures = new URL('../test/fixtures/', import.meta.url)
  const messages = readdirSync(fixtures).filter((file) => file.includes('heldout'))
    .flatMap((file) => readLabelledMessages(new URL(file, fixtures).pathname).map((message) => message.utterance))
  const timing = timeClassification((message) => understander.understand(message), messages, 5)
  return { trainingMs, cacheMs, medianUs: timing.median, p99Us: timing.p99, messages: messages.length }
}

interface HttpResult { requestsPerSecond: number, p50Ms: number, p99Ms: number, non2xx: number, errors: number }

async function httpRun (seconds: number, redisUrl: string | undefined): Promise<HttpResult> {
  const child = fork(new URL(import.meta.url).pathname, [SERVER_FLAG], {
    env: { ...process.env, BENCH_API_KEY: API_KEY, ...(redisUrl === undefined ? {} : { BENCH_REDIS_URL: redisUrl }) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message) => { resolve((message as { port: number }).port) })
    child.once('exit', (code) => { reject(new Error(`bench server exited with ${String(code)}`)) })
  })
  const autocannon = createRequire(import.meta.url)('autocannon') as (options: Record<string, unknown>) => Promise<{
    requests: { average: number }, latency: { p50: number, p99: number }, non2xx: number, errors: number
  }>
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/v1/chat/send`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: MESSAGES.map((message, i) => ({
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, user_id: `bench-${i}` })
    }))
  })
  await new Promise((resolve) => {
    child.once('exit', resolve)
    child.send('close')
  })
  return { requestsPerSecond: result.requests.average, p50Ms: result.latency.p50, p99Ms: result.latency.p99, non2xx: result.non2xx, errors: result.errors }
}
