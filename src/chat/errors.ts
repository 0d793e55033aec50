import { kind, ServiceError } from '../errors.ts'

/** Unknown, expired, or another key's or user's: the same failure, so that none can be told apart. */
export const ConversationNotFound = kind('CONVERSATION_NOT_FOUND', 'Conversation not found')

/** The conversation store cannot answer (Redis is away). The message says what failed, for the log; the cause why. */
export class ConversationStoreUnavailable extends ServiceError {
  constructor (message: string, options?: ErrorOptions) {
    super('CONVERSATION_STORE_UNAVAILABLE', message, { ...options, clientMessage: 'Conversations are unavailable; retry shortly' })
  }
}

/**
 * Other messages to the conversation kept being applied between this one's read and write (other replicas): the
 * message was not applied, and can be sent again.
 */
export class ConversationBusy extends ServiceError {
  constructor (message: string, options?: ErrorOptions) {
    super('CONVERSATION_BUSY', message, { ...options, clientMessage: 'Other messages to this conversation were being answered at the same time; send this one again after the Retry-After delay' })
  }
}
