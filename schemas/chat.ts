import { Type, type Static, type TString } from '@sinclair/typebox'
import { INTENTS } from '../src/chat/intents.ts'
import { CHAT_REPLY, CHAT_REQUEST } from './examples.ts'
import { StringEnum } from './string-enum.ts'

/** Largest chat request body; larger ones get 413. */
export const CHAT_BODY_LIMIT = 64 * 1024

const ContextValue = Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean()])

export const ChatContext = Type.Object({
  order_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The order the message is about', examples: ['A-10042'] })),
  purchase_date: Type.Optional(Type.String({
    format: 'date',
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    description: 'When the order was bought (YYYY-MM-DD, a real calendar date); refund and return answers are computed from it',
    examples: ['2026-11-02']
  }))
}, {
  $id: 'ChatContext',
  title: 'ChatContext',
  description: 'What the support system knows. Further members (string, number or boolean; e.g. `customer_name`) may be used by replies.',
  additionalProperties: ContextValue,
  maxProperties: 50
})
export type ChatContext = Static<typeof ChatContext>

const VISIBLE_CHARACTER = '[^\\s\\p{Cf}\\p{Cc}\\p{Cs}\\p{Co}\\p{Cn}\\p{Mn}\\p{Me}\\u2800\\u3164\\u115F\\u1160\\uFFA0]'

/** Any control character (C0, DEL, C1): a NUL or a line break in an id breaks what it is passed on to. */
const CONTROL_CHARACTER = '\\p{Cc}'

/** What a `user_id` must be, in the request body and in the transcript's query alike. */
const UserId = (description: string): TString => Type.String({
  minLength: 1,
  maxLength: 128,
  // Two rules, each one character class: linear time, as one pattern saying both could not be shown to be.
  pattern: VISIBLE_CHARACTER,
  not: { type: 'string', pattern: CONTROL_CHARACTER },
  description: `${description} (at least one visible character; no control characters)`,
  examples: ['customer-8812']
})

export const ChatRequest = Type.Object({
  message: Type.String({
    minLength: 1,
    maxLength: 4000,
    // At least one visible character: whitespace, zero-width and other format characters, controls, lone combining
    // marks and the blank-looking letters (Hangul fillers, the braille blank) do not count. One class: linear time.
    pattern: VISIBLE_CHARACTER,
    description: 'What the customer wrote (not only whitespace or invisible characters)',
    examples: ['Where is my order?']
  }),
  user_id: UserId('The customer, as the caller identifies them'),
  context: Type.Optional(Type.Ref(ChatContext)),
  conversation_id: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 128,
    description: 'Continue this conversation (from an earlier reply); omit to start a new one'
  }))
}, { $id: 'ChatRequest', title: 'ChatRequest', examples: [CHAT_REQUEST] })
export type ChatRequest = Static<typeof ChatRequest>

const Intent = StringEnum(INTENTS, { description: 'What the assistant understood the customer wants', examples: ['track_order'] })

export const ChatLink = Type.Object({
  label: Type.String({ examples: ['Track your order'] }),
  url: Type.String({ format: 'uri', examples: ['https://shop.example.com/orders/A-10042/tracking'] })
}, { $id: 'ChatLink', title: 'ChatLink' })

export const ChatReply = Type.Object({
  reply: Type.String({ description: 'The answer; contains the link when one fits', examples: ['You can follow order A-10042 here: https://shop.example.com/orders/A-10042/tracking'] }),
  conversation_id: Type.String({ description: 'Send it back to continue the conversation', examples: ['7b0e6c52-4a1e-4df4-9d43-1d2f0f1f6a80'] }),
  timestamp: Type.String({ format: 'date-time', description: 'When the reply was made, ISO 8601 UTC', examples: ['2026-11-21T10:15:00.000Z'] }),
  intent: Intent,
  answer: Type.Optional(Type.String({
    pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$',
    description: 'When the reply answers a question asked within the request, the id of the domain pack\'s answer it gives (absent when the reply is the request\'s own)',
    examples: ['returns.shipping_cost']
  })),
  confidence: Type.Number({ minimum: 0, maximum: 1, description: 'How sure the assistant is of the intent', examples: [0.93] }),
  links: Type.Array(Type.Ref(ChatLink), { description: 'The links the reply mentions, in order (empty when none)' }),
  handoff: Type.Boolean({ description: 'True when the customer should now be routed to a person' })
}, { $id: 'ChatReply', title: 'ChatReply', examples: [CHAT_REPLY] })
export type ChatReply = Static<typeof ChatReply>

export const TranscriptTurn = Type.Object({
  role: StringEnum(['customer', 'assistant'] as const),
  text: Type.String(),
  intent: Intent,
  timestamp: Type.String({ format: 'date-time' })
}, { $id: 'TranscriptTurn', title: 'TranscriptTurn' })

export const ChatTranscript = Type.Object({
  conversation_id: Type.String(),
  user_id: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
  handoff: Type.Boolean({ description: 'The last reply routed the customer to a person' }),
  turns: Type.Array(Type.Ref(TranscriptTurn), { description: 'Oldest first; the most recent turns when the conversation is long' })
}, { $id: 'ChatTranscript', title: 'ChatTranscript', description: 'What was said, for the person who takes over' })
export type ChatTranscript = Static<typeof ChatTranscript>

export const ConversationParams = Type.Object({
  conversation_id: Type.String({ minLength: 1, maxLength: 128 })
})

export const TranscriptQuery = Type.Object({
  user_id: UserId('The customer the conversation belongs to (the `user_id` it was started with)')
})
