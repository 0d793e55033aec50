/**
 * POST /v1/chat/send against a bare Fastify route (chat.bare-route.ts) with the same validation, bearer check and
 * reply shape, side by side at 64 connections: new conversations and continuing ones in memory, new ones in Redis.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { connect } from 'node:net'
import { httpSide, type HttpRequest } from './support/load.ts'
import type { Options } from './support/options.ts'
import { forkChild, startService, type Child } from './support/processes.ts'
import type { PartResult } from './support/report.ts'
import { compare, log, type Comparison } from './support/rounds.ts'

const CONNECTIONS = 64
/** Continuing: 4 conversations per connection, each started with 10–25 messages (20–50 turns with the replies). */
const CONVERSATIONS = 4 * CONNECTIONS
const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const SERVICE = 'service'
const BARE = 'bare route'
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
  const children: Child[] = []
  const start = async (env: Record<string, string>): Promise<Child> => {
    const child = await startService({ API_KEYS: apiKey, ...env })
    children.push(child)
    return child
  }
  try {
    const memory = await start({})
    const bare = await forkChild(new URL('./chat.bare-route.ts', import.meta.url), { BENCH_API_KEY: apiKey })
    children.push(bare)
    const request = (message: string, userId: string, conversationId?: string): HttpRequest => ({
      method: 'POST',
      path: '/v1/chat/send',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, user_id: userId, ...conversationId === undefined ? {} : { conversation_id: conversationId } })
    })
    const newConversations = MESSAGES.map((message, index) => request(message, `customer-${index}`))
    const pair = async (title: string, service: Child, requests: HttpRequest[] | ((connection: number) => HttpRequest[])): Promise<Comparison> =>
      await compare(title, 'req/s', [
        httpSide(SERVICE, { server: service, connections: CONNECTIONS, requests, peer: BARE, targets: [{ metric: 'ratio', op: '≥', limit: 0.6 }] }),
        httpSide(BARE, { server: bare, connections: CONNECTIONS, requests })
      ], options)

    const comparisons = [await pair('New conversations, in memory', memory, newConversations)]
    // After the new-conversation runs, whose thousands of conversations would push these out of the in-memory LRU.
    const conversations = await startConversations(memory.url, request)
    const continuing = (connection: number): HttpRequest[] => conversations
      .filter((_, index) => index % CONNECTIONS === connection)
      .map(({ id, userId }, index) => request(MESSAGES[index % MESSAGES.length]!, userId, id))
    comparisons.push(await pair('Continuing conversations (20–50 turns), in memory', memory, continuing))
    const notes = [
      `\`POST /v1/chat/send\` (*service*) against a bare Fastify route, ${CONNECTIONS} connections (autocannon). New conversations: each request starts one (${MESSAGES.length} messages in turn). ` +
        `Continuing: ${CONVERSATIONS} conversations started beforehand with 10–25 messages each (20–50 turns with the replies); ` +
        'each connection continues its own four in turn, so no two requests touch one conversation at once. The bare route ' +
        '(bench/chat.bare-route.ts) validates with the same TypeBox schema, checks the same bearer key and answers the same ' +
        'shape, with none of the service\'s understanding, dialogue, store, request log, security headers or metrics. At the bare ' +
        'route\'s rate autocannon takes a large share of the two cores (its column): the bare figure is a floor of what the route ' +
        'could do alone, so the ratio errs in the service\'s favour.'
    ]
    if (await redisAnswers(REDIS_URL)) {
      const redis = await start({ REDIS_URL, REDIS_KEY_PREFIX: `chat-metadata-api-bench:${randomUUID()}:`, CONVERSATION_TTL_SECONDS: '120' })
      comparisons.push(await pair('New conversations, in Redis', redis, newConversations))
      notes.push(`Redis: ${REDIS_URL.replace(/\/\/[^@]*@/, '//')}, keys under a prefix of their own that expire after 120 s.`)
    } else {
      log(`chat: Redis at ${REDIS_URL} does not answer: its comparison is left out`)
      notes.push(`Redis at ${REDIS_URL} did not answer: its comparison was left out.`)
    }
    return { title: 'Chat', notes, comparisons }
  } finally {
    for (const child of children) await child.stop()
  }
}

/** Conversations of 10–25 messages each, 16 being written at a time. */
async function startConversations (url: string, request: (message: string, userId: string, id?: string) => HttpRequest): Promise<Array<{ id: string, userId: string }>> {
  const started: Array<{ id: string, userId: string }> = []
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
