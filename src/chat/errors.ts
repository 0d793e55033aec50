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
