import { Type, type Static } from '@sinclair/typebox'
import { INTENTS } from '../intents.ts'

/**
 * The domain pack's shape: everything the assistant knows and says, as data (docs/chat.md, "The domain pack"). On disk it is
 * a directory (`responses.yaml` plus `nlu/*.yaml`, see load.ts) or one YAML/JSON file of this merged shape.
 */

const Text = Type.String({ minLength: 1 })
const Templates = Type.Array(Text, { minItems: 1 })
const NAME = '^[a-z][a-z0-9_]*$'
const Examples = Type.Array(Text, { minItems: 5 })

/** What a reply is allowed to say about the shop: the only facts the assistant states besides the conversation's. */
export const DomainPolicies = Type.Object({
  return_window_days: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
  refund_processing_days: Type.Integer({ minimum: 1, maximum: 365 }),
  cancellation_fee_rules: Type.Array(Text, { minItems: 1, description: 'One sentence per rule' }),
  delivery_options: Type.Array(Type.Object({
    name: Text,
    period: Text,
    price: Text
  }, { additionalProperties: false }), { minItems: 1 }),
  payment_methods: Type.Array(Text, { minItems: 1 }),
  contact: Type.Object({
    phone: Text,
    email: Text,
    hours: Text,
    chat: Type.Optional(Text)
  }, { additionalProperties: false }),
  // What the shop does in the situations customers describe; a reply that needs one the pack lacks is not used.
  return_shipping: Type.Optional(Text),
  exchanges: Type.Optional(Text),
  defective_items: Type.Optional(Text),
  missing_items: Type.Optional(Text),
  late_deliveries: Type.Optional(Text),
  discount_codes: Type.Optional(Text),
  account_security: Type.Optional(Text)
}, { additionalProperties: false })

export const DomainLink = Type.Object({
  label: Text,
  url: Type.String({ pattern: '^\\{base\\}/', description: 'A template over {base} and context values' })
}, { additionalProperties: false })

/** Reply templates by situation; `default` applies when no more specific situation has a usable template. */
export const IntentReplies = Type.Intersect([
  Type.Object({ default: Templates }),
  Type.Record(Type.String({ pattern: NAME }), Templates, { additionalProperties: false })
])
export type IntentReplies = Static<typeof IntentReplies>

export const DomainIntent = Type.Object({
  /** Training utterances for the intent model. */
  examples: Examples,
  /** Situations customers describe (a broken item, a late parcel), each with its own examples and replies. */
  situations: Type.Optional(Type.Record(Type.String({ pattern: NAME }), Examples)),
  replies: IntentReplies,
  /** The intent cannot be served without an order number: the assistant asks for one first. */
  needs_order: Type.Optional(Type.Boolean()),
  /** Replies reason with the return window when the purchase date is known. */
  uses_return_window: Type.Optional(Type.Boolean()),
  /** The customer should now be routed to a person. */
  handoff: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export type DomainIntent = Static<typeof DomainIntent>

const intentProperties = Object.fromEntries(INTENTS.map((name) => [name, DomainIntent])) as
  Record<typeof INTENTS[number], typeof DomainIntent>

export const DomainUnderstanding = Type.Object({
  /**
   * The operating point of the rejector: below this calibrated probability of being a request the desk serves, a
   * message is out of scope (`npm run eval` shows the trade-off).
   */
  rejection_threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.5 }),
  /** An intent less probable than this counts as not understood, even in scope. */
  confidence_threshold: Type.Number({ minimum: 0, maximum: 1 }),
  /** Words and phrases the model reads as one canonical word. */
  synonyms: Type.Record(Type.String({ pattern: '^[a-z]+$' }), Type.Array(Text, { minItems: 1 })),
  /** Words that mark a message as angry (complaints from angry customers go to a person). */
  anger_words: Type.Array(Text)
}, { additionalProperties: false })

const IntentName = Type.Union(INTENTS.map((name) => Type.Literal(name)))

/** How the conversation is followed: what customers ask next about the same request. */
export const DomainDialogue = Type.Object({
  /**
   * For each request, the requests a customer typically asks next about the same order ("has it shipped?" after an
   * address change). A follow-up is read in their favour: the model's probability for each is multiplied by
   * `follow_up_weight` before the best is chosen.
   */
  follow_ups: Type.Record(Type.String({ pattern: NAME }), Type.Array(IntentName), { default: {} }),
  follow_up_weight: Type.Number({ minimum: 1, maximum: 100, default: 3 })
}, { additionalProperties: false })

export const DomainPack = Type.Object({
  name: Text,
  policies: DomainPolicies,
  links: Type.Record(Type.String({ pattern: NAME }), DomainLink),
  understanding: DomainUnderstanding,
  dialogue: Type.Optional(DomainDialogue),
  /** Replies that do not belong to one intent. */
  fallback: Type.Object({
    /** The second message in a row the assistant did not understand. */
    misunderstood_handoff: Templates,
    /** A message that only gives a value (an order number, a date) before the customer has said what they want. */
    value_without_request: Templates
  }, { additionalProperties: false }),
  intents: Type.Object(intentProperties, { additionalProperties: false })
}, { additionalProperties: false })
export type DomainPack = Static<typeof DomainPack>

/** One file of a pack directory's `nlu/`: examples (and situations) of one intent. */
export const NluFile = Type.Object({
  intent: IntentName,
  examples: Type.Optional(Type.Array(Text)),
  situations: Type.Optional(Type.Record(Type.String({ pattern: NAME }), Type.Array(Text)))
}, { additionalProperties: false })
export type NluFile = Static<typeof NluFile>
