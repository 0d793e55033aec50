import type { FastifyError, FastifyInstance } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { commonErrors, errorResponse } from '../schemas/error.ts'
import { CHAT_BODY_LIMIT, ChatReply, ChatRequest, ChatTranscript, ConversationParams, TranscriptQuery } from '../schemas/chat.ts'
import { ConversationStoreUnavailable } from '../src/chat/errors.ts'
import { ValidationError } from '../src/errors.ts'
import jsonBody from './json-body.ts'
import { perMinute } from './rate-limit.ts'

export interface ChatRoutesOptions {
  /** Requests per minute per API key on each chat route; 0: no limit. */
  rateLimit: number
}

/** POST /chat/send and GET /chat/conversations/:id: the support assistant (plugins/chat-assistant.ts) over HTTP. */
export default async function chatRoutes (fastify: FastifyInstance, options: ChatRoutesOptions): Promise<void> {
  const chat = fastify.chatService
  const config = { rateLimit: perMinute(options.rateLimit) }

  await fastify.register(jsonBody)
  fastify.setErrorHandler(function (error: FastifyError) {
    if (error instanceof ConversationStoreUnavailable) fastify.metrics.conversationStoreErrors.inc()
    throw clearerValidationError(error)
  })

  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  app.post('/chat/send', {
    bodyLimit: CHAT_BODY_LIMIT,
    config,
    schema: {
      operationId: 'sendChatMessage',
      tags: ['chat'],
      summary: 'Send a customer message to the support assistant and get its reply',
      description: 'Omit `conversation_id` to start a conversation; send the returned one back to continue it. ' +
        'A conversation belongs to the API key and `user_id` that started it.',
      body: Type.Ref(ChatRequest),
      response: {
        200: Type.Ref(ChatReply, { description: "The assistant's reply, with the conversation id to send back" }),
        400: errorResponse('Bad Request (VALIDATION_ERROR, INVALID_JSON): the body is not valid JSON, or breaks the schema; the message names the field and the rule'),
        404: errorResponse('Not Found (CONVERSATION_NOT_FOUND): the conversation_id is unknown, has expired, or belongs to another API key or user_id'),
        409: errorResponse('Conflict (CONVERSATION_BUSY): other messages to the conversation kept being answered at the same time, and this one was not applied; send it again after the Retry-After delay'),
        413: errorResponse(`Payload Too Large (BODY_TOO_LARGE): the body is larger than ${CHAT_BODY_LIMIT} bytes`),
        415: errorResponse('Unsupported Media Type (UNSUPPORTED_CONTENT_TYPE): the body is not application/json'),
        ...commonErrors
      }
    }
  }, async (request) => {
    const body = request.body as ChatRequest
    const sent = await chat.send({
      owner: request.apiKeyId,
      userId: body.user_id,
      message: body.message,
      ...(body.context === undefined ? {} : { context: body.context }),
      ...(body.conversation_id === undefined ? {} : { conversationId: body.conversation_id })
    })
    fastify.metrics.chatReplies.inc({ intent: sent.intent })
    if (sent.handoff) fastify.metrics.chatHandoffs.inc()
    // Never the message or the context: they are the customer's words and data.
    request.logFields = { conversationId: sent.conversationId, intent: sent.intent, handoff: sent.handoff, ...(sent.answer === undefined ? {} : { answer: sent.answer }) }
    return {
      reply: sent.reply,
      conversation_id: sent.conversationId,
      timestamp: sent.timestamp,
      intent: sent.intent,
      ...(sent.answer === undefined ? {} : { answer: sent.answer }),
      confidence: sent.confidence,
      links: sent.links.map(({ label, url }) => ({ label, url })),
      handoff: sent.handoff
    }
  })

  app.get('/chat/conversations/:conversation_id', {
    config,
    schema: {
      operationId: 'getChatTranscript',
      tags: ['chat'],
      summary: 'The transcript of a conversation, for the person who takes it over',
      description: 'Only for the API key and `user_id` that started the conversation: any other pair gets the same 404 ' +
        'as a conversation that does not exist, so one customer\'s transcript is never read under another\'s id.',
      params: ConversationParams,
      querystring: TranscriptQuery,
      response: {
        200: Type.Ref(ChatTranscript, { description: 'The transcript, oldest turn first' }),
        400: errorResponse('Bad Request (VALIDATION_ERROR): no user_id, or a conversation id or user_id that is empty or longer than 128 characters'),
        404: errorResponse('Not Found (CONVERSATION_NOT_FOUND): the conversation is unknown, has expired, or was started with another API key or user_id'),
        ...commonErrors
      }
    }
  }, async (request) => {
    const conversation = await chat.transcript(request.params.conversation_id, request.apiKeyId, request.query.user_id)
    return {
      conversation_id: conversation.id,
      user_id: conversation.userId,
      created_at: conversation.createdAt,
      updated_at: conversation.updatedAt,
      handoff: conversation.turns.at(-1)?.handoff === true,
      turns: conversation.turns.map(({ role, text, intent, timestamp }) => ({ role, text, intent, timestamp }))
    }
  })
}

/** Validation messages that say the rule in words where ajv's would quote a pattern or a format name. */
function clearerValidationError (error: FastifyError): Error {
  const issue = error.validation?.[0]
  if (issue === undefined) return error
  if (issue.instancePath === '/user_id' && (issue.keyword === 'pattern' || issue.keyword === 'not')) {
    return new ValidationError(`${error.validationContext ?? 'body'}/user_id must contain a visible character, and no control character (such as NUL or a line break)`)
  }
  if (error.validationContext !== 'body') return error
  if (issue.instancePath === '/message' && issue.keyword === 'pattern') {
    return new ValidationError('body/message must not be blank')
  }
  const contextMember = error.validation?.find((candidate) => candidate.keyword === 'anyOf' && candidate.instancePath.startsWith('/context/'))
  if (contextMember !== undefined) {
    return new ValidationError(`body${contextMember.instancePath} must be a string, a number or a boolean`)
  }
  if (issue.instancePath === '/context/purchase_date' && (issue.keyword === 'format' || issue.keyword === 'pattern')) {
    return new ValidationError('body/context/purchase_date must be a real calendar date in the form YYYY-MM-DD')
  }
  return error
}
