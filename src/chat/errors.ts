/** Failures of the chat domain, by stable code; plugins/chat.ts says what each means over HTTP. */
export class ConversationNotFound extends Error {
  override name = 'ConversationNotFound'
  readonly code = 'CONVERSATION_NOT_FOUND'
}

/** The conversation store cannot answer (Redis is away); the cause says why. */
export class ConversationStoreUnavailable extends Error {
  override name = 'ConversationStoreUnavailable'
  readonly code = 'CONVERSATION_STORE_UNAVAILABLE'
}

/**
 * Other messages to the conversation kept being applied between this one's read and write (other replicas): the
 * message was not applied, and can be sent again.
 */
export class ConversationBusy extends Error {
  override name = 'ConversationBusy'
  readonly code = 'CONVERSATION_BUSY'
}
