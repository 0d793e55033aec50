import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { Type, type Static } from '@sinclair/typebox'
import { envSchema } from 'env-schema'
import { DEFAULT_MODEL_CACHE } from './chat/nlu/model-cache.ts'
import {
  DEFAULT_CLIENT_SHARE,
  DEFAULT_MEMORY_LIMIT_BYTES,
  DEFAULT_READ_CPU_MS,
  DEFAULT_REFUSED_TTL_MS,
  type ExifToolConfig
} from './metadata/extractor.ts'
import { parseTrustAnchors, type ContentCredentialsConfig } from './metadata/provenance/c2pa-verifier.ts'

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

/** The environment the service reads at start-up; README's configuration table mirrors this. */
const EnvSchema = Type.Object({
  NODE_ENV: Type.String({ default: 'development' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0' }),
  WORKERS: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
  API_KEYS: Type.Optional(Type.String()),
  API_KEYS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  LOG_LEVEL: Type.String({ default: 'info' }),
  MAX_IMAGE_BYTES: Type.Integer({ minimum: 1, maximum: 1024 * 1024 * 1024, default: 26_214_400 }),
  MAX_UPLOAD_BYTES: Type.Integer({ minimum: 1, maximum: 16 * 1024 * 1024 * 1024, default: 209_715_200 }),
  C2PA_TRUST_ANCHORS: Type.Optional(Type.String({ minLength: 1 })),
  C2PA_WORKERS: Type.Integer({ minimum: 1, maximum: 64, default: 1 }),
  C2PA_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 600_000, default: 10_000 }),
  EXIFTOOL_PROCS: Type.Optional(Type.Integer({
    minimum: 1,
    maximum: 64,
    description: 'ExifTool processes per worker process. Default: the machine\'s cores divided by WORKERS (at least 1).'
  })),
  EXIFTOOL_TASK_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    maximum: 600_000,
    default: 10_000,
    description: 'Wall-clock time an ExifTool process may spend on one read while within its CPU time (EXIFTOOL_READ_CPU_MS): ' +
      'past it the process is taken as hung or starved, replaced, and the read tried once more; then 503 EXTRACTION_TIMEOUT. ' +
      'Must be above EXIFTOOL_READ_CPU_MS.'
  }),
  EXIFTOOL_MAX_QUEUE: Type.Integer({
    minimum: 1,
    maximum: 100_000,
    default: 256,
    description: 'Images waiting for an ExifTool process; beyond it 503 EXTRACTOR_BUSY. One API key may hold EXIFTOOL_KEY_SHARE of it.'
  }),
  EXIFTOOL_READ_CPU_MS: Type.Integer({
    minimum: 0,
    maximum: 600_000,
    default: DEFAULT_READ_CPU_MS,
    description: 'CPU time one ExifTool read may take (summary, maker-note and ?full=true reads alike); a file that needs more ' +
      'is refused with 415 IMAGE_TOO_COMPLEX and its process replaced. 0: no limit. Linux only.'
  }),
  EXIFTOOL_MEMORY_LIMIT_MB: Type.Integer({
    minimum: 0,
    maximum: 1_048_576,
    default: DEFAULT_MEMORY_LIMIT_BYTES / 1024 / 1024,
    description: 'Address-space limit of each ExifTool process, in MiB (RLIMIT_AS); a file that needs more is refused with ' +
      '415 IMAGE_TOO_COMPLEX and its process replaced. 0: no limit; else at least 128. Linux only.'
  }),
  EXIFTOOL_KEY_SHARE: Type.Number({
    exclusiveMinimum: 0,
    maximum: 1,
    default: DEFAULT_CLIENT_SHARE,
    description: 'The share of the ExifTool processes (and of EXIFTOOL_MAX_QUEUE) the images of one API key may hold at once, ' +
      'at least one process: other keys\' images are not kept waiting by one key\'s slow files. 1: no per-key limit.'
  }),
  EXIFTOOL_REFUSED_TTL_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 31_536_000,
    default: DEFAULT_REFUSED_TTL_MS / 1000,
    description: 'How long the SHA-256 of a file refused for its CPU time, its memory or an ExifTool crash is remembered ' +
      '(the last 10,000 such files), so that a resend is refused at once without ExifTool. 0: not remembered.'
  }),
  TMPDIR: Type.Optional(Type.String({ minLength: 1 })),
  DOMAIN_PACK: Type.Optional(Type.String({ minLength: 1 })),
  DOMAIN_FILE: Type.Optional(Type.String()),
  MODEL_CACHE_DIR: Type.Optional(Type.String()),
  SUPPORT_BASE_URL: Type.String({ pattern: '^https?://[^\\s/]+', default: 'https://shop.example.com' }),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_KEY_PREFIX: Type.String({ default: 'chat-metadata-api:' }),
  CONVERSATION_TTL_SECONDS: Type.Integer({ minimum: 60, maximum: 31_536_000, default: 86_400 }),
  CONVERSATION_MAX: Type.Integer({ minimum: 1, maximum: 10_000_000, default: DEFAULT_CONVERSATION_MAX }),
  CONVERSATION_MAX_BYTES: Type.Integer({ minimum: 65_536, maximum: 64 * 1024 * 1024 * 1024, default: DEFAULT_CONVERSATION_MAX_BYTES }),
  CONVERSATION_HISTORY: Type.Integer({ minimum: 2, maximum: 1000, default: 50 }),
  TRUST_PROXY: Type.String({ default: 'false' }),
  RATE_LIMIT_CHAT_PER_MIN: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 600 }),
  RATE_LIMIT_METADATA_PER_MIN: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 120 }),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 10_000 }),
  REDIS_TIMEOUT_MS: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000 }),
  MAX_EVENT_LOOP_DELAY_MS: Type.Integer({ minimum: 0, maximum: 60_000, default: 1000 }),
  IDLE_GC_AFTER_MS: Type.Integer({ minimum: 0, maximum: 3_600_000, default: 1000 }),
  IDLE_GC_GROWTH_MB: Type.Integer({ minimum: 1, maximum: 65_536, default: 32 }),
  REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 3_600_000, default: 30_000 }),
  HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 10_000 }),
  KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 72_000 }),
  MAX_CONNECTIONS: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 1024 }),
  PUBLIC_URL: Type.Optional(Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$' }))
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
  /** In-memory store: conversations kept (least recently used dropped first). */
  maxConversations: number
  /**
   * In-memory store: their total size (least recently used dropped first), as the store estimates it from their text
   * and a cost per turn and fact (src/chat/conversation-store.ts).
   */
  maxConversationBytes: number
  /** Turns kept per conversation. */
  historyLimit: number
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
  /** Event-loop idle time after which memory a burst left behind is given back (with --expose-gc); 0: never. */
  idleGcAfterMs: number
  /** Growth of resident memory since the last idle collection that makes the next one worth its pause. */
  idleGcGrowthMb: number
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
  if (env.EXIFTOOL_READ_CPU_MS > 0 && env.EXIFTOOL_TASK_TIMEOUT_MS <= env.EXIFTOOL_READ_CPU_MS) {
    // The wall-clock timeout takes a read for hung only while its CPU time is within bounds: below the CPU limit, a
    // costly file would be blamed on the pool (503, then retried) instead of refused.
    throw new ConfigError('Invalid configuration: EXIFTOOL_TASK_TIMEOUT_MS must be above EXIFTOOL_READ_CPU_MS (several times it on a busy machine)')
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
    idleGcAfterMs: env.IDLE_GC_AFTER_MS,
    idleGcGrowthMb: env.IDLE_GC_GROWTH_MB,
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
      timeoutMs: env.C2PA_TIMEOUT_MS
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
      historyLimit: env.CONVERSATION_HISTORY
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
