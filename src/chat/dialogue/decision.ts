import type { AnswerRanking } from '../answers/selector.ts'
import type { DomainPack } from '../domain-pack/schema.ts'
import type { IntentName, SupportIntent } from '../intents.ts'
import type { Understanding } from '../nlu/understand.ts'
import type { Conversation, Fact, Topic } from './conversation.ts'
import type { MessageSlots, Slots } from './slots.ts'

/*
 * What the dialogue policy reads and what it decides: the state of the conversation, what the message says, and the
 * decision the chat service renders and stores.
 */

/** What the request adds to the conversation besides the message. */
export type RequestContext = Readonly<Record<string, Fact>>

/** What the conversation knows before the message; the policy reads it and never changes it. */
export type DialogueState = Pick<Conversation, 'facts' | 'topic' | 'pendingIntent' | 'misunderstoodInARow' | 'slots'> & {
  /** The intent the assistant answered last. */
  previousIntent?: IntentName
  /** What the customer wrote last: the same words again are a repeat, other words after the same reply a push. */
  previousMessage?: string
}

/** A clause of a message that makes several requests, read on its own. */
export interface ClauseReading {
  understanding: Understanding
  answers?: AnswerRanking
  /** It asks or asks for something, or says what went wrong (a statement of its own, not a detail of another). */
  asks: boolean
  /** It asks for something to be done ("can I cancel my order", "I'd like to…"), not only about it. */
  wants?: boolean
}

/** What else the message says, besides the intent model's understanding of it. */
export interface MessageReading {
  /** The message itself. */
  text?: string
  /** The answer selector's probabilities for the message. */
  answers?: AnswerRanking
  /** The slots it fills and the cues it carries. */
  slots?: MessageSlots
  /** When the message makes several requests: each clause's reading, in order. */
  clauses?: readonly ClauseReading[]
}

export type FallbackName = keyof DomainPack['fallback']

/**
 * Which templates answer: the intent's reply situations in order of preference (and a fallback when none of them is
 * usable), an answer's situations, or one of the pack's fallbacks.
 */
export type ReplyChoice =
  | { kind: 'intent', situations: readonly string[], otherwise?: FallbackName }
  | { kind: 'answer', id: string, situations: readonly string[] }
  | { kind: 'fallback', name: FallbackName }

/** A reply that follows the main one: the answer to another request of the message, or what comes next. */
export interface ReplyPart {
  intent: IntentName
  reply: ReplyChoice
}

/** What the assistant does with one message, and what the conversation knows afterwards. */
export interface Decision {
  intent: IntentName
  confidence: number
  reply: ReplyChoice
  /** What follows the reply, in order. */
  more: ReplyPart[]
  handoff: boolean
  /** The answer given (its id and the selector's probability), when the reply is one. */
  answer?: { id: string, confidence: number }
  /** Everything the conversation knows after the message. */
  facts: Record<string, Fact>
  /** Values for this reply only: the payment method the customer named, the request that comes next. */
  values: Record<string, string>
  /** The active request after the message. */
  topic?: Topic
  /** The request waiting for its order number, if any. */
  pendingIntent?: SupportIntent
  slots: Slots
  misunderstoodInARow: number
}

/**
 * What identifies a reply among the last few: the answer, or the intent and its situation, the order and the values
 * the message itself gave it (the payment method named).
 */
export function replyKey (intent: IntentName, reply: ReplyChoice, facts: Readonly<Record<string, Fact>>, values: Readonly<Record<string, string>> = {}): string {
  const order = (facts['order_id'] === undefined ? '' : `#${String(facts['order_id'])}`) + Object.values(values).map((value) => `:${value}`).join('')
  switch (reply.kind) {
    case 'answer': return `answer:${reply.id}/${reply.situations[0] ?? 'default'}${order}`
    case 'fallback': return `fallback:${reply.name}`
    case 'intent': return `intent:${intent}/${reply.situations[0] ?? 'default'}${order}`
  }
}

/** What a replyKey names: the answer's id, or the intent, or the fallback's name. */
export function repliedWith (key: string): { kind: ReplyChoice['kind'], name: string } {
  const colon = key.indexOf(':')
  const slash = key.indexOf('/', colon)
  return { kind: key.slice(0, colon) as ReplyChoice['kind'], name: key.slice(colon + 1, slash < 0 ? undefined : slash) }
}
