import Fastify, { type FastifyInstance } from 'fastify'
import type { AppConfig } from './config.ts'
import auth from '../plugins/auth.ts'
import chatAssistant from '../plugins/chat-assistant.ts'
import chatRoutes from '../plugins/chat.ts'
import conversationStore from '../plugins/conversation-store.ts'
import docs from '../plugins/docs.ts'
import errorEnvelope, { answerClientError, answerFrameworkError } from '../plugins/error-envelope.ts'
import contentCredentials from '../plugins/content-credentials.ts'
import exiftoolPool from '../plugins/exiftool.ts'
import health from '../plugins/health.ts'
import metadataRoutes from '../plugins/metadata.ts'
import metrics from '../plugins/metrics.ts'
import openapi from '../plugins/openapi.ts'
import overload from '../plugins/overload.ts'
import rateLimits from '../plugins/rate-limit.ts'
import securityHeaders, { HEADERS_WITHOUT_HOOKS } from '../plugins/security-headers.ts'
import requestId, { proxyTrust, redactCredentials, RequestLog, requestIdFrom } from '../plugins/request-log.ts'
import { compilersFactory } from '../plugins/validation.ts'

export interface BuildOptions {
  /** Where the JSON log lines go; standard output by default. */
  logStream?: { write: (line: string) => void }
}

/** The `/api` prefix some clients use is an alias of the canonical routes (and stays out of the OpenAPI document). */
const API_ALIAS_PREFIX = '/api/v1/'

/** The longest path parameter: a conversation id's maximum length. */
const MAX_PARAM_LENGTH = 128

/**
 * Builds the whole service without listening: each test makes its own instance with its own configuration.
 * Closing it ends the ExifTool pool, closes the Redis connection and removes the scratch directory.
 * Fails with a DomainPackError when the domain pack is invalid.
 */
export async function buildApp (config: AppConfig, options: BuildOptions = {}): Promise<FastifyInstance> {
  const { chat, connections } = config
  const trusts = proxyTrust(config.trustProxy)
  const app = Fastify({
    requestTimeout: connections.requestTimeoutMs,
    keepAliveTimeout: connections.keepAliveTimeoutMs,
    // Node checks the request and header timeouts this often (30 s by default, which would double them).
    http: { connectionsCheckingInterval: 1000, headersTimeout: connections.headersTimeoutMs },
    // Route parameters up to the longest the schemas allow (a conversation id is at most 128 characters).
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    frameworkErrors: (error, request, reply) => {
      // The router refuses a path that does not decode, or a parameter over MAX_PARAM_LENGTH, before any hook runs:
      // the headers the hooks would have set (the request id, no caching, no sniffing) come with the refusal.
      reply.headers({ ...HEADERS_WITHOUT_HOOKS, 'x-request-id': request.id })
      answerFrameworkError(error, reply, MAX_PARAM_LENGTH)
    },
    clientErrorHandler: (error, socket) => { answerClientError(error, socket, connections) },
    // One reading of TRUST_PROXY for the client address and the request id.
    trustProxy: config.trustProxy === false ? false : trusts,
    genReqId: requestIdFrom(trusts),
    logController: new RequestLog(),
    logger: {
      level: config.logLevel,
      formatters: { log: redactCredentials },
      ...(options.logStream === undefined ? {} : { stream: options.logStream })
    },
    rewriteUrl: (request) => {
      const url = request.url ?? '/'
      return url.startsWith(API_ALIAS_PREFIX) ? url.slice('/api'.length) : url
    },
    schemaController: { compilersFactory }
  })
  // Only the media types the routes declare are parsed, by the routes that declare them (plugins/chat.ts,
  // plugins/metadata.ts): anything else is a 415, and a request for no route is a 404 with its body left unread.
  app.removeAllContentTypeParsers()
  if (connections.maxConnections > 0) app.server.maxConnections = connections.maxConnections

  await app.register(requestId)
  await app.register(errorEnvelope)
  await app.register(overload, { maxEventLoopDelayMs: config.maxEventLoopDelayMs, apiPrefix: '/v1/' })
  await app.register(securityHeaders)
  await app.register(openapi, config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl })
  await app.register(docs)
  await app.register(exiftoolPool, config.exiftool)
  await app.register(contentCredentials, config.contentCredentials)
  await app.register(metrics, { exiftoolMaxProcesses: config.exiftool.procs })
  await app.register(conversationStore, {
    ...(chat.redisUrl === undefined ? {} : { redisUrl: chat.redisUrl }),
    redisKeyPrefix: chat.redisKeyPrefix,
    redisTimeoutMs: chat.redisTimeoutMs,
    ttlMs: chat.conversationTtlMs,
    maxConversations: chat.maxConversations,
    maxBytes: chat.maxConversationBytes
  })
  await app.register(chatAssistant, {
    ...(chat.domainPack === undefined ? {} : { domainPack: chat.domainPack }),
    ...(chat.modelCacheDir === undefined ? {} : { modelCacheDir: chat.modelCacheDir }),
    supportBaseUrl: chat.supportBaseUrl,
    historyLimit: chat.historyLimit,
    factLimits: chat.factLimits
  })
  await app.register(health)
  await app.register(async function v1 (api) {
    await api.register(auth, { apiKeys: config.apiKeys })
    await api.register(rateLimits, { keyPrefix: chat.redisKeyPrefix })
    await api.register(metadataRoutes, {
      maxImageBytes: config.maxImageBytes,
      maxUploadBytes: config.maxUploadBytes,
      tempRoot: config.tempRoot,
      rateLimit: config.rateLimits.metadataPerMinute
    })
    await api.register(chatRoutes, { rateLimit: config.rateLimits.chatPerMinute })
  }, { prefix: '/v1' })
  return app
}
