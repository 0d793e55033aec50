import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { Type, type Static } from '@sinclair/typebox'
import { envSchema } from 'env-schema'
import { DEFAULT_FACT_LIMITS, type FactLimits } from './chat/conversation-facts.ts'
import { DEFAULT_MODEL_CACHE } from './chat/nlu/model-cache.ts'
import {
  DEFAULT_CLIENT_SHARE,
  DEFAULT_MEMORY_LIMIT_BYTES,
  DEFAULT_READ_CPU_MS,
  DEFAULT_REFUSED_TTL_MS,
  type ExifToolConfig
} from './metadata/extractor.ts'
import { DEFAULT_MAX_VALIDATED_BYTES, parseTrustAnchors, type ContentCredentialsConfig } from './metadata/provenance/c2pa-verifier.ts'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/**
 * The in-memory store's bounds. Its size is the real limit: 128 MiB of conversations as the store counts them
 * (their text and a cost per turn and fact, calibrated on the heap they take). Measured (2026-11): a conversation of
 * one message takes about 1.4 KB, a typical one of six messages 3.6 KB, one at the full history (50 turns) 12 KB.
 * So 128 MiB holds a realistic day of a single replica — some 30,000 conversations of six messages (110 MB) — or
 * about 95,000 of one message: at the 4,500 new conversations a second the service can take, 20 s of them, where
 * the old count of 10,000 held two seconds. Beyond such a day, keep conversations in Redis (REDIS_URL).
 *
 * The count only guards against a flood of conversations smaller than any real one: no conversation takes under
 * about 1.1 KB (its ids, times and two turns), so 128 MiB never holds more than about 120,000 and 200,000 never binds
 * first. Not more: lru-cache allocates its index for the count up front (1,000,000 would take 42 MB and 85 ms at
 * start, outside the byte bound; 200,000 take 5 MB). Raising CONVERSATION_MAX_BYTES far, raise this with it.
 */
const DEFAULT_CONVERSATION_MAX_BYTES = 134_217_728
const MIN_EXIFTOOL_MEMORY_LIMIT_MB = 128
const DEFAULT_CONVERSATION_MAX = 200_000

/**
 * The environment the service reads at start-up. Each variable's `description` is its documentation:
 * `npm run docs:config` writes docs/configuration.md from this schema, and a test fails when the two differ.
 */
export const EnvSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development', description: 'With `production`, the service refuses to start without `API_KEYS` or `API_KEYS_FILE`; otherwise it generates one development key and logs it once.' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'Listen port.' }),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0', description: 'Listen address.' }),
  WORKERS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 1,
    description: 'Processes serving the API. Above 1 the process started becomes a node:cluster primary that forks this many workers onto the one port (docs/deployment.md, "Two process models"); needs `REDIS_URL`.'
  }),
  API_KEYS: Type.Optional(Type.String({ description: 'Comma-separated API keys. Default: none (see `NODE_ENV`).' })),
  API_KEYS_FILE: Type.Optional(Type.String({ minLength: 1, description: 'A file with one API key per line (a container secret); combined with `API_KEYS`. Unreadable, or without a key, stops start-up.' })),
  LOG_LEVEL: Type.String({ default: 'info', description: 'pino level: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`.' }),
  MAX_IMAGE_BYTES: Type.Integer({
    minimum: 1,
    maximum: 1024 * 1024 * 1024,
    default: 26_214_400,
    description: 'Largest image sent as a JSON data URI (25 MiB); the JSON body may be what that image needs as base64, plus 4 KiB.'
  }),
  MAX_UPLOAD_BYTES: Type.Integer({
    minimum: 1,
    maximum: 16 * 1024 * 1024 * 1024,
    default: 209_715_200,
    description: 'Largest image sent as a multipart file (200 MiB: camera raw files are large). It streams to disk, so memory stays bounded; the gateway\'s `CLIENT_MAX_BODY_SIZE` must allow it.'
  }),
  C2PA_TRUST_ANCHORS: Type.Optional(Type.String({
    minLength: 1,
    description: 'A PEM file of root (or intermediate) certificates: a Content Credentials signer, or time-stamp authority, chaining to one is `trusted`. Default: none, so no signer is trusted. Unreadable, or without a certificate, stops start-up.'
  })),
  C2PA_WORKERS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 1,
    description: 'Worker threads validating C2PA manifests (only files carrying one reach them). A thread starts with the first such file and ends after a minute without one.'
  }),
  C2PA_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'Per-file limit for validating a manifest; past it the thread is ended and the request gets 503 `EXTRACTION_TIMEOUT` with `Retry-After`.'
  }),
  C2PA_MAX_BYTES: Type.Integer({
    minimum: 0,
    default: DEFAULT_MAX_VALIDATED_BYTES,
    description: 'Largest file whose C2PA manifest is validated (48 MiB): c2pa-rs holds about four and a half times the file in memory while it validates. A larger file\'s Content Credentials are reported with `integrity` `not_checked` and the claim generator ExifTool reads.'
  }),
  EXIFTOOL_PROCS: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 64,
    description: 'ExifTool processes in the pool of each worker process. Default: the CPU count ÷ `WORKERS`, rounded, at least 1 (one per core for the machine).'
  })),
  EXIFTOOL_TASK_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'Time an ExifTool process may spend on one read without progress: past it the process is taken as hung (the pool is at fault, not the image), replaced, and the read tried once more; then 503 `EXTRACTION_TIMEOUT` with `Retry-After`. On Linux with `EXIFTOOL_READ_CPU_MS` set, a process that spends CPU is making progress, and its CPU time is what bounds it; elsewhere this is a plain per-read limit.'
  }),
  EXIFTOOL_MAX_QUEUE: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 256,
    description: 'Images waiting for a free ExifTool process; beyond it requests get 503 `EXTRACTOR_BUSY` with `Retry-After`. One API key may hold `EXIFTOOL_KEY_SHARE` of it.'
  }),
  EXIFTOOL_READ_CPU_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: DEFAULT_READ_CPU_MS,
    description: 'CPU time one ExifTool read may take (the summary, the maker-note and the `?full=true` reads alike); a file that needs more is refused with 415 `IMAGE_TOO_COMPLEX`, its process killed and replaced. `0`: no limit. Linux only (docs/metadata-limits.md).'
  }),
  EXIFTOOL_MEMORY_LIMIT_MB: Type.Integer({
    minimum: 0,
    maximum: 1_048_576,
    default: DEFAULT_MEMORY_LIMIT_BYTES / 1024 / 1024,
    description: 'Address space of each ExifTool process, in MiB (`RLIMIT_AS`); a file that needs more is refused with 415 `IMAGE_TOO_COMPLEX` and its process replaced. `0`: no limit; else at least 128. Linux only (docs/metadata-limits.md).'
  }),
  EXIFTOOL_KEY_SHARE: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    default: DEFAULT_CLIENT_SHARE,
    description: 'The share of the ExifTool processes, and of `EXIFTOOL_MAX_QUEUE`, that the images of one API key may hold at once (at least one process): one key\'s slow files leave the other processes to other keys. `1`: no per-key limit (one client).'
  }),
  EXIFTOOL_REFUSED_TTL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 31_536_000,
    default: DEFAULT_REFUSED_TTL_MS / 1000,
    description: 'How long the SHA-256 of a file refused for its CPU time, its memory or an ExifTool crash is remembered (the last 10,000 such files, per worker process), so that a resend is refused at once without ExifTool. `0`: not remembered.'
  }),
  TMPDIR: Type.Optional(Type.String({ minLength: 1, description: 'Where the service makes its private (0700) scratch directory for uploads. Default: the operating system\'s.' })),
  DOMAIN_PACK: Type.Optional(Type.String({
    minLength: 1,
    description: 'The chat domain pack: a directory (`responses.yaml` + `nlu/`) or one YAML or JSON file, checked at start-up (an invalid one stops the service, naming the file and place). Default: `domain/`.'
  })),
  DOMAIN_FILE: Type.Optional(Type.String({ description: 'The old name of `DOMAIN_PACK`: set, it stops start-up saying so.' })),
  MODEL_CACHE_DIR: Type.Optional(Type.String({
    description: 'Where trained chat models are cached, keyed by what trained them (`npm run train`, run by `npm ci`, fills it). Default: `node_modules/.cache/chat-metadata-api`. Empty: no cache, train at every start.'
  })),
  SUPPORT_BASE_URL: Type.String({
    pattern: '^https?://[^\\s/]+',
    default: 'https://shop.example.com',
    description: '`{base}` of every link in chat replies (`http(s)://…`; a trailing `/` is dropped).'
  }),
  REDIS_URL: Type.Optional(Type.String({
    pattern: '^rediss?://',
    description: '`redis://…` or `rediss://…`: conversations and rate-limit counts in Redis, shared by replicas and kept across restarts. Default: none, in memory. A Redis that cannot be reached at start-up stops the service.'
  })),
  REDIS_KEY_PREFIX: Type.String({
    default: 'chat-metadata-api:',
    description: 'Prefix of the service\'s Redis keys: `<prefix>conversation:<id>` (the conversation without its history), `<prefix>conversation:<id>:turns` (its turns) and `<prefix>conversation:<id>:version` (how many times it was stored, which makes its messages apply one at a time), all with the conversation\'s TTL.'
  }),
  CONVERSATION_TTL_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 31_536_000,
    default: 86_400,
    description: 'A conversation is forgotten this long after its last message (both stores).'
  }),
  CONVERSATION_MAX: Type.Integer({
    minimum: 1,
    maximum: 10_000_000,
    default: DEFAULT_CONVERSATION_MAX,
    description: 'In-memory store: conversations kept, of all API keys together. When it is full, the API key holding the most loses its least recently used one. It only guards against floods of tiny conversations: `CONVERSATION_MAX_BYTES` is the real limit.'
  }),
  CONVERSATION_MAX_BYTES: Type.Integer({
    minimum: 65_536,
    maximum: 64 * 1024 * 1024 * 1024,
    default: DEFAULT_CONVERSATION_MAX_BYTES,
    description: 'In-memory store: the conversations\' total size (128 MiB), of all API keys together, counted from their text plus a fixed cost per turn and fact. When it is full, the API key holding the most loses its least recently used conversations: a key holding no more than its share (this divided by the keys holding conversations) never loses one to another key\'s traffic. Beyond a busy day of one replica, use Redis.'
  }),
  CONVERSATION_HISTORY: Type.Integer({
    minimum: 2,
    maximum: 1000,
    default: 50,
    description: 'Turns kept per conversation (a customer message and a reply are two turns).'
  }),
  CONVERSATION_MAX_FACTS: Type.Integer({
    minimum: 10,
    maximum: 10_000,
    default: DEFAULT_FACT_LIMITS.count,
    description: 'Facts one conversation remembers at most: request `context` members and what the customer wrote (order number, e-mail, purchase date). Beyond it the least recently given are forgotten; the request is never refused for it (docs/chat-state.md).'
  }),
  CONVERSATION_MAX_FACT_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 16 * 1024 * 1024,
    default: DEFAULT_FACT_LIMITS.bytes,
    description: 'Size of the facts one conversation remembers at most (64 KiB), counted as the characters of each name and value and 6 for their JSON (a character is a byte for Latin text). Beyond it the least recently given are forgotten; the request is never refused for it.'
  }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description: 'Which proxies\' `X-Forwarded-For`/`-Proto` and `X-Request-Id` to believe: `false`, `true` (every hop), a number of hops (`1` behind the compose gateway), or addresses and CIDR ranges (`10.0.0.0/8,::1`). The request id is the peer\'s `X-Request-Id` only when the peer is trusted; otherwise it is generated, and the client\'s value logged as `clientRequestId`.'
  }),
  RATE_LIMIT_CHAT_PER_MIN: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 600,
    description: 'Requests per minute per API key on each chat route (counted in Redis when `REDIS_URL` is set, so shared by replicas); `0`: no limit.'
  }),
  RATE_LIMIT_METADATA_PER_MIN: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 120,
    description: 'The same for the metadata routes.'
  }),
  SHUTDOWN_GRACE_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: 10_000,
    description: 'On SIGTERM or SIGINT, how long requests in flight may take before the process exits anyway.'
  }),
  REDIS_TIMEOUT_MS: Type.Integer({
    minimum: 10,
    maximum: 60_000,
    default: 1000,
    description: 'A Redis command not answered in this time fails: chat answers 503 `CONVERSATION_STORE_UNAVAILABLE` with `Retry-After` at once, and `/health/ready` says not ready.'
  }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    default: 1000,
    description: 'Over this mean event-loop delay the API answers 503 `OVERLOADED` with `Retry-After` and `/health/ready` says not ready (the probes and `/metrics` still answer); `0`: never.'
  }),
  REQUEST_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 3_600_000,
    default: 30_000,
    description: 'A request (headers and body) must arrive whole within this, else 408 `REQUEST_TIMEOUT` and the connection is closed.'
  }),
  HEADERS_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 600_000,
    default: 10_000,
    description: 'The headers must arrive within this (at most `REQUEST_TIMEOUT_MS`); a connection that sends nothing is closed after it.'
  }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({
    minimum: 1000,
    maximum: 600_000,
    default: 72_000,
    description: 'An idle keep-alive connection is closed after this (longer than the gateway\'s upstream keep-alive, so that the gateway closes first).'
  }),
  MAX_CONNECTIONS: Type.Integer({
    minimum: 0,
    maximum: 1_000_000,
    default: 1024,
    description: 'Open connections per process; more are closed at once. `0`: no cap.'
  }),
  PUBLIC_URL: Type.Optional(Type.String({
    pattern: '^https?://[^\\s/]+(/[^\\s]*)?$',
    description: 'Where clients reach the API (the gateway\'s URL), for the OpenAPI document\'s `servers`. Default: `/`, relative to where the document was fetched; never the request\'s `Host` header.'
  }))
})
type Env = Static<typeof EnvSchema>

export interface ChatConfig {
  /** The domain pack: a directory (responses.yaml + nlu/) or one YAML or JSON file; domain/ when unset. */
  domainPack?: string
  /** Where trained models are cached, keyed by what trained them; undefined: no cache. */
  modelCacheDir?: string
  /** `{base}` of the links in replies, without a trailing slash. */
  supportBaseUrl: string
  /** Conversations in Redis when set; in memory otherwise. */
  redisUrl?: string
  /** A Redis command not answered in this time fails (503 with Retry-After), instead of hanging the request. */
  redisTimeoutMs: number
  redisKeyPrefix: string
  /** A conversation is forgotten this long after its last message. */
  conversationTtlMs: number
  /** In-memory store: conversations kept, of all API keys (the key holding the most loses its least recently used). */
  maxConversations: number
  /**
   * In-memory store: their total size, as the store estimates it from their text and a cost per turn and fact
   * (src/chat/conversation-store.ts); the key holding the most loses its least recently used first.
   */
  maxConversationBytes: number
  /** Turns kept per conversation. */
  historyLimit: number
  /** Facts a conversation remembers, by count and size: the least recently given are forgotten first. */
  factLimits: FactLimits
}

/**
 * Which proxies' X-Forwarded-For to believe: none (false), every hop (true), this many hops, or these addresses and
 * CIDR ranges (Fastify's `trustProxy`).
 */
export type TrustProxy = boolean | number | string[]

/** How long connections may take, and how many there may be (slow clients must not hold the server). */
export interface ConnectionLimits {
  /** A request (headers and body) must arrive whole within this; else 408 and the connection is closed. */
  requestTimeoutMs: number
  /** The headers must arrive within this (a connection that sends nothing is closed after it too). */
  headersTimeoutMs: number
  /** An idle keep-alive connection is closed after this; above the gateway's own upstream keep-alive. */
  keepAliveTimeoutMs: number
  /** Connections beyond this are closed at once; 0: no cap. */
  maxConnections: number
}

/** Requests per minute per API key; 0: no limit. */
export interface RateLimits {
  chatPerMinute: number
  metadataPerMinute: number
}

/** What `buildApp` needs: everything but where to listen. */
export interface AppConfig {
  apiKeys: string[]
  logLevel: string
  trustProxy: TrustProxy
  rateLimits: RateLimits
  /** Over this mean event-loop delay the API answers 503 with Retry-After; 0: never. */
  maxEventLoopDelayMs: number
  connections: ConnectionLimits
  /** Where clients reach the API (the gateway's URL), for the OpenAPI document's `servers`. */
  publicUrl?: string
  /** Largest image sent as a JSON data URI. */
  maxImageBytes: number
  /** Largest image sent as a multipart file (streamed to disk, so it may be far larger). */
  maxUploadBytes: number
  exiftool: ExifToolConfig
  contentCredentials: ContentCredentialsConfig
  /** Where the private per-instance scratch directory for uploads is created. */
  tempRoot: string
  chat: ChatConfig
}

export interface ServerConfig extends AppConfig {
  port: number
  host: string
  /** Processes serving the API; above 1, a node:cluster primary forks them onto the one port (src/cluster.ts). */
  workers: number
  /** How long requests in flight may take to finish after SIGTERM/SIGINT before the process exits anyway. */
  shutdownGraceMs: number
  /** Set when no key was configured outside production: the server logs it once. */
  generatedDevKey?: string
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Reads and validates the environment; throws a ConfigError naming the variable at fault. */
export function loadConfig (environment: NodeJS.ProcessEnv = process.env): ServerConfig {
  let env: Env
  try {
    // env: false — read only `environment`, so a caller (or a test) decides exactly what the service sees.
    env = envSchema<Env>({ schema: EnvSchema, data: environment, env: false, dotenv: false })
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`)
  }
  if (env.DOMAIN_FILE !== undefined) {
    // Renamed when the pack became a directory: a deployment still setting it would silently get the default pack.
    throw new ConfigError('Invalid configuration: DOMAIN_FILE was renamed DOMAIN_PACK (a pack directory or one YAML/JSON file)')
  }
  if (!LOG_LEVELS.includes(env.LOG_LEVEL)) {
    throw new ConfigError(`Invalid configuration: env/LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)
  }
  if (env.WORKERS > 1 && env.REDIS_URL === undefined) {
    // Each worker's memory is its own: a conversation's next message, landing on another worker, would be a 404, and
    // each worker would allow the whole rate limit.
    throw new ConfigError('Invalid configuration: WORKERS above 1 needs REDIS_URL, so that the workers share conversations and rate-limit counts')
  }

  if (env.EXIFTOOL_MEMORY_LIMIT_MB > 0 && env.EXIFTOOL_MEMORY_LIMIT_MB < MIN_EXIFTOOL_MEMORY_LIMIT_MB) {
    // ExifTool's perl needs tens of megabytes to start and to load the modules of some formats: less would refuse all.
    throw new ConfigError(`Invalid configuration: EXIFTOOL_MEMORY_LIMIT_MB must be 0 (no limit) or at least ${MIN_EXIFTOOL_MEMORY_LIMIT_MB}`)
  }
  const trustProxy = parseTrustProxy(env.TRUST_PROXY)
  const apiKeys = [...parseKeys(env.API_KEYS ?? ''), ...readKeysFile(env.API_KEYS_FILE)]
  let generatedDevKey: string | undefined
  if (apiKeys.length === 0) {
    if (env.NODE_ENV === 'production') {
      throw new ConfigError('Invalid configuration: API_KEYS or API_KEYS_FILE must provide at least one key when NODE_ENV=production')
    }
    generatedDevKey = `dev-${randomBytes(24).toString('base64url')}`
    apiKeys.push(generatedDevKey)
  }

  return {
    port: env.PORT,
    host: env.HOST,
    workers: env.WORKERS,
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
    apiKeys,
    logLevel: env.LOG_LEVEL,
    trustProxy,
    rateLimits: { chatPerMinute: env.RATE_LIMIT_CHAT_PER_MIN, metadataPerMinute: env.RATE_LIMIT_METADATA_PER_MIN },
    maxEventLoopDelayMs: env.MAX_EVENT_LOOP_DELAY_MS,
    connections: {
      requestTimeoutMs: env.REQUEST_TIMEOUT_MS,
      headersTimeoutMs: Math.min(env.HEADERS_TIMEOUT_MS, env.REQUEST_TIMEOUT_MS),
      keepAliveTimeoutMs: env.KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: env.MAX_CONNECTIONS
    },
    ...(env.PUBLIC_URL === undefined ? {} : { publicUrl: env.PUBLIC_URL.replace(/\/+$/, '') }),
    maxImageBytes: env.MAX_IMAGE_BYTES,
    maxUploadBytes: env.MAX_UPLOAD_BYTES,
    contentCredentials: {
      ...(env.C2PA_TRUST_ANCHORS === undefined ? {} : { trustAnchorsPem: readTrustAnchors(env.C2PA_TRUST_ANCHORS) }),
      workers: env.C2PA_WORKERS,
      timeoutMs: env.C2PA_TIMEOUT_MS,
      maxBytes: env.C2PA_MAX_BYTES
    },
    exiftool: {
      // One ExifTool process per core for the machine, whatever the number of workers sharing it.
      procs: env.EXIFTOOL_PROCS ?? Math.max(1, Math.round(availableParallelism() / env.WORKERS)),
      taskTimeoutMs: env.EXIFTOOL_TASK_TIMEOUT_MS,
      maxQueue: env.EXIFTOOL_MAX_QUEUE,
      readCpuMs: env.EXIFTOOL_READ_CPU_MS,
      memoryLimitBytes: env.EXIFTOOL_MEMORY_LIMIT_MB * 1024 * 1024,
      clientShare: env.EXIFTOOL_KEY_SHARE,
      refusedTtlMs: env.EXIFTOOL_REFUSED_TTL_SECONDS * 1000
    },
    tempRoot: env.TMPDIR ?? tmpdir(),
    chat: {
      ...(env.DOMAIN_PACK === undefined ? {} : { domainPack: env.DOMAIN_PACK }),
      // Unset: the project's cache directory; set but empty: no cache.
      ...(env.MODEL_CACHE_DIR === '' ? {} : { modelCacheDir: env.MODEL_CACHE_DIR ?? DEFAULT_MODEL_CACHE }),
      supportBaseUrl: env.SUPPORT_BASE_URL.replace(/\/+$/, ''),
      ...(env.REDIS_URL === undefined ? {} : { redisUrl: env.REDIS_URL }),
      redisTimeoutMs: env.REDIS_TIMEOUT_MS,
      redisKeyPrefix: env.REDIS_KEY_PREFIX,
      conversationTtlMs: env.CONVERSATION_TTL_SECONDS * 1000,
      maxConversations: env.CONVERSATION_MAX,
      maxConversationBytes: env.CONVERSATION_MAX_BYTES,
      historyLimit: env.CONVERSATION_HISTORY,
      factLimits: { count: env.CONVERSATION_MAX_FACTS, bytes: env.CONVERSATION_MAX_FACT_BYTES }
    },
    ...(generatedDevKey === undefined ? {} : { generatedDevKey })
  }
}

const CIDR = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[\da-f:]*:[\da-f:.]*)(?:\/\d{1,3})?$/i

function parseTrustProxy (text: string): TrustProxy {
  const value = text.trim().toLowerCase()
  if (value === 'true') return true
  if (value === 'false' || value === '') return false
  if (/^\d{1,2}$/.test(value)) return Number(value)
  const addresses = value.split(',').map((address) => address.trim()).filter((address) => address.length > 0)
  const wrong = addresses.find((address) => !CIDR.test(address) || isIP(address.split('/')[0]!) === 0)
  if (wrong !== undefined || addresses.length === 0) {
    throw new ConfigError('Invalid configuration: env/TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of IP addresses and CIDR ranges')
  }
  return addresses
}

function parseKeys (text: string): string[] {
  return text.split(/[,\n]/).map((key) => key.trim()).filter((key) => key.length > 0)
}

function readTrustAnchors (path: string): string {
  let pem: string
  try {
    pem = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`Invalid configuration: C2PA_TRUST_ANCHORS cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  try {
    parseTrustAnchors(pem)
  } catch (error) {
    throw new ConfigError(`Invalid configuration: C2PA_TRUST_ANCHORS must be a PEM file of certificates (${(error as Error).message})`)
  }
  return pem
}

function readKeysFile (path: string | undefined): string[] {
  if (path === undefined) return []
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new ConfigError(`Invalid configuration: API_KEYS_FILE cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  const keys = parseKeys(text)
  if (keys.length === 0) throw new ConfigError('Invalid configuration: API_KEYS_FILE contains no keys')
  return keys
}
