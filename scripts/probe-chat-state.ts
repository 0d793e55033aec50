/**
 * The chat-state findings of issue 24 (rows 3, 7, 10, 11, 12), probed over real HTTP against the service as
 * a container starts it (child processes, the service's defaults): what RELIABILITY.md and docs/chat-state.md quote.
 *
 *   npx node scripts/probe-chat-state.ts flood [--messages 400] [--memory-store]   # row 3: one conversation, each message 49 new 1,000-character context members
 *   npx node scripts/probe-chat-state.ts evict [--seconds 60]                       # row 3: one key floods the in-memory store; does another key's conversation survive?
 *   npx node scripts/probe-chat-state.ts race [--rounds 20] [--memory-store]        # row 7: two messages at once to one conversation through two instances
 *   npx node scripts/probe-chat-state.ts low                                        # rows 10-12: servers, X-Request-Id, user_id
 *
 * Redis is the one on 127.0.0.1:6379 (REDIS_URL overrides), under a unique key prefix deleted at the end. The
 * event-loop delay is the service's own, from its /metrics (nodejs_eventloop_lag_max_seconds).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { Redis } from 'ioredis'
import { startService, stopService } from '../test/support/servers.ts'

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379'
const KEY = `probe-${randomBytes(8).toString('hex')}`
const OTHER_KEY = `probe-other-${randomBytes(8).toString('hex')}`
const PREFIX = `chat-state-probe:${randomUUID()}:`

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    messages: { type: 'string', default: '400' },
    rounds: { type: 'string', default: '20' },
    seconds: { type: 'string', default: '60' },
    'memory-store': { type: 'boolean', default: false }
  }
})
const redisStore = values['memory-store'] !== true

interface Instance { base: string, stop: () => Promise<void> }

/** The service as a container starts it (`node src/server.ts`, START_ENV), its defaults but for these. */
async function start (inRedis = redisStore): Promise<Instance> {
  const service = await startService({
    API_KEYS: `${KEY},${OTHER_KEY}`,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_CHAT_PER_MIN: '0',
    ...(inRedis ? { REDIS_URL, REDIS_KEY_PREFIX: PREFIX } : {})
  })
  const base = `http://127.0.0.1:${service.port}`
  // Start-up's own event-loop delay can make the overload guard refuse the first requests: wait it out.
  while ((await send(base, { message: 'hi', user_id: 'warm-up' })).status === 503) await delay(200)
  return { base, stop: async () => { await stopService(service) } }
}

/** The service's largest event-loop delay since the last scrape (prom-client resets it at each). */
async function eventLoopMaxMs (base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  return round1(Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1]) * 1000)
}

interface Answer { status: number, json: Record<string, unknown>, outcome: string }

async function send (base: string, body: Record<string, unknown>, key = KEY): Promise<Answer> {
  const response = await fetch(`${base}/v1/chat/send`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
  const json = await response.json() as Record<string, unknown>
  return { status: response.status, json, outcome: `${response.status}${typeof json['code'] === 'string' ? ` ${json['code']}` : ''}` }
}

/** How many answers had each status and code. */
function tally (answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const { outcome } of answers) counts[outcome] = (counts[outcome] ?? 0) + 1
  return counts
}

/** `count` new members of 1,000 characters, named after the message: each message adds them all. */
function newMembers (message: number, count = 49): Record<string, string> {
  return Object.fromEntries(Array.from({ length: count }, (_, member) => [`m${message}_${member}`, String.fromCharCode(97 + member % 26).repeat(1000)]))
}

const round1 = (value: number): number => Math.round(value * 10) / 10
const mean = (list: number[]): number => round1(list.reduce((sum, value) => sum + value, 0) / Math.max(1, list.length))

async function flood (): Promise<void> {
  const messages = Number(values.messages)
  const instance = await start()
  const redis = new Redis(REDIS_URL)
  try {
    const first = await send(instance.base, { message: 'hello', user_id: 'flooder' })
    const id = first.json['conversation_id'] as string
    const times: number[] = []
    const answers: Answer[] = []
    for (let message = 0; message < messages; message++) {
      if (message === messages - 20) await eventLoopMaxMs(instance.base)
      const started = performance.now()
      answers.push(await send(instance.base, { message: 'where is my order?', user_id: 'flooder', conversation_id: id, context: newMembers(message) }))
      times.push(performance.now() - started)
    }
    const stall = await eventLoopMaxMs(instance.base)
    const report: Record<string, unknown> = {
      store: redisStore ? 'Redis' : 'memory',
      messages,
      answers: tally(answers),
      msFirst20: mean(times.slice(0, 20)),
      msLast20: mean(times.slice(-20)),
      eventLoopMaxMsLast20: stall
    }
    if (redisStore) {
      report['stateBytes'] = await redis.strlen(`${PREFIX}conversation:${id}`)
      const turns = await redis.lrange(`${PREFIX}conversation:${id}:turns`, 0, -1)
      report['turnsBytes'] = turns.reduce((sum, turn) => sum + Buffer.byteLength(turn), 0)
      report['facts'] = Object.keys((JSON.parse((await redis.get(`${PREFIX}conversation:${id}`)) ?? '{}') as { facts?: object }).facts ?? {}).length
    }
    const transcript = await fetch(`${instance.base}/v1/chat/conversations/${id}?user_id=flooder`, { headers: { authorization: `Bearer ${KEY}` } })
    report['transcriptStatus'] = transcript.status
    console.log(JSON.stringify(report))
  } finally {
    redis.disconnect()
    await instance.stop()
  }
}

async function evict (): Promise<void> {
  const seconds = Number(values.seconds)
  // The in-memory store with the service's defaults (CONVERSATION_MAX_BYTES 128 MiB).
  const instance = await start(false)
  try {
    const victim = await send(instance.base, { message: 'where is order A-1?', user_id: 'victim' }, OTHER_KEY)
    const id = victim.json['conversation_id'] as string
    const transcript = async (): Promise<number> => (await fetch(`${instance.base}/v1/chat/conversations/${id}?user_id=victim`, { headers: { authorization: `Bearer ${OTHER_KEY}` } })).status
    // Looked at once, at the end: reading it makes it recently used.
    const started = performance.now()
    let sent = 0
    const answers: Answer[] = []
    while (performance.now() - started < seconds * 1000) {
      // New conversations, each with 49 members of 1,000 characters: about 50 KB a conversation.
      answers.push(...await Promise.all(Array.from({ length: 8 }, async () => await send(instance.base, { message: 'hi', user_id: `flood-${sent++}`, context: newMembers(sent) }))))
    }
    console.log(JSON.stringify({ flooderConversations: sent, flooderAnswers: tally(answers), seconds: round1((performance.now() - started) / 1000), victimTranscript: await transcript() }))
  } finally {
    await instance.stop()
  }
}

async function race (): Promise<void> {
  const rounds = Number(values.rounds)
  // Two replicas over one Redis; with the memory store, one instance taking both messages.
  const a = await start()
  const b = redisStore ? await start() : a
  let lost = 0
  const answers: Answer[] = []
  try {
    for (let round = 0; round < rounds; round++) {
      const first = await send(a.base, { message: 'hello', user_id: 'racer' })
      const id = first.json['conversation_id'] as string
      const order = `R-${round}${randomBytes(2).toString('hex')}`
      answers.push(...await Promise.all([
        send(a.base, { message: 'I have a question', user_id: 'racer', conversation_id: id, context: { order_id: order } }),
        send(b.base, { message: 'thanks', user_id: 'racer', conversation_id: id, context: { customer_name: 'Ada' } })
      ]))
      // The order is remembered when the next message, asking to track "it", is answered with it.
      const next = await send(a.base, { message: 'where is my order?', user_id: 'racer', conversation_id: id })
      if (!String(next.json['reply']).includes(order)) lost++
    }
    console.log(JSON.stringify({ store: redisStore ? 'Redis, two instances' : 'memory, one instance', rounds, answers: tally(answers), orderLostInRounds: lost }))
  } finally {
    await a.stop()
    if (b !== a) await b.stop()
  }
}

async function low (): Promise<void> {
  const instance = await start(false)
  try {
    // fetch sets Host itself: node:http sends the one given.
    const servers = await new Promise((resolve, reject) => {
      request(`${instance.base}/openapi.json`, { headers: { host: 'evil.example' } }, (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => { text += chunk.toString() })
        response.on('end', () => { resolve((JSON.parse(text) as { servers: unknown }).servers) })
      }).on('error', reject).end()
    })
    const forged = await fetch(`${instance.base}/health/live`, { headers: { 'x-request-id': 'forged-by-client' } })
    const blank = await send(instance.base, { message: 'hi', user_id: '   ' })
    const nul = await send(instance.base, { message: 'hi', user_id: '\u0000' })
    console.log(JSON.stringify({
      row10Servers: servers,
      row11RequestId: forged.headers.get('x-request-id'),
      row12WhitespaceUserId: [blank.status, blank.json['message']],
      row12NulUserId: [nul.status, nul.json['message']]
    }))
  } finally {
    await instance.stop()
  }
}

const probes: Record<string, () => Promise<void>> = { flood, evict, race, low }
const probe = probes[positionals[0] ?? '']
if (probe === undefined) {
  console.error(`Usage: npx node scripts/probe-chat-state.ts ${Object.keys(probes).join('|')} [options]`)
  process.exitCode = 2
} else {
  try {
    await probe()
  } finally {
    const redis = new Redis(REDIS_URL)
    const keys = await redis.keys(`${PREFIX}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  }
}
