/**
 * POST /v1/chat/send against a bare Fastify route (chat.bare-route.ts) with the same validation, bearer check and
 * reply shape, side by side at 64 connections: new conversations and continuing ones in memory; in Redis, both again
 * with the two process models, one process and WORKERS=2.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { get } from 'node:http'
import { connect } from 'node:net'
import { availableParallelism } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'
import { forkChild, type Server } from '../test/support/processes.ts'
import { startService, type ServiceProcess } from '../test/support/servers.ts'
import { spread } from '../test/support/stats.ts'
import { httpSide, type HttpRequest } from './support/load.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare, log, type Comparison, type Side, type Target } from './support/rounds.ts'

const CONNECTIONS = 64
/** Continuing: 4 conversations per connection, each started with 10–25 messages (20–50 turns with the replies). */
const CONVERSATIONS = 4 * CONNECTIONS
const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const SERVICE = 'service'
const WORKERS = 'service, 2 workers'
const BARE = 'bare route'
const ALONE = 'ChatService.send alone, no HTTP'
const BARE_LOGGED = 'bare route + the service\'s request log'
const AGAINST_BARE: Target[] = [{ metric: 'ratio', op: '≥', limit: 0.45 }]
const MESSAGES = [
  'where is my order #A-10042?',
  'i want my money back for the shoes',
  'how do I reset my password',
  'what payment methods do you accept',
  'the parcel arrived damaged, what now?',
  'can I change the delivery address',
  'do you ship to Norway',
  'can I talk to a real person please'
]

export default async function chat (options: Options): Promise<PartResult> {
  const apiKey = `bench-${randomBytes(12).toString('hex')}`
  const children: Server[] = []
  /** What the bench starts, it stops at the end. */
  const keep = async <T extends Server>(starting: Promise<T>): Promise<T> => {
    const child = await starting
    children.push(child)
    return child
  }
  try {
    const memory = await keep(startBenchService({ API_KEYS: apiKey }))
    const alone = await keep(forkChild(new URL('./chat.alone.ts', import.meta.url)))
    const bare = await keep(forkChild(new URL('./chat.bare-route.ts', import.meta.url), { BENCH_API_KEY: apiKey }))
    const bareLogged = await keep(forkChild(new URL('./chat.bare-route.ts', import.meta.url), { BENCH_API_KEY: apiKey, BENCH_REQUEST_LOG: '1' }))
    const request = (message: string, userId: string, conversationId?: string): HttpRequest => ({
      method: 'POST',
      path: '/v1/chat/send',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, user_id: userId, ...conversationId === undefined ? {} : { conversation_id: conversationId } })
    })
    const newConversations = MESSAGES.map((message, index) => request(message, `customer-${index}`))
    /** The services (each with its ratio to the bare route), the bare route and any `more` sides, sent the same requests. */
    const against = async (title: string, services: Array<{ name: string, server: Server, targets?: Target[] }>, requests: Requests, more: Side[] = []): Promise<Comparison> =>
      await compare(title, 'req/s', [
        ...services.map(({ name, server, targets }) => httpSide(name, { server, connections: CONNECTIONS, requests, peer: BARE, ...targets === undefined ? {} : { targets } })),
        httpSide(BARE, { server: bare, connections: CONNECTIONS, requests }),
        ...more
      ], options)
    const continuing = (conversations: Conversation[]): Requests => (connection) => conversations
      .filter((_, index) => index % CONNECTIONS === connection)
      .map(({ id, userId }, index) => request(MESSAGES[index % MESSAGES.length]!, userId, id))

    /**
     * The in-memory service against the bare route, the logging bare route and the chat's own work in a process of its
     * own with no HTTP (new conversations, or `conversations` of its own continued), with the ceiling note.
     */
    const inMemory = async (title: string, requests: Requests, conversations: number): Promise<Comparison> =>
      withCeiling(await against(title, [{ name: SERVICE, server: memory, targets: AGAINST_BARE }], requests, [
        httpSide(BARE_LOGGED, { server: bareLogged, connections: CONNECTIONS, requests, peer: BARE }),
        {
          name: ALONE,
          peer: BARE,
          run: async (seconds) => ({ value: await alone.call<number>('chatAlone', { messages: MESSAGES, seconds, continuing: conversations }) })
        }
      ]))
    const comparisons = [await inMemory('New conversations, in memory', newConversations, 0)]
    // After the new-conversation runs, whose thousands of conversations would push these out of the in-memory LRU.
    const started = continuing(await startConversations(memory.url, request))
    comparisons.push(await inMemory('Continuing conversations (20–50 turns), in memory', started, CONVERSATIONS))
    const notes = [
      `\`POST /v1/chat/send\` (*service*) against a bare Fastify route, ${CONNECTIONS} connections (autocannon). New conversations: each request starts one (${MESSAGES.length} messages in turn). ` +
        `Continuing: ${CONVERSATIONS} conversations started beforehand with 10–25 messages each (20–50 turns with the replies); ` +
        'each connection continues its own four in turn, so no two requests touch one conversation at once. The bare route ' +
        '(bench/chat.bare-route.ts) validates with the same TypeBox schema, checks the same bearer key and answers the same ' +
        'shape, with none of the service\'s understanding, dialogue, store, request log, security headers or metrics. At the bare ' +
        'route\'s rate autocannon takes a large share of the two cores (its column): the bare figure is a floor of what the route ' +
        'could do alone, so the ratio errs in the service\'s favour. ' +
        `*${ALONE}*: the service's chat (understanding, dialogue, reply, in-memory store) called in a process of its own (bench/chat.alone.ts) with no ` +
        'HTTP, request log, headers or metrics, one message at a time on one core, on the same messages (continuing: ' +
        `${CONVERSATIONS} conversations of its own, started the same way): the most any HTTP service around it could serve per core. ` +
        `*${BARE_LOGGED}*: the bare route with the service's request id and its one log line per request (same fields and ` +
        'redaction, written to a stream that drops it, as the service\'s lines are here). ' +
        '*Ceiling* (under each table): a service that did the bare route\'s work and then the chat\'s, and nothing else, ' +
        'spends the sum of their times per request, so it could reach at most alone ÷ (alone + bare) of the bare route; ' +
        `the second figure does the same with the logging bare route: the ${AGAINST_BARE[0]!.limit}× target is out of reach of any HTTP path ` +
        `that logs its requests wherever that figure is under ${AGAINST_BARE[0]!.limit}.`
    ]
    if (await redisAnswers(REDIS_URL)) {
      // One key prefix for both process models: the continuing conversations are the same on either.
      const env = { API_KEYS: apiKey, REDIS_URL, REDIS_KEY_PREFIX: `chat-metadata-api-bench:${randomUUID()}:`, CONVERSATION_TTL_SECONDS: '120' }
      const redis = await keep(startBenchService(env))
      const workers = await keep(startWorkers(2, env))
      const models = [{ name: SERVICE, server: redis, targets: AGAINST_BARE }, { name: WORKERS, server: workers }]
      comparisons.push(withWorkersRatio(await against('New conversations, in Redis', models, newConversations)))
      const inRedis = continuing(await startConversations(redis.url, request))
      comparisons.push(withWorkersRatio(await against('Continuing conversations (20–50 turns), in Redis', models, inRedis)))
      notes.push(`Redis: ${REDIS_URL.replace(/\/\/[^@]*@/, '//')}, keys under a prefix of their own that expire after 120 s. ` +
        `*${WORKERS}*: the service as \`npm start\` runs it with WORKERS=2 (\`node src/server.ts\`: a node:cluster primary and ` +
        'two workers on one port, its log lines to /dev/null), beside the one-process *service*; both use the same Redis keys, ' +
        'so the continuing conversations are the same on either. Its CPU counts the primary and both workers. With each Redis ' +
        'table, the ratio of the two process models, taken round by round.')
    } else {
      log(`chat: Redis at ${REDIS_URL} does not answer: its comparison is left out`)
      notes.push(`Redis at ${REDIS_URL} did not answer: its comparison was left out.`)
    }
    return { title: 'Chat', notes, comparisons }
  } finally {
    for (const child of children) await child.stop()
  }
}

/** What one comparison sends: one list for every connection, or each connection (0, 1, …) its own. */
type Requests = HttpRequest[] | ((connection: number) => HttpRequest[])
interface Conversation { id: string, userId: string }

/**
 * The comparison with the most the service could reach against the bare route, as its note: an HTTP service that did
 * the bare route's work and then the chat's alone, and nothing more (no request log, security headers, metrics), would
 * spend the sum of the two per request: 1 ÷ (1 ÷ bare + 1 ÷ alone), over the bare route's rate; and the same with the
 * bare route that also writes the service's request log line in place of the bare route. Taken round by round.
 */
function withCeiling (comparison: Comparison): Comparison {
  const rounds = (name: string): number[] => comparison.sides.find((side) => side.name === name)!.rounds
  const bare = rounds(BARE)
  const alone = rounds(ALONE)
  const ceiling = (route: number[]): string => {
    const { median, min, max } = spread(alone.map((chat, round) => 1 / (1 / route[round]! + 1 / chat) / bare[round]!))
    return `${median.toFixed(2)}× the bare route (${min.toFixed(2)}–${max.toFixed(2)}×)`
  }
  return {
    ...comparison,
    note: `Ceiling, the bare route's work plus the chat's alone: ${ceiling(bare)}; with the service's request log as well: ${ceiling(rounds(BARE_LOGGED))}.`
  }
}

/** The comparison with the ratio of the process models, 2 workers over 1, taken round by round, as its note. */
function withWorkersRatio (comparison: Comparison): Comparison {
  const rounds = (name: string): number[] => comparison.sides.find((side) => side.name === name)!.rounds
  const one = rounds(SERVICE)
  const { median, min, max } = spread(rounds(WORKERS).map((value, round) => value / one[round]!))
  return { ...comparison, note: `${WORKERS} ÷ ${SERVICE}: ${median.toFixed(2)}× (${min.toFixed(2)}–${max.toFixed(2)}×).` }
}

/** Conversations of 10–25 messages each, 16 being written at a time. */
async function startConversations (url: string, request: (message: string, userId: string, id?: string) => HttpRequest): Promise<Conversation[]> {
  const started: Conversation[] = []
  let next = 0
  const worker = async (): Promise<void> => {
    for (let index = next++; index < CONVERSATIONS; index = next++) {
      const userId = `regular-${index}`
      let id: string | undefined
      for (let turn = 0; turn < 10 + (index % 16); turn++) {
        const { headers, body } = request(MESSAGES[(index + turn) % MESSAGES.length]!, userId, id)
        const response = await fetch(`${url}/v1/chat/send`, { method: 'POST', headers, body: body as string })
        if (!response.ok) throw new Error(`starting conversation ${index}: HTTP ${response.status}`)
        id = (await response.json() as { conversation_id: string }).conversation_id
      }
      started[index] = { id: id!, userId }
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  return started
}

/**
 * The service as `npm start` runs it (`node src/server.ts`, its log lines to /dev/null), with the bench's key, no rate
 * limits and the default ExifTool pool (one process per core, as the service picks for one worker).
 */
async function startBenchService (env: Record<string, string>): Promise<ServiceProcess> {
  return await startService({ EXIFTOOL_PROCS: String(availableParallelism()), RATE_LIMIT_CHAT_PER_MIN: '0', RATE_LIMIT_METADATA_PER_MIN: '0', ...env }, { output: 'discard' })
}

/**
 * The service with WORKERS=`workers` (a cluster primary and its workers; one ExifTool process per core between them,
 * as the service picks by default), ready once every worker is: /health/ready answered 200 on twice as many new
 * connections in a row as there are workers (the primary hands connections to the workers in turn, and a worker just
 * started refuses for a moment).
 */
async function startWorkers (workers: number, env: Record<string, string>): Promise<ServiceProcess> {
  const procs = String(Math.max(1, Math.round(availableParallelism() / workers)))
  const server = await startBenchService({ ...env, EXIFTOOL_PROCS: procs, WORKERS: String(workers) })
  const started = performance.now()
  for (let inARow = 0; inARow < 2 * workers;) {
    if (performance.now() - started > 30_000) {
      await server.stop()
      throw new Error(`not every one of ${workers} workers became ready`)
    }
    inARow = await readyOnNewConnection(server.url) ? inARow + 1 : 0
    if (inARow === 0) await delay(20)
  }
  return server
}

function readyOnNewConnection (url: string): Promise<boolean> {
  return new Promise((resolve) => {
    get(`${url}/health/ready`, { agent: false }, (response) => {
      response.resume()
      resolve(response.statusCode === 200)
    }).on('error', () => { resolve(false) })
  })
}

function redisAnswers (url: string): Promise<boolean> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect(Number(port || 6379), hostname, () => socket.write('PING\r\n'))
    const done = (answer: boolean): void => { socket.destroy(); resolve(answer) }
    socket.setTimeout(1000, () => { done(false) })
    socket.once('data', (data) => { done(/PONG|NOAUTH/.test(data.toString())) })
    socket.once('error', () => { done(false) })
  })
}
