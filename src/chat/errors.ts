import { kind, ServiceError } from '../errors.ts'

/** Unknown, expired, or another key's or user's: the same failure, so that none can be told apart. */
export const ConversationNotFound = kind('CONVERSATION_NOT_FOUND', 'Conversation not found')

/** The conversation store cannot answer (Redis is away). The message says what failed, for the log; the cause why. */
export class ConversationStoreUnavailable extends ServiceError {
  constructor (message: string, options?: ErrorOptions) {
    super('CONVERSATION_STORE_UNAVAILABLE', message, { ...options, clientMessage: 'Conversations are unavailable; retry shortly' })
  }
}
