import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { DEFAULT_FACT_LIMITS } from '../../src/chat/conversation-facts.ts'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import type { AppConfig, ChatConfig } from '../../src/config.ts'

export const API_KEY = 'test-key-5f1c2a'
export const AUTH = { authorization: `Bearer ${API_KEY}` }

/** The chat settings of test apps; the model cache is the project's, so the suite trains the default pack once. */
export const TEST_CHAT_CONFIG: ChatConfig = {
  supportBaseUrl: 'https://shop.example.com',
  modelCacheDir: DEFAULT_MODEL_CACHE,
  redisTimeoutMs: 1000,
  redisKeyPrefix: 'chat-metadata-api-test:',
  conversationTtlMs: 86_400_000,
  maxConversations: 1000,
  maxConversationBytes: 16 * 1024 * 1024,
  historyLimit: 50,
  factLimits: DEFAULT_FACT_LIMITS
}

export interface TestApp {
  app: FastifyInstance
  /** Root under which the app makes its private scratch directory. */
  tempRoot: string
  /** Every log line the app wrote, as text. */
  logs: string[]
  /** Files left in the app's scratch directory (should always be none between requests). */
  scratchFiles: () => Promise<string[]>
  close: () => Promise<void>
}

export async function createTestApp (overrides: Partial<AppConfig> = {}): Promise<TestApp> {
  const tempRoot = await mkdtemp(join(tmpdir(), 'chat-metadata-api-test-'))
  const logs: string[] = []
  const stream = new Writable({
    write (chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString())
      done()
    }
  })
  const config: AppConfig = {
    apiKeys: [API_KEY],
    logLevel: 'info',
    trustProxy: false,
    // Off unless a test turns it on: the suites send many requests with one key.
    rateLimits: { chatPerMinute: 0, metadataPerMinute: 0 },
    maxEventLoopDelayMs: 0,
    connections: { requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000, maxConnections: 1024 },
    maxImageBytes: 26_214_400,
    maxUploadBytes: 209_715_200,
    exiftool: { procs: 1, taskTimeoutMs: 10_000, maxQueue: 64 },
    contentCredentials: { workers: 1, timeoutMs: 10_000 },
    tempRoot,
    chat: TEST_CHAT_CONFIG,
    ...overrides
  }
  let app: FastifyInstance
  try {
    app = await buildApp(config, { logStream: stream })
    await app.ready()
  } catch (error) {
    // An app that fails to build (a test of a bad start-up) leaves nothing behind either.
    await rm(tempRoot, { recursive: true, force: true })
    throw error
  }
  return {
    app,
    tempRoot,
    logs,
    scratchFiles: async () => {
      const [scratch] = await readdir(tempRoot)
      return scratch === undefined ? [] : await readdir(join(tempRoot, scratch))
    },
    close: async () => {
      await app.close()
      await rm(tempRoot, { recursive: true, force: true })
    }
  }
}

/** Listens on a free loopback port; the base URL to call it with. */
export async function listen (testApp: TestApp): Promise<string> {
  await testApp.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(testApp.app.server.address() as AddressInfo).port}`
}

/** A multipart body built by the platform's own FormData encoder, ready for app.inject. */
export async function multipart (form: FormData): Promise<{ payload: Buffer, headers: Record<string, string> }> {
  const request = new Request('http://localhost/', { method: 'POST', body: form })
  return {
    payload: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type') ?? '' }
  }
}

export function imageForm (bytes: Buffer, filename = 'photo.jpg', field = 'image'): FormData {
  const form = new FormData()
  form.append(field, new Blob([bytes]), filename)
  return form
}
