import { createHash, randomUUID } from 'node:crypto'
import { ConversationNotFoundError } from '../errors.ts'
import type { AssistantReply, RequestContext, SupportAssistant } from './assistant.ts'
import type { Conversation } from './conversation.ts'
import type { ConversationStore } from './conversation-store.ts'

export interface ChatServiceOptions {
  /** Turns kept per conversation; older ones are dropped. */
  historyLimit: number
  now?: () => Date
}

export interface SendMessage {
  /** The API key the request authenticated with; only its hash is stored. */
  apiKey: string
  userId: string
  message: string
  context?: RequestContext
  conversationId?: string
}

export interface SentReply extends AssistantReply {
  conversationId: string
  timestamp: string
}

/** One message in, one reply out: loads the conversation, lets the assistant answer, stores what changed. */
export class ChatService {
  readonly #assistant: SupportAssistant
  readonly #store: ConversationStore
  readonly #historyLimit: number
  readonly #now: () => Date

  constructor (assistant: SupportAssistant, store: ConversationStore, options: ChatServiceOptions) {
    this.#assistant = assistant
    this.#store = store
    this.#historyLimit = options.historyLimit
    this.#now = options.now ?? (() => new Date())
  }

  async send (input: SendMessage): Promise<SentReply> {
    const now = this.#now()
    const timestamp = now.toISOString()
    const ownerKey = keyHash(input.apiKey)
    const conversation = input.conversationId === undefined
      ? newConversation(ownerKey, input.userId, timestamp)
      : await this.#owned(input.conversationId, ownerKey, input.userId)

    const answer = this.#assistant.respond(conversation, input.message, input.context ?? {}, now)
    conversation.turns.push(
      { role: 'customer', text: input.message, intent: answer.intent, timestamp },
      { role: 'assistant', text: answer.reply, intent: answer.intent, timestamp, handoff: answer.handoff }
    )
    conversation.turns.splice(0, Math.max(0, conversation.turns.length - this.#historyLimit))
    conversation.updatedAt = timestamp
    await this.#store.save(conversation)
    return { ...answer, conversationId: conversation.id, timestamp }
  }

  /** The conversation, if it exists and was started with this API key. */
  async transcript (conversationId: string, apiKey: string): Promise<Conversation> {
    const conversation = await this.#store.load(conversationId)
    if (conversation === undefined || conversation.ownerKey !== keyHash(apiKey)) throw new ConversationNotFoundError()
    return conversation
  }

  /** Unknown, expired, another key's or another user's conversation: the same 404, so none can be told apart. */
  async #owned (conversationId: string, ownerKey: string, userId: string): Promise<Conversation> {
    const conversation = await this.#store.load(conversationId)
    if (conversation === undefined || conversation.ownerKey !== ownerKey || conversation.userId !== userId) {
      throw new ConversationNotFoundError()
    }
    return conversation
  }
}

function newConversation (ownerKey: string, userId: string, timestamp: string): Conversation {
  return { id: randomUUID(), ownerKey, userId, createdAt: timestamp, updatedAt: timestamp, facts: {}, misunderstoodInARow: 0, turns: [] }
}

/** Conversations are tied to the key's hash, never to the key itself. */
function keyHash (apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('base64url').slice(0, 22)
}
