import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { DEFAULT_MODEL_CACHE } from '../../src/chat/nlu/model-cache.ts'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { runProcess, type ProcessResult } from '../support/processes.ts'

const VARIABLES = [
  'NODE_ENV', 'PORT', 'HOST', 'WORKERS', 'API_KEYS', 'API_KEYS_FILE', 'LOG_LEVEL', 'MAX_IMAGE_BYTES',
  'EXIFTOOL_PROCS', 'EXIFTOOL_TASK_TIMEOUT_MS', 'EXIFTOOL_MAX_QUEUE', 'EXIFTOOL_READ_CPU_MS', 'EXIFTOOL_MEMORY_LIMIT_MB',
  'EXIFTOOL_KEY_SHARE', 'EXIFTOOL_REFUSED_TTL_SECONDS', 'TMPDIR', 'REDIS_URL'
]
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** A self-signed certificate (made once with openssl for this test; it signs nothing). */
const TEST_CERTIFICATE_PEM = `-----BEGIN CERTIFICATE-----
MIIBkTCCATegAwIBAgIUX5oxRvnCCYvUNQI7kKyYdnLuKf0wCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSQ29uZmlnIFRlc3QgQW5jaG9yMCAXDTI2MTEyMjA1NTMyOVoY
DzIxMjYxMDI5MDU1MzI5WjAdMRswGQYDVQQDDBJDb25maWcgVGVzdCBBbmNob3Iw
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAASOedLswwe0hRNvZemMYhH5gJ7LEDQ8
AvP6aa2eoQcLPirFelR9pQGSELck7zuKl5OrUXEOxvfFnqNa4eAIwJHpo1MwUTAd
BgNVHQ4EFgQUfG0EZSRcXW0uvDAhHL015oRQvTQwHwYDVR0jBBgwFoAUfG0EZSRc
XW0uvDAhHL015oRQvTQwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBF
AiEA/ZOpU0SWBifErdPsr9z4ZqWB7RedeU46sYmp+n1eLgwCIH+YtJIa2lYJbSRr
L5toK/Ie0PdvDTN8pwG+pab2DTG2
-----END CERTIFICATE-----
`

/** The machine's core count as the configuration sees it: the real one unless a test sets another. */
const cores = vi.hoisted(() => ({ count: undefined as number | undefined }))
vi.mock('node:os', async (importOriginal) => {
  const os = await importOriginal<typeof import('node:os')>()
  return { ...os, availableParallelism: () => cores.count ?? os.availableParallelism() }
})

let dir: string

beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-config-')) })
afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

beforeEach(() => {
  // loadConfig also reads process.env underneath the object it is given (env-schema merges it in), so the
  // runner's own environment (vitest sets NODE_ENV=test, a shell may set PORT) is cleared for these tests.
  for (const name of VARIABLES) vi.stubEnv(name, undefined)
})
afterEach(() => {
  vi.unstubAllEnvs()
  cores.count = undefined
})

/** The error loadConfig throws for `env`; fails the test when it throws nothing or something else. */
function configError (env: Record<string, string>): ConfigError {
  try {
    loadConfig(env)
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return error as ConfigError
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`)
}

/** Matches the variable's name as a whole word, so API_KEYS is not found inside API_KEYS_FILE. */
function naming (variable: string): RegExp {
  return new RegExp(`(^|[^A-Z_])${variable}([^A-Z_]|$)`)
}

async function keysFile (name: string, text: string): Promise<string> {
  const path = join(dir, name)
  await writeFile(path, text)
  return path
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    expect(loadConfig({ API_KEYS: 'key-1' })).toStrictEqual({
      port: 3000,
      host: '0.0.0.0',
      workers: 1,
      shutdownGraceMs: 10_000,
      apiKeys: ['key-1'],
      logLevel: 'info',
      trustProxy: false,
      rateLimits: { chatPerMinute: 600, metadataPerMinute: 120 },
      maxEventLoopDelayMs: 1000,
      connections: { requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 72_000, maxConnections: 1024 },
      maxImageBytes: 26_214_400,
      maxUploadBytes: 209_715_200,
      contentCredentials: { workers: 1, timeoutMs: 10_000, maxBytes: 48 * 1024 * 1024 },
      exiftool: {
        procs: availableParallelism(),
        taskTimeoutMs: 10_000,
        maxQueue: 256,
        readCpuMs: 2000,
        memoryLimitBytes: 512 * 1024 * 1024,
        clientShare: 0.5,
        refusedTtlMs: 3_600_000
      },
      tempRoot: tmpdir(),
      chat: {
        modelCacheDir: DEFAULT_MODEL_CACHE,
        supportBaseUrl: 'https://shop.example.com',
        redisTimeoutMs: 1000,
        redisKeyPrefix: 'chat-metadata-api:',
        conversationTtlMs: 86_400_000,
        maxConversations: 200_000,
        maxConversationBytes: 134_217_728,
        historyLimit: 50,
        factLimits: { count: 100, bytes: 65_536 }
      }
    })
  })

  it.each([
    ['true', true],
    ['FALSE', false],
    ['2', 2],
    ['10.0.0.0/8, 172.16.0.0/12,::1', ['10.0.0.0/8', '172.16.0.0/12', '::1']],
    ['192.168.1.4', ['192.168.1.4']]
  ])('reads TRUST_PROXY=%j', (value, trustProxy) => {
    expect(loadConfig({ API_KEYS: 'key-1', TRUST_PROXY: value }).trustProxy).toEqual(trustProxy)
  })

  it('an empty MODEL_CACHE_DIR turns the model cache off', () => {
    expect(loadConfig({ API_KEYS: 'key-1', MODEL_CACHE_DIR: '' }).chat).not.toHaveProperty('modelCacheDir')
  })

  it('reads every variable', async () => {
    const anchors = await keysFile('anchors.pem', TEST_CERTIFICATE_PEM)
    expect(loadConfig({
      NODE_ENV: 'production',
      PORT: '8080',
      HOST: '127.0.0.1',
      WORKERS: '2',
      API_KEYS: 'key-1',
      LOG_LEVEL: 'debug',
      MAX_IMAGE_BYTES: '1048576',
      MAX_UPLOAD_BYTES: '524288000',
      C2PA_TRUST_ANCHORS: anchors,
      C2PA_WORKERS: '2',
      C2PA_TIMEOUT_MS: '3000',
      C2PA_MAX_BYTES: '1048576',
      EXIFTOOL_PROCS: '3',
      EXIFTOOL_TASK_TIMEOUT_MS: '2500',
      EXIFTOOL_MAX_QUEUE: '32',
      EXIFTOOL_READ_CPU_MS: '1500',
      EXIFTOOL_MEMORY_LIMIT_MB: '256',
      EXIFTOOL_KEY_SHARE: '0.25',
      EXIFTOOL_REFUSED_TTL_SECONDS: '600',
      TMPDIR: '/var/tmp',
      DOMAIN_PACK: '/etc/shop/domain',
      MODEL_CACHE_DIR: '/var/cache/chat',
      SUPPORT_BASE_URL: 'https://help.example.org/',
      REDIS_URL: 'redis://cache:6379/2',
      REDIS_KEY_PREFIX: 'shop:',
      CONVERSATION_TTL_SECONDS: '3600',
      CONVERSATION_MAX: '500',
      CONVERSATION_MAX_BYTES: '1048576',
      CONVERSATION_HISTORY: '20',
      CONVERSATION_MAX_FACTS: '40',
      CONVERSATION_MAX_FACT_BYTES: '8192',
      TRUST_PROXY: '1',
      RATE_LIMIT_CHAT_PER_MIN: '30',
      RATE_LIMIT_METADATA_PER_MIN: '0',
      SHUTDOWN_GRACE_MS: '25000',
      REDIS_TIMEOUT_MS: '250',
      MAX_EVENT_LOOP_DELAY_MS: '500',
      REQUEST_TIMEOUT_MS: '5000',
      HEADERS_TIMEOUT_MS: '8000',
      KEEP_ALIVE_TIMEOUT_MS: '61000',
      MAX_CONNECTIONS: '200'
    })).toStrictEqual({
      port: 8080,
      host: '127.0.0.1',
      workers: 2,
      shutdownGraceMs: 25_000,
      apiKeys: ['key-1'],
      logLevel: 'debug',
      trustProxy: 1,
      rateLimits: { chatPerMinute: 30, metadataPerMinute: 0 },
      maxEventLoopDelayMs: 500,
      // The headers cannot be given longer than the whole request.
      connections: { requestTimeoutMs: 5000, headersTimeoutMs: 5000, keepAliveTimeoutMs: 61_000, maxConnections: 200 },
      maxImageBytes: 1_048_576,
      maxUploadBytes: 524_288_000,
      contentCredentials: { trustAnchorsPem: TEST_CERTIFICATE_PEM, workers: 2, timeoutMs: 3000, maxBytes: 1048576 },
      exiftool: {
        procs: 3,
        taskTimeoutMs: 2500,
        maxQueue: 32,
        readCpuMs: 1500,
        memoryLimitBytes: 256 * 1024 * 1024,
        clientShare: 0.25,
        refusedTtlMs: 600_000
      },
      tempRoot: '/var/tmp',
      chat: {
        domainPack: '/etc/shop/domain',
        modelCacheDir: '/var/cache/chat',
        supportBaseUrl: 'https://help.example.org',
        redisUrl: 'redis://cache:6379/2',
        redisTimeoutMs: 250,
        redisKeyPrefix: 'shop:',
        conversationTtlMs: 3_600_000,
        maxConversations: 500,
        maxConversationBytes: 1_048_576,
        historyLimit: 20,
        factLimits: { count: 40, bytes: 8192 }
      }
    })
  })

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['PORT', ''],
    ['HOST', ''],
    ['WORKERS', '0'],
    ['WORKERS', '65'],
    ['WORKERS', 'two'],
    ['LOG_LEVEL', 'loud'],
    ['MAX_IMAGE_BYTES', '0'],
    ['MAX_IMAGE_BYTES', 'lots'],
    ['MAX_UPLOAD_BYTES', '0'],
    ['REQUEST_TIMEOUT_MS', '10'],
    ['MAX_CONNECTIONS', '-1'],
    ['C2PA_TRUST_ANCHORS', ''],
    ['C2PA_WORKERS', '0'],
    ['C2PA_TIMEOUT_MS', '10'],
    ['EXIFTOOL_PROCS', '0'],
    ['EXIFTOOL_PROCS', 'many'],
    ['EXIFTOOL_TASK_TIMEOUT_MS', '0'],
    ['EXIFTOOL_TASK_TIMEOUT_MS', 'soon'],
    ['EXIFTOOL_MAX_QUEUE', '0'],
    ['EXIFTOOL_READ_CPU_MS', '-1'],
    ['EXIFTOOL_READ_CPU_MS', '600001'],
    ['EXIFTOOL_MEMORY_LIMIT_MB', '64'],
    ['EXIFTOOL_MEMORY_LIMIT_MB', 'lots'],
    ['EXIFTOOL_KEY_SHARE', '0'],
    ['EXIFTOOL_KEY_SHARE', '1.5'],
    ['EXIFTOOL_REFUSED_TTL_SECONDS', '-1'],
    ['TMPDIR', ''],
    ['API_KEYS_FILE', ''],
    ['DOMAIN_PACK', ''],
    ['DOMAIN_FILE', '/etc/shop/domain.yaml'],
    ['SUPPORT_BASE_URL', 'shop.example.com'],
    ['REDIS_URL', 'localhost:6379'],
    ['CONVERSATION_TTL_SECONDS', '10'],
    ['CONVERSATION_MAX', '0'],
    ['CONVERSATION_HISTORY', '1'],
    ['CONVERSATION_MAX_FACTS', '5'],
    ['CONVERSATION_MAX_FACT_BYTES', '100'],
    ['TRUST_PROXY', 'sometimes'],
    ['TRUST_PROXY', '10.0.0.0/8, not-an-address'],
    ['TRUST_PROXY', '999.1.1.1'],
    ['RATE_LIMIT_CHAT_PER_MIN', '-1'],
    ['RATE_LIMIT_METADATA_PER_MIN', 'lots'],
    ['SHUTDOWN_GRACE_MS', '-5'],
    ['REDIS_TIMEOUT_MS', '0'],
    ['MAX_EVENT_LOOP_DELAY_MS', 'soon']
  ])('rejects %s=%j with a message naming it', (variable, value) => {
    expect(configError({ API_KEYS: 'key-1', [variable]: value }).message).toMatch(naming(variable))
  })

  describe('WORKERS', () => {
    it('above 1 needs REDIS_URL, which the workers share conversations and rate limits through', () => {
      const message = configError({ API_KEYS: 'key-1', WORKERS: '2' }).message
      expect(message).toMatch(naming('WORKERS'))
      expect(message).toMatch(naming('REDIS_URL'))
      expect(loadConfig({ API_KEYS: 'key-1', WORKERS: '2', REDIS_URL: 'redis://cache:6379' }).workers).toBe(2)
    })

    it.each([
      [8, '1', 8],
      [8, '2', 4],
      [8, '3', 3],
      [2, '2', 1],
      [2, '3', 1],
      [4, '64', 1]
    ])('on %i cores with WORKERS=%s, gives each worker %i ExifTool processes unless EXIFTOOL_PROCS says otherwise', (count, workers, procs) => {
      cores.count = count
      const env = { API_KEYS: 'key-1', WORKERS: workers, REDIS_URL: 'redis://cache:6379' }
      expect(loadConfig(env).exiftool.procs).toBe(procs)
      expect(loadConfig({ ...env, EXIFTOOL_PROCS: '5' }).exiftool.procs).toBe(5)
    })
  })

  describe('API_KEYS', () => {
    it('splits on commas, trimming spaces and dropping empty entries', () => {
      const config = loadConfig({ API_KEYS: ' key-a , ,key-b,,  key-c ,' })
      expect(config.apiKeys).toEqual(['key-a', 'key-b', 'key-c'])
      expect(config.generatedDevKey).toBeUndefined()
    })

    it('keeps a key whole, whatever characters it has besides commas and spaces', () => {
      expect(loadConfig({ API_KEYS: 'a+b/c=d_e-f.g~h' }).apiKeys).toEqual(['a+b/c=d_e-f.g~h'])
    })
  })

  describe('API_KEYS_FILE', () => {
    it('reads one key per line, ignoring blank lines and CRLF endings', async () => {
      const path = await keysFile('keys.txt', 'file-key-1\r\n  file-key-2  \n\n\nfile-key-3\n')
      expect(loadConfig({ API_KEYS_FILE: path }).apiKeys).toEqual(['file-key-1', 'file-key-2', 'file-key-3'])
    })

    it('adds its keys to those of API_KEYS', async () => {
      const path = await keysFile('more-keys.txt', 'file-key-1\n')
      expect(loadConfig({ API_KEYS: 'env-key-1', API_KEYS_FILE: path }).apiKeys.sort()).toEqual(['env-key-1', 'file-key-1'])
    })

    it('satisfies production on its own', async () => {
      const path = await keysFile('production-keys.txt', 'file-key-1\n')
      const config = loadConfig({ NODE_ENV: 'production', API_KEYS_FILE: path })
      expect(config.apiKeys).toEqual(['file-key-1'])
      expect(config.generatedDevKey).toBeUndefined()
    })

    it.each([
      ['a missing file', () => join(dir, 'no-such-file.txt')],
      ['a directory', () => dir]
    ])('stops start-up naming API_KEYS_FILE for %s', (_case, path) => {
      expect(configError({ API_KEYS_FILE: path() }).message).toMatch(naming('API_KEYS_FILE'))
    })

    it('stops start-up naming API_KEYS_FILE when the file holds no key', async () => {
      const path = await keysFile('empty.txt', '\n  \n')
      expect(configError({ API_KEYS_FILE: path }).message).toMatch(naming('API_KEYS_FILE'))
    })
  })

  describe('C2PA_TRUST_ANCHORS', () => {
    it.each([
      ['a missing file', async () => join(dir, 'no-such-anchors.pem')],
      ['a file without a certificate', async () => await keysFile('not-pem.pem', 'hello\n')],
      ['a certificate that does not parse', async () => await keysFile('broken.pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')]
    ])('stops start-up naming C2PA_TRUST_ANCHORS for %s', async (_case, path) => {
      expect(configError({ API_KEYS: 'key-1', C2PA_TRUST_ANCHORS: await path() }).message).toMatch(naming('C2PA_TRUST_ANCHORS'))
    })
  })

  describe('without any key', () => {
    it.each([
      ['neither variable', {}],
      ['only separators in API_KEYS', { API_KEYS: ' , ,' }]
    ])('refuses to start under NODE_ENV=production with %s, naming API_KEYS', (_case, env) => {
      expect(configError({ NODE_ENV: 'production', ...env }).message).toMatch(naming('API_KEYS'))
    })

    it.each([
      ['NODE_ENV unset', {}],
      ['NODE_ENV=development', { NODE_ENV: 'development' }],
      ['NODE_ENV=test', { NODE_ENV: 'test' }]
    ])('generates one development key with %s, and accepts it', (_case, env) => {
      const config = loadConfig(env)
      expect(config.generatedDevKey).toEqual(expect.any(String))
      expect(config.apiKeys).toEqual([config.generatedDevKey])
      // Whoever reads it from the log can pass it back in API_KEYS unchanged.
      expect(loadConfig({ API_KEYS: config.generatedDevKey! }).apiKeys).toEqual([config.generatedDevKey])
    })

    it('generates a different key on every start', () => {
      expect(loadConfig({}).generatedDevKey).not.toBe(loadConfig({}).generatedDevKey)
    })
  })
})

/** Starts the server the way `npm start` does, with only the given environment; resolves when it exits. */
async function startServer (env: Record<string, string>): Promise<ProcessResult> {
  // A server that wrongly starts would listen forever; the kill turns that into a failed exit-code assertion.
  return await runProcess(process.execPath, ['src/server.ts'], { cwd: PROJECT_ROOT, env: { PATH: process.env['PATH'], ...env }, timeoutMs: 20_000 })
}

describe('start-up with a bad configuration', () => {
  it.each<{ name: string, env: Record<string, string>, variable: string }>([
    { name: 'PORT=abc', env: { PORT: 'abc', API_KEYS: 'key-1' }, variable: 'PORT' },
    { name: 'NODE_ENV=production without keys', env: { NODE_ENV: 'production' }, variable: 'API_KEYS' }
  ])('exits 1 on $name, with a one-line message naming $variable', async ({ env, variable }) => {
    const { exitCode, stdout, stderr } = await startServer(env)
    expect(exitCode).toBe(1)
    expect(stderr).toMatch(naming(variable))
    // A message for people, not a stack trace; and nothing was served or logged.
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stdout).toBe('')
  })

  it.each<{ name: string, env: Record<string, string>, message: RegExp }>([
    { name: 'a DOMAIN_PACK that does not exist', env: { DOMAIN_PACK: '/nonexistent/domain' }, message: /^Domain pack \/nonexistent\/domain cannot be read \(ENOENT\)$/ },
    { name: 'a REDIS_URL nothing answers at', env: { REDIS_URL: 'redis://:secret-pass@127.0.0.1:1' }, message: /^Start-up failed: Redis at 127\.0\.0\.1:1 cannot be reached: .*ECONNREFUSED/ }
  ])('exits 1 on $name, saying so in one line', async ({ env, message }) => {
    const { exitCode, stderr } = await startServer({ API_KEYS: 'key-1', LOG_LEVEL: 'silent', ...env })
    expect(exitCode).toBe(1)
    expect(stderr.trim()).toMatch(message)
    expect(stderr.trim().split('\n')).toHaveLength(1)
    expect(stderr).not.toContain('secret-pass')
  })
})
