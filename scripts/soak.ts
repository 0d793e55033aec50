/**
 * Soak run: mixed chat and metadata traffic at a constant share of the measured capacity, for minutes, watching the
 * server process for growth (issue "Hardening", part 4).
 *
 *   npm run soak                          # 10 minutes, conversations in the Redis on 127.0.0.1:6379 (REDIS_URL overrides)
 *   npm run soak -- --minutes 0.5         # a quick check (fractions allowed)
 *   npm run soak -- --memory-store        # conversations in memory instead of Redis
 *   npm run soak -- --capacity 400        # skip the probe: take 400 req/s as the capacity
 *
 * 1. The server runs in a child process forked from this file (`--soak-server`): buildApp + loadConfig with a
 *    generated API key, rate limits off, the service's other defaults (EXIFTOOL_PROCS = CPU count, overload refusal
 *    at 1 s event-loop delay, request logging on, its lines going nowhere), conversations in Redis under a unique
 *    REDIS_KEY_PREFIX (SCANned and deleted at the end) or in memory, scratch uploads under a private temporary
 *    directory removed at the end.
 * 2. Capacity probe: PROBE_WARMUP_SECONDS (discarded) then PROBE_SECONDS of the same mix, closed loop with
 *    PROBE_CONCURRENCY requests always in flight; capacity = valid answers per second.
 * 3. Soak: open loop at TARGET_FRACTION of that capacity for --minutes: requests are started on a timer at the target
 *    rate whatever the answers do (no coordinated omission), at most IN_FLIGHT_CAP in flight. Anything but the
 *    expected 2xx with the expected body counts as an error: HTTP errors by status and code, network errors, a
 *    timeout (REQUEST_TIMEOUT_MS), and a request the cap kept from being sent at its time.
 * 4. Every SAMPLE_SECONDS: the server's RSS (/proc/<pid>/status VmRSS), open fds (/proc/<pid>/fd), child processes
 *    (the ExifTool pool: /proc/<n>/stat whose parent is the server), upload files in its scratch directory, CPU of
 *    the server, its ExifTool children, this load generator (process.cpuUsage) and the machine (/proc/stat); and per
 *    interval the achieved rate, p50/p99/max latency, errors and the pacing lag.
 * 5. At the end: a table per minute, per request kind, the errors, a summary with verdicts (exit code 1 when one
 *    fails), and the figures as JSON in bench/results/soak-<ISO time>.json.
 *
 * The load generator is this process: node:http with a keep-alive agent (no autocannon: its overallRate paces each
 * connection, not one arrival stream, and it cannot follow conversation ids it got back). Latency is measured from
 * the moment a request is handed to node:http; the pacing lag (start time minus scheduled time) is reported apart.
 * The generator shares the machine's cores with the server: its own CPU is reported per interval and in the summary.
 * File descriptors for the verdict are counted at rest (no client connection open: the agent destroyed, 2 s later)
 * before and after the soak; those sampled under load include the generator's keep-alive connections.
 */
import { fork, execFileSync, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { Agent, request as httpRequest } from 'node:http'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Redis } from 'ioredis'

// ---------------------------------------------------------------------------------------------------------------
// Knobs
// ---------------------------------------------------------------------------------------------------------------

/**
 * The traffic mix: relative weights of each request kind (they need not sum to 100).
 * - chatNew: POST /v1/chat/send starting a conversation (sometimes with context.order_id, purchase_date, name).
 * - chatContinue: the next message of a conversation started earlier (its id sent back), scripts of 2–15 customer
 *   messages, so histories grow to 30 turns. Conversations are never sent two messages at once.
 * - transcript: GET /v1/chat/conversations/{id}?user_id= of a conversation not busy; its turns must number 2 per message sent.
 * - metadata*: POST /v1/metadata; small: 640×480 and 1024×768 JPEGs, camera: a ~2 MB 3000×2000 JPEG; multipart
 *   (the file in `image`) or a JSON data URI.
 * The pool of open conversations balances itself: a continue with no idle conversation starts one, a new one past
 *   MAX_OPEN_CONVERSATIONS continues one instead. With scripts of 8.5 messages on average, chatNew:chatContinue of
 *   9:66 keeps that rare.
 */
const WEIGHTS = {
  chatNew: 9,
  chatContinue: 66,
  transcript: 5,
  metadataSmallMultipart: 10,
  metadataCameraMultipart: 4,
  metadataSmallDataUri: 5,
  metadataCameraDataUri: 1
} as const
const TARGET_FRACTION = 0.7
const DEFAULT_MINUTES = 10
const PROBE_WARMUP_SECONDS = 5
const PROBE_SECONDS = 20
const PROBE_CONCURRENCY = 16
const IN_FLIGHT_CAP = 256
const REQUEST_TIMEOUT_MS = 10_000
const SAMPLE_SECONDS = 10
/** The pacing timer's period; each tick starts every request due by then. */
const TICK_MS = 5
const MAX_OPEN_CONVERSATIONS = 500
const MIN_MESSAGES = 2
const MAX_MESSAGES = 15
/** Share of new conversations that send `context` with an order number on their first message. */
const CONTEXT_SHARE = 0.4
/** Verdicts. */
const RSS_GROWTH_LIMIT = 0.2
const FD_GROWTH_LIMIT = 5
const P99_GROWTH_LIMIT = 2
/** Warm-up: the RSS baseline is the first sample at or after min(this, a third of the run). */
const WARMUP_SECONDS = 60
/** p99 is compared between the first and last window of min(this, a third of the run). */
const P99_WINDOW_SECONDS = 60
/** Conversations in Redis expire after this: bounds what a killed run leaves behind (the run deletes them anyway). */
const CONVERSATION_TTL_SECONDS = 3600
const SEED = 0x50a4
/** Past this mean CPU of other processes (% of one core) the summary warns that the figures are skewed. */
const OTHER_CPU_WARNING_PERCENT = 15

const SERVER_FLAG = '--soak-server'
const MB = 1024 * 1024

type Kind = keyof typeof WEIGHTS
const KINDS = Object.keys(WEIGHTS) as Kind[]

type ToServer = { cmd: 'close' }
type FromServer =
  | { type: 'ready', port: number, pid: number, scratchRoot: string }
  | { type: 'closed' }
  | { type: 'failed', message: string }

// ---------------------------------------------------------------------------------------------------------------
// Server role (child process)
// ---------------------------------------------------------------------------------------------------------------

async function serve (): Promise<void> {
  const send = (message: FromServer): void => { process.send?.(message) }
  const scratchRoot = requiredEnv('SOAK_TEMP_ROOT')
  const redisUrl = process.env['SOAK_REDIS_URL']
  const { buildApp } = await import('../src/app.ts')
  const { loadConfig } = await import('../src/config.ts')
  const app = await buildApp(loadConfig({
    API_KEYS: requiredEnv('SOAK_API_KEY'),
    RATE_LIMIT_CHAT_PER_MIN: '0',
    RATE_LIMIT_METADATA_PER_MIN: '0',
    TMPDIR: scratchRoot,
    CONVERSATION_TTL_SECONDS: String(CONVERSATION_TTL_SECONDS),
    ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: requiredEnv('SOAK_REDIS_KEY_PREFIX') })
  }), { logStream: { write () {} } })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (address === null || typeof address === 'string') throw new Error('server has no TCP address')
  let closing: Promise<void> | undefined
  const close = async (): Promise<void> => {
    closing ??= app.close()
    await closing
  }
  process.on('message', (message: ToServer) => {
    if (message.cmd !== 'close') return
    close().then(() => {
      send({ type: 'closed' })
      process.disconnect()
    }, (error: unknown) => { send({ type: 'failed', message: String(error) }) })
  })
  // The parent is gone: end the ExifTool pool rather than linger.
  process.once('disconnect', () => {
    close().then(() => process.exit(0), () => process.exit(1))
  })
  send({ type: 'ready', port: address.port, pid: process.pid, scratchRoot })
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: images made here, as test/support/images.ts makes them (sharp pixels, tags by the real ExifTool)
// ---------------------------------------------------------------------------------------------------------------

interface Image {
  name: string
  bytes: Buffer
  sha256: string
  make: string
  multipart: { body: Buffer, contentType: string }
  dataUri: Buffer
}

const NIKON_TAGS = {
  Make: 'NIKON',
  Model: 'COOLPIX P6000',
  DateTimeOriginal: '2008:10:22 16:38:20',
  GPSLatitude: 43.4670816,
  GPSLatitudeRef: 'N',
  GPSLongitude: 11.8845383,
  GPSLongitudeRef: 'E'
}
const PHONE_TAGS = {
  Make: 'Apple',
  Model: 'iPhone 13',
  DateTimeOriginal: '2026:06:14 09:12:45',
  OffsetTimeOriginal: '+02:00',
  GPSLatitude: 48.8583701,
  GPSLatitudeRef: 'N',
  GPSLongitude: 2.2944813,
  GPSLongitudeRef: 'E',
  Software: '17.5.1'
}

async function makeImages (dir: string): Promise<{ small: Image[], camera: Image }> {
  const { ExifTool } = await import('exiftool-vendored')
  const exiftool = new ExifTool({ maxProcs: 1 })
  try {
    const tagged = async (name: string, pixels: Buffer, tags: Record<string, string | number>): Promise<Image> => {
      const path = join(dir, name)
      await writeFile(path, pixels)
      await exiftool.write(path, tags, { writeArgs: ['-overwrite_original'] })
      const bytes = await readFile(path)
      await rm(path, { force: true })
      return await image(name, bytes, String(tags['Make']))
    }
    return {
      small: [
        await tagged('small-640.jpg', await jpeg(640, 480, 80, 0), NIKON_TAGS),
        await tagged('phone-1024.jpg', await jpeg(1024, 768, 85, 6), PHONE_TAGS)
      ],
      // Grain brings a 3000×2000 q90 JPEG to a camera photo's size (~2 MB), as bench/metadata.bench.ts does.
      camera: await tagged('camera-3000.jpg', await jpeg(3000, 2000, 90, 16), NIKON_TAGS)
    }
  } finally {
    await exiftool.end()
  }
}

async function image (name: string, bytes: Buffer, make: string): Promise<Image> {
  const form = new FormData()
  form.append('image', new Blob([bytes], { type: 'image/jpeg' }), name)
  const request = new Request('http://localhost/', { method: 'POST', body: form })
  return {
    name,
    bytes,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    make,
    multipart: { body: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type') ?? '' },
    dataUri: Buffer.from(JSON.stringify({ image: `data:image/jpeg;base64,${bytes.toString('base64')}` }))
  }
}

/** A gradient, with fixed-seed grain of `amplitude` (0: none), encoded by sharp. */
async function jpeg (width: number, height: number, quality: number, amplitude: number): Promise<Buffer> {
  const { default: sharp } = await import('sharp')
  const raw = Buffer.alloc(width * height * 3)
  let state = 0x9e3779b9
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let noise = 0
      if (amplitude > 0) {
        state ^= state << 13
        state ^= state >>> 17
        state ^= state << 5
        noise = ((state >>> 0) % (2 * amplitude + 1)) - amplitude
      }
      const offset = (y * width + x) * 3
      raw[offset] = clampByte(((x * 255) / width | 0) + noise)
      raw[offset + 1] = clampByte(((y * 255) / height | 0) + noise)
      raw[offset + 2] = clampByte(128 + noise)
    }
  }
  return await sharp(raw, { raw: { width, height, channels: 3 } }).jpeg({ quality }).toBuffer()
}

function clampByte (value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : value
}

// ---------------------------------------------------------------------------------------------------------------
// Conversations: short support messages, written for this run
// ---------------------------------------------------------------------------------------------------------------

interface Topic {
  name: string
  /** First messages; `{order}` is the conversation's order number. */
  openers: string[]
  /** Whether the topic's requests need an order number (the assistant asks for it when none is known). */
  needsOrder: boolean
  followUps: string[]
}

const TOPICS: Topic[] = [
  {
    name: 'tracking',
    needsOrder: true,
    openers: ['hi, where is my parcel??', "where's my order at", 'my package still hasnt arrived', 'can you tell me where order {order} is?', 'track order {order} please'],
    followUps: ['and when will it arrive?', 'has it shipped yet?', 'it says delivered but nothing is here', 'can I change the delivery address?', 'is there a tracking number?', "it's been a week already", 'which courier is it with?']
  },
  {
    name: 'refund',
    needsOrder: true,
    openers: ['i want my money back for the shoes', "I'd like a refund please", 'the jacket I got is broken, I want a refund', 'refund for order {order}', 'I received the wrong size'],
    followUps: ['how long do refunds take?', 'I bought it 3 days ago', 'can I return it by post?', 'do I have to pay for the return shipping?', 'when will I see the money?', 'has my refund been processed?', 'can I exchange it instead?']
  },
  {
    name: 'cancellation',
    needsOrder: true,
    openers: ['I want to cancel an order', 'please cancel order {order}', 'can i still cancel my order', 'I ordered the wrong thing, cancel it please'],
    followUps: ['is there a cancellation fee?', 'and when do I get my money back?', 'I ordered it yesterday', 'ok please go ahead', 'what if it already shipped?']
  },
  {
    name: 'invoice',
    needsOrder: true,
    openers: ['i need the invoice pls', 'can i get the invoice for my last order', 'where can I download the invoice for {order}'],
    followUps: ['can you send it to my email?', 'my email is jo.doe@example.com', 'I need it for my company', 'where do I find old invoices?']
  },
  {
    name: 'account',
    needsOrder: false,
    openers: ['how do I reset my password', "I can't log in to my account", 'someone else is in my account', 'how do i change my email address'],
    followUps: ["I didn't get the reset email", 'can I delete my account instead?', 'how do I make a new account', 'can I have two accounts?', 'how do I switch accounts?']
  },
  {
    name: 'payment',
    needsOrder: false,
    openers: ['my card was charged twice', 'payment keeps getting declined', "my discount code doesn't work at checkout", 'what payment methods do you accept'],
    followUps: ['can I pay with paypal?', 'do you take apple pay?', 'when will the double charge be refunded?', 'I tried two different cards', 'can I pay in instalments?']
  },
  {
    name: 'delivery',
    needsOrder: false,
    openers: ['how long does delivery take', 'what shipping options do you have', 'do you ship to canada?', 'how much is shipping'],
    followUps: ['is there express shipping?', 'how much is next day delivery?', 'and if I order today?', 'can I pick it up in store?', 'do you deliver on saturdays?']
  },
  {
    name: 'complaint',
    needsOrder: false,
    openers: ['an item is missing from my parcel', 'this is the third time my order is late, I want to complain', 'can I talk to a real person please'],
    followUps: ['I want to speak to someone', 'this is ridiculous', "ok, what's the phone number?", 'what are your opening hours?', 'can I email you instead?']
  }
]
const ORDER_ANSWERS = ["it's {order}", 'order no. {order}', 'my order number is {order}', '{order}', 'its #{order} i think']
const GENERIC_FOLLOW_UPS = [
  'thanks', 'thank you so much!', 'and when will it arrive?', 'what about my refund?', 'ok', 'one more thing, how do I track my order?',
  'can I still cancel it?', "what's your returns policy?", 'hello?', 'thanks, that is all', 'how do I contact customer service?',
  'can I change my delivery address?', 'is the blue one back in stock?', 'how do I unsubscribe from the newsletter?',
  'I want to leave a review', 'what about order {order}?', 'thanks! and when will it arrive?', 'ok great, bye'
]
const NAMES = ['Ana', 'Jonas', 'Mia', 'Tom', 'Priya', 'Lukas', 'Chen', 'Sofia']

interface Conversation {
  id: string
  userId: string
  orderId: string
  /** The messages still to send, in order. */
  script: string[]
  /** Customer messages answered so far. */
  sent: number
  busy: boolean
}

/** mulberry32: the same mix on every run, so runs compare. */
function prng (seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Traffic: what the next request is, and what answer it must get
// ---------------------------------------------------------------------------------------------------------------

interface Planned {
  kind: Kind
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: Buffer
  /** Checks a 2xx answer; returns what is wrong, or undefined. Updates the conversation on success. */
  check: (status: number, body: Buffer) => string | undefined
  /** Called once the request is over, whatever happened (frees its conversation). */
  release: (ok: boolean) => void
}

class Traffic {
  readonly #random = prng(SEED)
  readonly #idle: Conversation[] = []
  #open = 0
  #users = 0
  readonly #authorization: string
  readonly #images: { small: Image[], camera: Image }
  readonly #cumulative: Array<[Kind, number]>
  readonly #total: number
  /** Conversations started and finished (their scripts sent to the end), and chat kinds turned into another. */
  readonly stats = { started: 0, finished: 0, dropped: 0, newAsContinue: 0, continueAsNew: 0, transcriptAsNew: 0, maxOpen: 0 }

  constructor (apiKey: string, images: { small: Image[], camera: Image }) {
    this.#authorization = `Bearer ${apiKey}`
    this.#images = images
    let sum = 0
    this.#cumulative = KINDS.map((kind) => { sum += WEIGHTS[kind]; return [kind, sum] })
    this.#total = sum
  }

  get open (): number {
    return this.#open
  }

  next (): Planned {
    const roll = this.#random() * this.#total
    const kind = this.#cumulative.find(([, upTo]) => roll < upTo)?.[0] ?? 'chatContinue'
    switch (kind) {
      case 'chatNew':
        if (this.#open >= MAX_OPEN_CONVERSATIONS && this.#idle.length > 0) {
          this.stats.newAsContinue++
          return this.#continue(this.#takeIdle())
        }
        return this.#start()
      case 'chatContinue':
        if (this.#idle.length === 0) {
          this.stats.continueAsNew++
          return this.#start()
        }
        return this.#continue(this.#takeIdle())
      case 'transcript':
        if (this.#idle.length === 0) {
          this.stats.transcriptAsNew++
          return this.#start()
        }
        return this.#transcript(this.#takeIdle())
      case 'metadataSmallMultipart':
        return this.#metadata(kind, this.#pick(this.#images.small), 'multipart')
      case 'metadataCameraMultipart':
        return this.#metadata(kind, this.#images.camera, 'multipart')
      case 'metadataSmallDataUri':
        return this.#metadata(kind, this.#pick(this.#images.small), 'json')
      case 'metadataCameraDataUri':
        return this.#metadata(kind, this.#images.camera, 'json')
    }
  }

  #pick<T> (items: readonly T[]): T {
    return items[Math.floor(this.#random() * items.length)]!
  }

  #takeIdle (): Conversation {
    const index = Math.floor(this.#random() * this.#idle.length)
    const conversation = this.#idle[index]!
    this.#idle[index] = this.#idle[this.#idle.length - 1]!
    this.#idle.pop()
    conversation.busy = true
    return conversation
  }

  #orderId (): string {
    const n = Math.floor(this.#random() * 90_000) + 10_000
    return this.#pick([`A-${n}`, String(n), `ORD${n}1`, `ORD-${n}`])
  }

  #script (topic: Topic, orderId: string, orderKnown: boolean): string[] {
    const length = MIN_MESSAGES + Math.floor(this.#random() * (MAX_MESSAGES - MIN_MESSAGES + 1))
    const opener = this.#pick(topic.openers)
    const messages = [opener]
    if (topic.needsOrder && !orderKnown && !opener.includes('{order}')) messages.push(this.#pick(ORDER_ANSWERS))
    const followUps = [...topic.followUps]
    while (messages.length < length) {
      if (followUps.length > 0 && this.#random() < 0.6) messages.push(followUps.splice(Math.floor(this.#random() * followUps.length), 1)[0]!)
      else messages.push(this.#pick(GENERIC_FOLLOW_UPS))
    }
    return messages.slice(0, length).map((message) => message.replaceAll('{order}', orderId))
  }

  #chatBody (message: string, conversation: Conversation, context: Record<string, string> | undefined): Buffer {
    return Buffer.from(JSON.stringify({
      message,
      user_id: conversation.userId,
      ...(conversation.id === '' ? {} : { conversation_id: conversation.id }),
      ...(context === undefined ? {} : { context })
    }))
  }

  #start (): Planned {
    const orderId = this.#orderId()
    const withContext = this.#random() < CONTEXT_SHARE
    let context: Record<string, string> | undefined
    if (withContext) {
      context = { order_id: orderId }
      if (this.#random() < 0.5) {
        const daysAgo = 1 + Math.floor(this.#random() * 60)
        context['purchase_date'] = new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
      }
      if (this.#random() < 0.5) context['customer_name'] = this.#pick(NAMES)
    }
    const conversation: Conversation = {
      id: '',
      userId: `soak-customer-${++this.#users}`,
      orderId,
      script: this.#script(this.#pick(TOPICS), orderId, withContext),
      sent: 0,
      busy: true
    }
    const message = conversation.script.shift()!
    this.#open++
    this.stats.started++
    this.stats.maxOpen = Math.max(this.stats.maxOpen, this.#open)
    return {
      kind: 'chatNew',
      method: 'POST',
      path: '/v1/chat/send',
      headers: { authorization: this.#authorization, 'content-type': 'application/json' },
      body: this.#chatBody(message, conversation, context),
      check: (_status, body) => {
        const answer = parseJson(body) as { conversation_id?: unknown, reply?: unknown } | undefined
        if (typeof answer?.conversation_id !== 'string' || answer.conversation_id === '') return 'no conversation_id'
        if (typeof answer.reply !== 'string' || answer.reply === '') return 'no reply'
        conversation.id = answer.conversation_id
        conversation.sent = 1
        return undefined
      },
      release: (ok) => { this.#release(conversation, ok) }
    }
  }

  #continue (conversation: Conversation): Planned {
    const message = conversation.script.shift() ?? 'thanks'
    // Now and then a later message repeats the context, as a widget sending the page's order does.
    const context = this.#random() < 0.05 ? { order_id: conversation.orderId } : undefined
    return {
      kind: 'chatContinue',
      method: 'POST',
      path: '/v1/chat/send',
      headers: { authorization: this.#authorization, 'content-type': 'application/json' },
      body: this.#chatBody(message, conversation, context),
      check: (_status, body) => {
        const answer = parseJson(body) as { conversation_id?: unknown, reply?: unknown } | undefined
        if (answer?.conversation_id !== conversation.id) return 'another conversation_id'
        if (typeof answer.reply !== 'string' || answer.reply === '') return 'no reply'
        conversation.sent++
        return undefined
      },
      release: (ok) => { this.#release(conversation, ok) }
    }
  }

  #transcript (conversation: Conversation): Planned {
    return {
      kind: 'transcript',
      method: 'GET',
      path: `/v1/chat/conversations/${encodeURIComponent(conversation.id)}?user_id=${encodeURIComponent(conversation.userId)}`,
      headers: { authorization: this.#authorization },
      check: (_status, body) => {
        const answer = parseJson(body) as { conversation_id?: unknown, turns?: unknown } | undefined
        if (answer?.conversation_id !== conversation.id) return 'another conversation_id'
        if (!Array.isArray(answer.turns)) return 'no turns'
        // Two turns per message answered (all of them: the history keeps 50, scripts stop at 30).
        if (answer.turns.length !== 2 * conversation.sent) return `${answer.turns.length} turns, expected ${2 * conversation.sent}`
        return undefined
      },
      release: () => {
        conversation.busy = false
        this.#idle.push(conversation)
      }
    }
  }

  /** A conversation that failed or whose script is done leaves the pool; else it waits for its next message. */
  #release (conversation: Conversation, ok: boolean): void {
    conversation.busy = false
    if (!ok || conversation.script.length === 0) {
      this.#open--
      if (ok) this.stats.finished++
      else this.stats.dropped++
      return
    }
    this.#idle.push(conversation)
  }

  #metadata (kind: Kind, image: Image, as: 'multipart' | 'json'): Planned {
    const body = as === 'multipart' ? image.multipart.body : image.dataUri
    const contentType = as === 'multipart' ? image.multipart.contentType : 'application/json'
    return {
      kind,
      method: 'POST',
      path: '/v1/metadata',
      headers: { authorization: this.#authorization, 'content-type': contentType },
      body,
      check: (_status, answerBody) => {
        const answer = parseJson(answerBody) as { camera?: { make?: unknown }, filesize_bytes?: unknown, provenance?: { sha256?: unknown } } | undefined
        if (answer?.camera?.make !== image.make) return 'wrong camera make'
        if (answer.filesize_bytes !== image.bytes.length) return 'wrong filesize_bytes'
        if (answer.provenance?.sha256 !== image.sha256) return 'wrong sha256'
        return undefined
      },
      release: () => {}
    }
  }
}

function parseJson (body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The client: one request over node:http, its outcome
// ---------------------------------------------------------------------------------------------------------------

interface Outcome {
  kind: Kind
  ok: boolean
  /** Set when not ok: `<status> <code>`, a network error code, TIMEOUT, SKIPPED_AT_CAP or `BAD_BODY <kind>: …`. */
  error?: string
  /** For the error examples: the service's message, or what the check found. */
  detail?: string
  latencyMs: number
}

function send (agent: Agent, port: number, planned: Planned): Promise<Outcome> {
  const started = performance.now()
  return new Promise((resolve) => {
    let settled = false
    const finish = (ok: boolean, error?: string, detail?: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      try {
        planned.release(ok)
      } finally {
        resolve({
          kind: planned.kind,
          ok,
          latencyMs: performance.now() - started,
          ...(error === undefined ? {} : { error }),
          ...(detail === undefined ? {} : { detail })
        })
      }
    }
    const headers: Record<string, string | number> = { ...planned.headers }
    if (planned.body !== undefined) headers['content-length'] = planned.body.length
    const request = httpRequest({ host: '127.0.0.1', port, method: planned.method, path: planned.path, headers, agent }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', (error: NodeJS.ErrnoException) => { finish(false, error.code ?? error.message) })
      response.on('end', () => {
        const status = response.statusCode ?? 0
        const body = Buffer.concat(chunks)
        if (status < 200 || status > 299) {
          const envelope = parseJson(body) as { code?: unknown, message?: unknown } | undefined
          const code = typeof envelope?.code === 'string' ? ` ${envelope.code}` : ''
          finish(false, `${status}${code}`, typeof envelope?.message === 'string' ? envelope.message : body.toString('utf8', 0, 200))
          return
        }
        const wrong = planned.check(status, body)
        if (wrong === undefined) finish(true)
        else finish(false, `BAD_BODY ${planned.kind}`, wrong)
      })
    })
    const timer = setTimeout(() => {
      finish(false, 'TIMEOUT', `no answer within ${REQUEST_TIMEOUT_MS} ms`)
      request.destroy()
    }, REQUEST_TIMEOUT_MS)
    request.on('error', (error: NodeJS.ErrnoException) => { finish(false, error.code ?? error.message, error.message) })
    request.end(planned.body)
  })
}

function newAgent (): Agent {
  return new Agent({ keepAlive: true, maxSockets: IN_FLIGHT_CAP, maxFreeSockets: IN_FLIGHT_CAP })
}

// ---------------------------------------------------------------------------------------------------------------
// Recording
// ---------------------------------------------------------------------------------------------------------------

/** What one interval of the run saw: the requests completed in it, then the server's state at its end. */
interface Interval {
  index: number
  startS: number
  seconds: number
  scheduled: number
  completed: number
  ok: number
  errors: number
  latencies: number[]
  byKind: Map<Kind, number[]>
  maxInFlight: number
  /** Start time minus scheduled time, ms. */
  lags: number[]
  generatorCpuMs: number
  sample?: Sample
}

interface Sample {
  atS: number
  rssMB: number
  fds: number
  children: number
  childNames: string[]
  scratchFiles: number
  /** CPU used since the previous sample, % of one core. */
  serverCpuPercent: number
  exiftoolCpuPercent: number
  /** Busy share of the whole machine since the previous sample, % (all cores). */
  machineCpuPercent: number
  /** The same in cores, % of one core: server + ExifTool + generator + anything else running. */
  machineBusyCorePercent: number
  /** Raw counters for the next delta. */
  counters: CpuCounters
}

interface CpuCounters { at: number, serverTicks: number, childTicks: number, machineBusy: number, machineTotal: number }

class Recorder {
  readonly intervals: Interval[] = []
  readonly errors = new Map<string, { count: number, kinds: Map<Kind, number>, example: string }>()
  readonly byKind = new Map<Kind, { count: number, errors: number, latencies: number[] }>()
  inFlight = 0
  readonly #t0: number
  readonly #count: number

  constructor (t0: number, durationS: number) {
    this.#t0 = t0
    this.#count = Math.max(1, Math.ceil(durationS / SAMPLE_SECONDS))
    for (let index = 0; index < this.#count; index++) {
      const startS = index * SAMPLE_SECONDS
      this.intervals.push({
        index,
        startS,
        seconds: Math.min(SAMPLE_SECONDS, durationS - startS),
        scheduled: 0,
        completed: 0,
        ok: 0,
        errors: 0,
        latencies: [],
        byKind: new Map(),
        maxInFlight: 0,
        lags: [],
        generatorCpuMs: 0
      })
    }
  }

  intervalAt (now: number): Interval {
    const index = Math.min(this.#count - 1, Math.max(0, Math.floor((now - this.#t0) / (SAMPLE_SECONDS * 1000))))
    return this.intervals[index]!
  }

  started (lagMs: number): void {
    this.inFlight++
    const interval = this.intervalAt(performance.now())
    interval.scheduled++
    interval.lags.push(lagMs)
    interval.maxInFlight = Math.max(interval.maxInFlight, this.inFlight)
  }

  skipped (kind: Kind): void {
    const interval = this.intervalAt(performance.now())
    interval.scheduled++
    this.#error(interval, { kind, ok: false, error: 'SKIPPED_AT_CAP', detail: `${IN_FLIGHT_CAP} requests already in flight`, latencyMs: 0 })
  }

  completed (outcome: Outcome): void {
    this.inFlight--
    const interval = this.intervalAt(performance.now())
    interval.completed++
    interval.latencies.push(outcome.latencyMs)
    let kindLatencies = interval.byKind.get(outcome.kind)
    if (kindLatencies === undefined) interval.byKind.set(outcome.kind, kindLatencies = [])
    kindLatencies.push(outcome.latencyMs)
    const kind = this.#kind(outcome.kind)
    kind.count++
    kind.latencies.push(outcome.latencyMs)
    if (outcome.ok) interval.ok++
    else this.#error(interval, outcome)
  }

  #kind (kind: Kind): { count: number, errors: number, latencies: number[] } {
    let entry = this.byKind.get(kind)
    if (entry === undefined) this.byKind.set(kind, entry = { count: 0, errors: 0, latencies: [] })
    return entry
  }

  #error (interval: Interval, outcome: Outcome): void {
    interval.errors++
    this.#kind(outcome.kind).errors++
    const key = outcome.error ?? 'unknown'
    let entry = this.errors.get(key)
    if (entry === undefined) this.errors.set(key, entry = { count: 0, kinds: new Map(), example: outcome.detail ?? '' })
    entry.count++
    entry.kinds.set(outcome.kind, (entry.kinds.get(outcome.kind) ?? 0) + 1)
  }

  get totalErrors (): number {
    let total = 0
    for (const entry of this.errors.values()) total += entry.count
    return total
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Reading the server from /proc
// ---------------------------------------------------------------------------------------------------------------

const CLOCK_TICKS = clockTicks()

function clockTicks (): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100
  }
}

/** Fields of /proc/<pid>/stat after the command name: [0] is field 3 (state), [1] the parent, [11]/[12] utime/stime. */
async function statFields (pid: number): Promise<{ name: string, fields: string[] } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8')
    const close = text.lastIndexOf(')')
    return { name: text.slice(text.indexOf('(') + 1, close), fields: text.slice(close + 2).split(' ') }
  } catch {
    return undefined
  }
}

async function childrenOf (pid: number): Promise<Array<{ pid: number, name: string, ticks: number }>> {
  const children: Array<{ pid: number, name: string, ticks: number }> = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await statFields(Number(entry))
    if (stat === undefined || Number(stat.fields[1]) !== pid) continue
    children.push({ pid: Number(entry), name: stat.name, ticks: Number(stat.fields[11]) + Number(stat.fields[12]) })
  }
  return children
}

async function countFiles (dir: string): Promise<number> {
  let count = 0
  try {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      count += entry.isDirectory() ? await countFiles(join(dir, entry.name)) : 1
    }
  } catch {}
  return count
}

async function machineCpu (): Promise<{ busy: number, total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const total = values.reduce((a, b) => a + b, 0)
  const idle = (values[3] ?? 0) + (values[4] ?? 0)
  return { busy: total - idle, total }
}

async function sample (pid: number, scratchRoot: string, t0: number, previous: CpuCounters | undefined): Promise<Sample> {
  const at = performance.now()
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const rssKb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN)
  const fds = (await readdir(`/proc/${pid}/fd`)).length
  const stat = await statFields(pid)
  // The server's own CPU, and its children's: those alive now plus those it has reaped (cutime + cstime).
  const serverTicks = stat === undefined ? 0 : Number(stat.fields[11]) + Number(stat.fields[12])
  const reapedTicks = stat === undefined ? 0 : Number(stat.fields[13]) + Number(stat.fields[14])
  const children = await childrenOf(pid)
  const childTicks = reapedTicks + children.reduce((sum, child) => sum + child.ticks, 0)
  const machine = await machineCpu()
  const counters: CpuCounters = { at, serverTicks, childTicks, machineBusy: machine.busy, machineTotal: machine.total }
  const elapsedS = previous === undefined ? 0 : (at - previous.at) / 1000
  const percent = (ticks: number): number => elapsedS > 0 ? 100 * ticks / CLOCK_TICKS / elapsedS : NaN
  return {
    atS: (at - t0) / 1000,
    rssMB: rssKb / 1024,
    fds,
    children: children.length,
    childNames: [...new Set(children.map((child) => child.name))],
    scratchFiles: await countFiles(scratchRoot),
    serverCpuPercent: previous === undefined ? NaN : percent(serverTicks - previous.serverTicks),
    exiftoolCpuPercent: previous === undefined ? NaN : percent(childTicks - previous.childTicks),
    machineCpuPercent: previous === undefined || machine.total === previous.machineTotal
      ? NaN
      : 100 * (machine.busy - previous.machineBusy) / (machine.total - previous.machineTotal),
    machineBusyCorePercent: previous === undefined ? NaN : percent(machine.busy - previous.machineBusy),
    counters
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Phases
// ---------------------------------------------------------------------------------------------------------------

interface ProbeResult {
  seconds: number
  concurrency: number
  completed: number
  valid: number
  capacity: number
  p50Ms: number
  p99Ms: number
  errors: Record<string, number>
  generatorCpuPercent: number
  serverCpuPercent: number
  exiftoolCpuPercent: number
  otherCpuPercent: number
}

/** Closed loop: PROBE_CONCURRENCY requests always in flight, warm-up then the measured window. */
async function probe (server: LiveServer, traffic: Traffic): Promise<ProbeResult> {
  const { port } = server
  const agent = newAgent()
  const warmupEnd = performance.now() + PROBE_WARMUP_SECONDS * 1000
  const before = delay(PROBE_WARMUP_SECONDS * 1000).then(() => sample(server.pid, server.scratchRoot, 0, undefined))
  const end = warmupEnd + PROBE_SECONDS * 1000
  let completed = 0
  let valid = 0
  const latencies: number[] = []
  const errors: Record<string, number> = {}
  let cpuAtWarmupEnd: NodeJS.CpuUsage | undefined
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const outcome = await send(agent, port, traffic.next())
      const now = performance.now()
      if (now < warmupEnd) continue
      cpuAtWarmupEnd ??= process.cpuUsage()
      if (now >= end) break
      completed++
      latencies.push(outcome.latencyMs)
      if (outcome.ok) valid++
      else errors[outcome.error ?? 'unknown'] = (errors[outcome.error ?? 'unknown'] ?? 0) + 1
    }
  }
  await Promise.all(Array.from({ length: PROBE_CONCURRENCY }, worker))
  const cpu = process.cpuUsage(cpuAtWarmupEnd)
  const after = await sample(server.pid, server.scratchRoot, 0, (await before).counters)
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const generatorCpuPercent = 100 * (cpu.user + cpu.system) / 1000 / ((after.atS - (await before).atS) * 1000)
  return {
    seconds: PROBE_SECONDS,
    concurrency: PROBE_CONCURRENCY,
    completed,
    valid,
    capacity: valid / PROBE_SECONDS,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    errors,
    generatorCpuPercent,
    serverCpuPercent: after.serverCpuPercent,
    exiftoolCpuPercent: after.exiftoolCpuPercent,
    otherCpuPercent: after.machineBusyCorePercent - after.serverCpuPercent - after.exiftoolCpuPercent - generatorCpuPercent
  }
}

interface SoakRun {
  recorder: Recorder
  samples: Sample[]
  launched: number
  durationS: number
  generatorCpuPercent: number
  /** Samples at rest (no client connection) before and after. */
  restStart: Sample
  restEnd: Sample
}

/** Open loop at `rate` requests per second for `durationS`, sampling the server every SAMPLE_SECONDS. */
async function soak (server: LiveServer, traffic: Traffic, rate: number, durationS: number, onInterval: (interval: Interval) => void): Promise<SoakRun> {
  const restStart = await sample(server.pid, server.scratchRoot, performance.now(), undefined)
  const agent = newAgent()
  const t0 = performance.now()
  const recorder = new Recorder(t0, durationS)
  const durationMs = durationS * 1000
  const periodMs = 1000 / rate
  const samples: Sample[] = []
  const pending = new Set<Promise<void>>()
  let launched = 0
  const cpuStart = process.cpuUsage()
  let cpuAtInterval = cpuStart
  samples.push(await sample(server.pid, server.scratchRoot, t0, undefined))

  const fire = (lagMs: number): void => {
    const planned = traffic.next()
    if (recorder.inFlight >= IN_FLIGHT_CAP) {
      planned.release(false)
      recorder.skipped(planned.kind)
      return
    }
    recorder.started(lagMs)
    const promise: Promise<void> = send(agent, server.port, planned)
      .then((outcome) => { recorder.completed(outcome) })
      .finally(() => { pending.delete(promise) })
    pending.add(promise)
  }

  // Interval i (0-based) ends with sample i + 1: at (i + 1) × SAMPLE_SECONDS, the last one at the end of the run.
  const intervalCount = recorder.intervals.length
  let lastInterval: Interval | undefined
  await new Promise<void>((resolve) => {
    let nextSample = 1
    let sampling = Promise.resolve()
    const takeSample = (): void => {
      const interval = recorder.intervals[nextSample - 1]!
      const isLast = nextSample === intervalCount
      nextSample++
      const cpu = process.cpuUsage(cpuAtInterval)
      cpuAtInterval = process.cpuUsage()
      interval.generatorCpuMs = (cpu.user + cpu.system) / 1000
      sampling = sampling.then(async () => {
        const reading = await sample(server.pid, server.scratchRoot, t0, samples.at(-1)?.counters)
        samples.push(reading)
        interval.sample = reading
        // The last row is printed once the requests still in flight have finished (they count in it).
        if (isLast) lastInterval = interval
        else onInterval(interval)
      }).catch((error: unknown) => { console.error('soak: sampling failed:', error) })
    }
    const tick = setInterval(() => {
      const now = performance.now()
      const elapsed = now - t0
      const due = Math.min(Math.floor(elapsed / periodMs) + 1, Math.ceil(durationMs / periodMs))
      while (launched < due) {
        const lag = now - (t0 + launched * periodMs)
        launched++
        fire(lag)
      }
      const samplesDue = Math.min(intervalCount, Math.floor(elapsed / (SAMPLE_SECONDS * 1000)) + 1)
      for (let index = nextSample; index < samplesDue; index++) takeSample()
      if (elapsed >= durationMs) {
        clearInterval(tick)
        takeSample()
        sampling.then(() => { resolve() }, () => { resolve() })
      }
    }, TICK_MS)
  })
  const generatorCpu = process.cpuUsage(cpuStart)
  const generatorCpuPercent = 100 * (generatorCpu.user + generatorCpu.system) / 1000 / durationMs
  // Requests still in flight finish (or time out) before the rest reading; they count in the last interval.
  await Promise.all([...pending])
  if (lastInterval !== undefined) onInterval(lastInterval)
  agent.destroy()
  await delay(2000)
  const restEnd = await sample(server.pid, server.scratchRoot, t0, undefined)
  return { recorder, samples, launched, durationS, generatorCpuPercent, restStart, restEnd }
}

// ---------------------------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------------------------

interface LiveServer { child: ChildProcess, port: number, pid: number, scratchRoot: string }

interface Options { minutes: number, memoryStore: boolean, capacity: number | undefined }

function parseOptions (argv: string[]): Options {
  const options: Options = { minutes: DEFAULT_MINUTES, memoryStore: false, capacity: undefined }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const value = (): number => {
      const text = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i]
      const number = Number(text)
      if (text === undefined || text === '' || !Number.isFinite(number) || number <= 0) throw new Error(`${arg.split('=')[0]!} needs a positive number`)
      return number
    }
    if (arg === '--memory-store') options.memoryStore = true
    else if (arg === '--minutes' || arg.startsWith('--minutes=')) options.minutes = value()
    else if (arg === '--capacity' || arg.startsWith('--capacity=')) options.capacity = value()
    else throw new Error(`unknown argument ${arg} (--minutes <n>, --memory-store, --capacity <req/s>)`)
  }
  return options
}

const cleanups: Array<() => Promise<void> | void> = []
let cleaning: Promise<void> | undefined

/** Runs every clean-up step once, newest first, whatever fails. */
function cleanUp (): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step()
      } catch (error) {
        console.error('soak: clean-up step failed:', error)
      }
    }
  })()
  return cleaning
}

async function main (): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const durationS = Math.round(options.minutes * 60)
  if (durationS < SAMPLE_SECONDS) throw new Error(`--minutes must give at least ${SAMPLE_SECONDS} s`)
  const redisUrl = options.memoryStore ? undefined : (process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379')
  const redisKeyPrefix = `chat-metadata-api-soak:${randomUUID()}:`
  const apiKey = `soak-${randomBytes(24).toString('base64url')}`
  const startedAt = new Date()
  const loadStart = loadavg()[0]!

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`soak: ${signal}: cleaning up`)
      cleanUp().finally(() => process.exit(130))
    })
  }
  // Whatever hangs, the run ends and cleans up: the planned work plus generous slack.
  const deadline = setTimeout(() => {
    console.error('soak: over its time budget; stopping')
    cleanUp().finally(() => process.exit(1))
  }, (durationS + PROBE_WARMUP_SECONDS + PROBE_SECONDS + 300) * 1000)
  deadline.unref()

  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-soak-'))
  cleanups.push(() => { rmSync(dir, { recursive: true, force: true }) })
  const scratchRoot = join(dir, 'server')
  mkdirSync(scratchRoot)
  log(`Node ${process.version}, ${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), load ${loadStart.toFixed(2)}; ` +
    `conversations in ${redisUrl === undefined ? 'memory' : `Redis ${redisUrl} under ${redisKeyPrefix}`}`)

  const images = await makeImages(dir)
  log(`images: ${[...images.small, images.camera].map((img) => `${img.name} ${(img.bytes.length / 1024).toFixed(0)} KiB`).join(', ')}`)

  const redis = redisUrl === undefined ? undefined : await redisClient(redisUrl)
  if (redis !== undefined) {
    cleanups.push(async () => {
      const deleted = await deleteKeys(redis, redisKeyPrefix)
      log(`redis: deleted ${deleted} keys under ${redisKeyPrefix}`)
      redis.disconnect()
    })
  }
  const redisMemoryStart = redis === undefined ? undefined : await redisUsedMemory(redis)

  const server = await startServer(apiKey, scratchRoot, redisUrl, redisKeyPrefix)
  cleanups.push(() => stopServer(server.child))
  const atReady = await sample(server.pid, server.scratchRoot, performance.now(), undefined)
  log(`server pid ${server.pid} on port ${server.port}: RSS ${atReady.rssMB.toFixed(1)} MB, ${atReady.fds} fds, ${atReady.children} children at start`)

  const traffic = new Traffic(apiKey, images)
  let probeResult: ProbeResult | undefined
  let capacity: number
  if (options.capacity === undefined) {
    log(`capacity probe: ${PROBE_WARMUP_SECONDS} s warm-up, then ${PROBE_SECONDS} s of the mix, ${PROBE_CONCURRENCY} requests in flight`)
    probeResult = await probe(server, traffic)
    capacity = probeResult.capacity
    log(`capacity: ${capacity.toFixed(1)} valid answers/s (${probeResult.completed} completed, p50 ${ms(probeResult.p50Ms)} ms, p99 ${ms(probeResult.p99Ms)} ms, ` +
      `errors ${JSON.stringify(probeResult.errors)}; CPU in % of one core: server ${percent(probeResult.serverCpuPercent)}, ExifTool ${percent(probeResult.exiftoolCpuPercent)}, ` +
      `load generator ${percent(probeResult.generatorCpuPercent)}, other processes ${percent(probeResult.otherCpuPercent)})`)
    if (probeResult.otherCpuPercent > OTHER_CPU_WARNING_PERCENT) log('WARNING: other processes were busy during the probe: the capacity is skewed')
    if (capacity <= 0) throw new Error('the probe got no valid answer')
  } else {
    capacity = options.capacity
    log(`capacity given: ${capacity} req/s (no probe)`)
  }
  const rate = TARGET_FRACTION * capacity
  await delay(2000)

  log(`soak: ${rate.toFixed(1)} req/s (${(TARGET_FRACTION * 100).toFixed(0)}% of ${capacity.toFixed(1)}) for ${durationS} s, open loop, at most ${IN_FLIGHT_CAP} in flight`)
  printIntervalHeader()
  const run = await soak(server, traffic, rate, durationS, printInterval)
  const redisKeysAtEnd = redis === undefined ? undefined : await countKeys(redis, redisKeyPrefix)
  const redisMemoryEnd = redis === undefined ? undefined : await redisUsedMemory(redis)

  const summary = summarise({ run, rate, capacity, traffic })
  printReport(run, summary, traffic)

  const result = {
    soak: 'chat-metadata-api',
    startedAt: startedAt.toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    loadAverage: { start: loadStart, end: loadavg()[0] },
    store: redisUrl === undefined ? 'memory' : 'redis',
    settings: {
      weights: WEIGHTS,
      targetFraction: TARGET_FRACTION,
      probe: { warmupSeconds: PROBE_WARMUP_SECONDS, seconds: PROBE_SECONDS, concurrency: PROBE_CONCURRENCY },
      inFlightCap: IN_FLIGHT_CAP,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      sampleSeconds: SAMPLE_SECONDS,
      messagesPerConversation: [MIN_MESSAGES, MAX_MESSAGES],
      maxOpenConversations: MAX_OPEN_CONVERSATIONS,
      loadGenerator: 'node:http keep-alive agent, open loop paced by a 5 ms timer (this process)'
    },
    images: [...images.small, images.camera].map((img) => ({ name: img.name, bytes: img.bytes.length })),
    server: { atReady: publicSample(atReady), restStart: publicSample(run.restStart), restEnd: publicSample(run.restEnd) },
    probe: probeResult ?? null,
    ...summary,
    conversations: traffic.stats,
    redis: redis === undefined ? null : { keyPrefix: redisKeyPrefix, keysAtEnd: redisKeysAtEnd, usedMemoryStartMB: redisMemoryStart, usedMemoryEndMB: redisMemoryEnd },
    intervals: run.recorder.intervals.map((interval) => intervalFigures(interval)),
    minutes: minuteRows(run.recorder.intervals)
  }
  const resultsDir = new URL('../bench/results/', import.meta.url)
  mkdirSync(resultsDir, { recursive: true })
  const file = new URL(`soak-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`, resultsDir)
  await writeFile(file, JSON.stringify(result, (_key, value: unknown) => typeof value === 'number' && !Number.isInteger(value) ? round(value) : value, 2) + '\n')
  console.log(`\nfigures: ${file.pathname}`)

  await cleanUp()
  clearTimeout(deadline)
  if (!summary.verdicts.every((verdict) => verdict.pass)) process.exitCode = 1
}

// ---------------------------------------------------------------------------------------------------------------
// Server process management, Redis
// ---------------------------------------------------------------------------------------------------------------

async function startServer (apiKey: string, scratchRoot: string, redisUrl: string | undefined, redisKeyPrefix: string): Promise<LiveServer> {
  const child = fork(import.meta.filename, [SERVER_FLAG], {
    env: {
      ...process.env,
      SOAK_API_KEY: apiKey,
      SOAK_TEMP_ROOT: scratchRoot,
      ...(redisUrl === undefined ? {} : { SOAK_REDIS_URL: redisUrl, SOAK_REDIS_KEY_PREFIX: redisKeyPrefix })
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const ready = await new Promise<Extract<FromServer, { type: 'ready' }>>((resolve, reject) => {
    const timer = setTimeout(() => { reject(new Error('the server was not ready within 60 s')) }, 60_000)
    child.on('message', (message: FromServer) => {
      if (message.type === 'ready') { clearTimeout(timer); resolve(message) }
      if (message.type === 'failed') { clearTimeout(timer); reject(new Error(`server: ${message.message}`)) }
    })
    child.once('exit', (code, signal) => { clearTimeout(timer); reject(new Error(`the server exited (${code ?? signal}) before it was ready`)) })
  })
  return { child, port: ready.port, pid: ready.pid, scratchRoot: ready.scratchRoot }
}

/** Asks the server to close (ending its ExifTool pool); kills it only if it will not. */
async function stopServer (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => { child.once('exit', () => { resolve() }) })
  if (child.connected) child.send({ cmd: 'close' } satisfies ToServer)
  if (await Promise.race([exited.then(() => true), delay(15_000).then(() => false)])) return
  child.kill('SIGKILL')
  await Promise.race([exited, delay(5000)])
}

type RedisClient = Redis

async function redisClient (url: string): Promise<RedisClient> {
  const { Redis } = await import('ioredis')
  const client = new Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true })
  await client.connect()
  return client
}

async function redisUsedMemory (client: RedisClient): Promise<number | undefined> {
  const info = await client.info('memory')
  const bytes = /^used_memory:(\d+)/m.exec(info)?.[1]
  return bytes === undefined ? undefined : Number(bytes) / MB
}

async function scanKeys (client: RedisClient, prefix: string, each: (keys: string[]) => Promise<void>): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await each(keys)
  } while (cursor !== '0')
}

async function countKeys (client: RedisClient, prefix: string): Promise<number> {
  let count = 0
  await scanKeys(client, prefix, async (keys) => { count += keys.length })
  return count
}

async function deleteKeys (client: RedisClient, prefix: string): Promise<number> {
  let deleted = 0
  await scanKeys(client, prefix, async (keys) => { deleted += await client.del(...keys) })
  return deleted
}

// ---------------------------------------------------------------------------------------------------------------
// Summary and report
// ---------------------------------------------------------------------------------------------------------------

interface Verdict { name: string, pass: boolean, detail: string }

function summarise ({ run, rate, capacity, traffic }: {
  run: SoakRun
  rate: number
  capacity: number
  traffic: Traffic
}): {
    capacity: number
    targetRate: number
    achievedRate: number
    scheduled: number
    completed: number
    ok: number
    errors: { total: number, byKind: Record<string, { count: number, kinds: Record<string, number>, example: string }> }
    latency: { p50Ms: number, p99Ms: number, maxMs: number }
    perKind: Record<string, { count: number, errors: number, p50Ms: number, p99Ms: number, firstWindowP99Ms: number, lastWindowP99Ms: number }>
    rssMB: { start: number, afterWarmup: number, warmupAtS: number, end: number, max: number, restEnd: number }
    fds: { start: number, end: number, sampledMin: number, sampledMax: number }
    exiftoolChildren: { min: number, max: number, names: string[] }
    scratchFilesAtRest: number
    p99: { windowSeconds: number, firstMs: number, lastMs: number }
    generatorCpuPercent: number
    pacingLagP99Ms: number
    /** Mean CPU of every other process on the machine during the soak, % of one core (what skews the figures). */
    otherCpuPercent: number
    openConversationsAtEnd: number
    verdicts: Verdict[]
  } {
  const { recorder, samples, durationS } = run
  const intervals = recorder.intervals
  const completed = intervals.reduce((sum, interval) => sum + interval.completed, 0)
  const ok = intervals.reduce((sum, interval) => sum + interval.ok, 0)
  const all = sorted(intervals.flatMap((interval) => interval.latencies))
  const warmupAtS = Math.min(WARMUP_SECONDS, durationS / 3)
  const running = samples.slice(1)
  const afterWarmup = running.find((reading) => reading.atS >= warmupAtS - 0.5) ?? running[0] ?? samples[0]!
  const end = samples.at(-1)!
  const windowS = Math.max(SAMPLE_SECONDS, Math.min(P99_WINDOW_SECONDS, Math.floor(durationS / 3 / SAMPLE_SECONDS) * SAMPLE_SECONDS))
  const firstWindow = intervals.filter((interval) => interval.startS < windowS)
  const lastWindow = intervals.filter((interval) => interval.startS >= durationS - windowS - 0.001)
  const windowP99 = (window: Interval[], kind?: Kind): number =>
    quantile(sorted(window.flatMap((interval) => kind === undefined ? interval.latencies : (interval.byKind.get(kind) ?? []))), 0.99)
  const firstP99 = windowP99(firstWindow)
  const lastP99 = windowP99(lastWindow)
  const errorsTotal = recorder.totalErrors
  const rssLimit = afterWarmup.rssMB * (1 + RSS_GROWTH_LIMIT)
  const verdicts: Verdict[] = [
    { name: 'no errors', pass: errorsTotal === 0, detail: `${errorsTotal} errors in ${run.launched} requests` },
    {
      name: `RSS end ≤ after warm-up +${RSS_GROWTH_LIMIT * 100}%`,
      pass: end.rssMB <= rssLimit,
      detail: `${mb(end.rssMB)} MB at the end vs ${mb(afterWarmup.rssMB)} MB at ${afterWarmup.atS.toFixed(0)} s (limit ${mb(rssLimit)} MB, ${signedPercent(end.rssMB / afterWarmup.rssMB - 1)})`
    },
    {
      name: `fds end ≤ start + ${FD_GROWTH_LIMIT} (at rest)`,
      pass: run.restEnd.fds <= run.restStart.fds + FD_GROWTH_LIMIT,
      detail: `${run.restStart.fds} before, ${run.restEnd.fds} after`
    },
    {
      name: `p99 last ${windowS} s ≤ ${P99_GROWTH_LIMIT}× first ${windowS} s`,
      pass: lastP99 <= P99_GROWTH_LIMIT * firstP99,
      detail: `${ms(firstP99)} ms first, ${ms(lastP99)} ms last (${(lastP99 / firstP99).toFixed(2)}×)`
    }
  ]
  const perKind: Record<string, { count: number, errors: number, p50Ms: number, p99Ms: number, firstWindowP99Ms: number, lastWindowP99Ms: number }> = {}
  for (const kind of KINDS) {
    const entry = recorder.byKind.get(kind)
    if (entry === undefined) continue
    const latencies = sorted(entry.latencies)
    perKind[kind] = {
      count: entry.count,
      errors: entry.errors,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      firstWindowP99Ms: windowP99(firstWindow, kind),
      lastWindowP99Ms: windowP99(lastWindow, kind)
    }
  }
  return {
    capacity,
    targetRate: rate,
    achievedRate: completed / durationS,
    scheduled: run.launched,
    completed,
    ok,
    errors: {
      total: errorsTotal,
      byKind: Object.fromEntries([...recorder.errors].map(([key, entry]) => [key, { count: entry.count, kinds: Object.fromEntries(entry.kinds), example: entry.example }]))
    },
    latency: { p50Ms: quantile(all, 0.5), p99Ms: quantile(all, 0.99), maxMs: all.at(-1) ?? NaN },
    perKind,
    rssMB: {
      start: samples[0]!.rssMB,
      afterWarmup: afterWarmup.rssMB,
      warmupAtS: afterWarmup.atS,
      end: end.rssMB,
      max: Math.max(...samples.map((reading) => reading.rssMB)),
      restEnd: run.restEnd.rssMB
    },
    fds: {
      start: run.restStart.fds,
      end: run.restEnd.fds,
      sampledMin: Math.min(...samples.map((reading) => reading.fds)),
      sampledMax: Math.max(...samples.map((reading) => reading.fds))
    },
    exiftoolChildren: {
      min: Math.min(...running.map((reading) => reading.children)),
      max: Math.max(...running.map((reading) => reading.children)),
      names: [...new Set(samples.flatMap((reading) => reading.childNames))]
    },
    scratchFilesAtRest: run.restEnd.scratchFiles,
    p99: { windowSeconds: windowS, firstMs: firstP99, lastMs: lastP99 },
    generatorCpuPercent: run.generatorCpuPercent,
    pacingLagP99Ms: quantile(sorted(intervals.flatMap((interval) => interval.lags)), 0.99),
    otherCpuPercent: mean(intervals.map((interval) => intervalFigures(interval).otherCpuPercent ?? NaN)),
    openConversationsAtEnd: traffic.open,
    verdicts
  }
}

const INTERVAL_COLUMNS = ['t (s)', 'req/s', 'errors', 'p50', 'p99', 'max', 'in-flight', 'lag p99', 'RSS MB', 'fds', 'children', 'scratch', 'server %', 'exiftool %', 'gen %', 'other %']

function intervalCells (interval: Interval): string[] {
  const figures = intervalFigures(interval)
  return [
    `${interval.startS}–${interval.startS + interval.seconds}`,
    figures.rate.toFixed(1),
    String(interval.errors),
    ms(figures.p50Ms),
    ms(figures.p99Ms),
    ms(figures.maxMs),
    String(interval.maxInFlight),
    ms(figures.lagP99Ms),
    figures.rssMB === undefined ? '' : mb(figures.rssMB),
    String(figures.fds ?? ''),
    String(figures.children ?? ''),
    String(figures.scratchFiles ?? ''),
    percent(figures.serverCpuPercent),
    percent(figures.exiftoolCpuPercent),
    percent(figures.generatorCpuPercent),
    percent(figures.otherCpuPercent)
  ]
}

const INTERVAL_WIDTHS = [9, 7, 6, 7, 7, 8, 9, 7, 7, 5, 8, 7, 8, 10, 5, 9]

function printIntervalHeader (): void {
  console.log(formatRow(INTERVAL_COLUMNS, INTERVAL_WIDTHS))
}

function printInterval (interval: Interval): void {
  console.log(formatRow(intervalCells(interval), INTERVAL_WIDTHS))
}

function formatRow (cells: string[], widths: number[]): string {
  return '  ' + cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join('  ')
}

function intervalFigures (interval: Interval): {
  startS: number
  seconds: number
  scheduled: number
  completed: number
  errors: number
  rate: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  maxInFlight: number
  lagP99Ms: number
  generatorCpuPercent: number
  rssMB?: number
  fds?: number
  children?: number
  scratchFiles?: number
  serverCpuPercent?: number
  exiftoolCpuPercent?: number
  machineCpuPercent?: number
  /** CPU of every other process on the machine, % of one core: the machine's busy time less server, ExifTool, generator. */
  otherCpuPercent?: number
} {
  const latencies = sorted(interval.latencies)
  const reading = interval.sample
  return {
    startS: interval.startS,
    seconds: interval.seconds,
    scheduled: interval.scheduled,
    completed: interval.completed,
    errors: interval.errors,
    rate: interval.completed / interval.seconds,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: latencies.at(-1) ?? NaN,
    maxInFlight: interval.maxInFlight,
    lagP99Ms: quantile(sorted(interval.lags), 0.99),
    generatorCpuPercent: 100 * interval.generatorCpuMs / (interval.seconds * 1000),
    ...(reading === undefined
      ? {}
      : {
          rssMB: reading.rssMB,
          fds: reading.fds,
          children: reading.children,
          scratchFiles: reading.scratchFiles,
          serverCpuPercent: reading.serverCpuPercent,
          exiftoolCpuPercent: reading.exiftoolCpuPercent,
          machineCpuPercent: reading.machineCpuPercent,
          otherCpuPercent: reading.machineBusyCorePercent - reading.serverCpuPercent - reading.exiftoolCpuPercent -
            100 * interval.generatorCpuMs / (interval.seconds * 1000)
        })
  }
}

function minuteRows (intervals: Interval[]): Array<Record<string, number | undefined>> {
  const minutes = new Map<number, Interval[]>()
  for (const interval of intervals) {
    const minute = Math.floor(interval.startS / 60)
    minutes.set(minute, [...(minutes.get(minute) ?? []), interval])
  }
  return [...minutes].map(([minute, group]) => {
    const latencies = sorted(group.flatMap((interval) => interval.latencies))
    const seconds = group.reduce((sum, interval) => sum + interval.seconds, 0)
    const last = group.at(-1)?.sample
    const withSample = group.filter((interval) => interval.sample !== undefined)
    const meanOf = (pick: (reading: Sample) => number): number =>
      withSample.reduce((sum, interval) => sum + pick(interval.sample!), 0) / Math.max(1, withSample.length)
    return {
      minute: minute + 1,
      seconds,
      requests: group.reduce((sum, interval) => sum + interval.completed, 0),
      rate: group.reduce((sum, interval) => sum + interval.completed, 0) / seconds,
      errors: group.reduce((sum, interval) => sum + interval.errors, 0),
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: latencies.at(-1),
      rssMB: last?.rssMB,
      fds: last?.fds,
      children: last?.children,
      serverCpuPercent: meanOf((reading) => reading.serverCpuPercent),
      exiftoolCpuPercent: meanOf((reading) => reading.exiftoolCpuPercent),
      generatorCpuPercent: 100 * group.reduce((sum, interval) => sum + interval.generatorCpuMs, 0) / (seconds * 1000),
      machineCpuPercent: meanOf((reading) => reading.machineCpuPercent),
      otherCpuPercent: mean(group.map((interval) => intervalFigures(interval).otherCpuPercent ?? NaN))
    }
  })
}

function printReport (run: SoakRun, summary: ReturnType<typeof summarise>, traffic: Traffic): void {
  const out: string[] = ['', 'Per minute (latency in ms; RSS, fds and children at the minute\'s last sample; CPU in % of one core, other: every other process on the machine)']
  out.push(...table(
    ['minute', 'requests', 'req/s', 'errors', 'p50', 'p99', 'max', 'RSS MB', 'fds', 'children', 'server %', 'exiftool %', 'gen %', 'other %'],
    minuteRows(run.recorder.intervals).map((row) => [
      `${row['minute']}${row['seconds'] === 60 ? '' : ` (${row['seconds']} s)`}`,
      String(row['requests']), (row['rate'] ?? NaN).toFixed(1), String(row['errors']),
      ms(row['p50Ms'] ?? NaN), ms(row['p99Ms'] ?? NaN), ms(row['maxMs'] ?? NaN),
      mb(row['rssMB'] ?? NaN), String(row['fds'] ?? ''), String(row['children'] ?? ''),
      percent(row['serverCpuPercent']), percent(row['exiftoolCpuPercent']), percent(row['generatorCpuPercent']), percent(row['otherCpuPercent'])
    ])
  ))

  out.push('', `Per request kind (latency in ms; first/last: the p99 of the first and last ${summary.p99.windowSeconds} s)`)
  out.push(...table(
    ['kind', 'weight', 'requests', 'errors', 'p50', 'p99', 'p99 first', 'p99 last'],
    KINDS.map((kind) => {
      const entry = summary.perKind[kind]
      return [kind, String(WEIGHTS[kind]), String(entry?.count ?? 0), String(entry?.errors ?? 0),
        ms(entry?.p50Ms ?? NaN), ms(entry?.p99Ms ?? NaN), ms(entry?.firstWindowP99Ms ?? NaN), ms(entry?.lastWindowP99Ms ?? NaN)]
    })
  ))

  const errors = Object.entries(summary.errors.byKind)
  out.push('', errors.length === 0 ? 'Errors: none' : 'Errors (status and code, or network error; by request kind; first example)')
  if (errors.length > 0) {
    out.push(...table(['error', 'count', 'kinds', 'example'], errors.map(([key, entry]) => [
      key, String(entry.count), Object.entries(entry.kinds).map(([kind, count]) => `${kind} ${count}`).join(', '), entry.example.slice(0, 100)
    ])))
  }

  const stats = traffic.stats
  const verdictLines = summary.verdicts.map((verdict) => `  ${verdict.pass ? 'PASS' : 'FAIL'}  ${verdict.name}: ${verdict.detail}`)
  out.push(
    '',
    'Summary',
    `  capacity ${summary.capacity.toFixed(1)} req/s; target ${summary.targetRate.toFixed(1)} req/s (${(TARGET_FRACTION * 100).toFixed(0)}%), achieved ${summary.achievedRate.toFixed(1)} req/s over ${run.durationS} s`,
    `  requests: ${summary.scheduled} scheduled, ${summary.completed} completed, ${summary.ok} valid, ${summary.errors.total} errors` +
      (errors.length === 0 ? '' : ` (${errors.map(([key, entry]) => `${key}: ${entry.count}`).join(', ')})`),
    `  latency: p50 ${ms(summary.latency.p50Ms)} ms, p99 ${ms(summary.latency.p99Ms)} ms, max ${ms(summary.latency.maxMs)} ms; ` +
      `p99 first ${summary.p99.windowSeconds} s ${ms(summary.p99.firstMs)} ms, last ${summary.p99.windowSeconds} s ${ms(summary.p99.lastMs)} ms`,
    `  RSS: start ${mb(summary.rssMB.start)} MB, after warm-up (${summary.rssMB.warmupAtS.toFixed(0)} s) ${mb(summary.rssMB.afterWarmup)} MB, ` +
      `end ${mb(summary.rssMB.end)} MB, max ${mb(summary.rssMB.max)} MB; at rest after ${mb(summary.rssMB.restEnd)} MB`,
    `  fds at rest: start ${summary.fds.start}, end ${summary.fds.end} (under load ${summary.fds.sampledMin}–${summary.fds.sampledMax}, the generator's connections included)`,
    `  server children (ExifTool pool): ${summary.exiftoolChildren.min}–${summary.exiftoolChildren.max} alive (${summary.exiftoolChildren.names.join(', ')}); ` +
      `upload files left in scratch at rest: ${summary.scratchFilesAtRest}`,
    `  conversations: ${stats.started} started, ${stats.finished} finished, ${stats.dropped} dropped after an error, ${summary.openConversationsAtEnd} open at the end (max ${stats.maxOpen}); ` +
      `kinds turned: new→continue ${stats.newAsContinue}, continue→new ${stats.continueAsNew}, transcript→new ${stats.transcriptAsNew}`,
    `  load generator (this process, node:http): ${summary.generatorCpuPercent.toFixed(1)}% of one core on average; pacing lag p99 ${ms(summary.pacingLagP99Ms)} ms`,
    `  other processes on the machine: ${percent(summary.otherCpuPercent)}% of one core on average` +
      (summary.otherCpuPercent > OTHER_CPU_WARNING_PERCENT ? ' — WARNING: the machine was not quiet; latency and capacity figures are skewed' : ''),
    '',
    'Verdicts',
    ...verdictLines
  )
  console.log(out.join('\n'))
}

function publicSample (reading: Sample): Omit<Sample, 'counters'> {
  const { counters: _counters, ...rest } = reading
  return rest
}

function table (headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)))
  return [formatRow(headers, widths), '  ' + widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map((row) => formatRow(row, widths))]
}

function mean (values: number[]): number {
  const finite = values.filter(Number.isFinite)
  return finite.length === 0 ? NaN : finite.reduce((a, b) => a + b, 0) / finite.length
}

function sorted (values: number[]): number[] {
  return [...values].sort((a, b) => a - b)
}

/** Linear interpolation between closest ranks, on sorted values. */
function quantile (values: number[], q: number): number {
  if (values.length === 0) return NaN
  const position = (values.length - 1) * q
  const lower = Math.floor(position)
  const low = values[lower]!
  const high = values[Math.min(lower + 1, values.length - 1)]!
  return low + (high - low) * (position - lower)
}

function ms (value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '–'
}

function mb (value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '–'
}

function percent (value: number | undefined): string {
  return value !== undefined && Number.isFinite(value) ? value.toFixed(0) : '–'
}

function signedPercent (share: number): string {
  return `${share >= 0 ? '+' : ''}${(share * 100).toFixed(1)}%`
}

function round (value: number): number {
  return Math.round(value * 100) / 100
}

function delay (msToWait: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, msToWait))
}

function log (message: string): void {
  console.log(`soak: ${message}`)
}

function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}

if (process.argv[2] === SERVER_FLAG) {
  try {
    await serve()
  } catch (error) {
    process.send?.({ type: 'failed', message: String(error) } satisfies FromServer)
    throw error
  }
} else {
  try {
    await main()
  } catch (error) {
    console.error('soak: failed:', error)
    process.exitCode = 1
    await cleanUp()
  }
}
