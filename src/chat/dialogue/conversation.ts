import type { IntentName, SupportIntent } from '../intents.ts'
import type { Slots } from './slots.ts'

export type Role = 'customer' | 'assistant'

export interface Turn {
  role: Role
  text: string
  /** The customer's intent as understood; on an assistant turn, the intent it answered. */
  intent: IntentName
  /** ISO 8601 UTC. */
  timestamp: string
  /** On an assistant turn: it routed the customer to a person. */
  handoff?: boolean
}

/** A value the conversation knows: from the request's context or from what the customer wrote. */
export type Fact = string | number | boolean

/** The active request: the last request the assistant acted on, which a short follow-up is read in the light of. */
export interface Topic {
  intent: SupportIntent
  /** The situation the customer described for it (a broken item, a late parcel). */
  situation?: string
  /** The answer given to the question asked in it, if one was: a value added later is answered with it again. */
  answer?: string
  /** A question about the shop answered while this request stays active ("what are your hours?"). */
  aside?: SupportIntent
  /** The answer given to that question. */
  asideAnswer?: string
}

/** Everything remembered about one conversation; stored as JSON. */
export interface Conversation {
  id: string
  /** Hash of the API key that started it: another key never sees it. */
  ownerKey: string
  userId: string
  createdAt: string
  updatedAt: string
  /** order_id, purchase_date, email, and any context member (customer_name…). */
  facts: Record<string, Fact>
  /** The active request; its order and dates are in `facts`. */
  topic?: Topic
  /** An intent waiting for the order number the assistant asked for. */
  pendingIntent?: SupportIntent
  /** The dialogue's other slots (situation, preference, account, what the assistant waits for…): small and bounded. */
  slots?: Slots
  /** Consecutive customer messages the assistant did not understand. */
  misunderstoodInARow: number
  /** The most recent turns, oldest first, at most the history limit. */
  turns: Turn[]
}
