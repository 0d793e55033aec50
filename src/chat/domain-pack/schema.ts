import { Type, type Static } from '@sinclair/typebox'
import { INTENTS, SUPPORT_INTENTS } from '../intents.ts'

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
  anger_words: Type.Array(Text),
  /** Swearing: with shouting and "!!!", the anger a complaint is handed to a person for. */
  swear_words: Type.Array(Text, { default: [] })
}, { additionalProperties: false })

const IntentName = Type.Union(INTENTS.map((name) => Type.Literal(name)))

/** How the conversation is followed: what customers ask next about the same request. */
const SupportIntentName = Type.Union(SUPPORT_INTENTS.map((name) => Type.Literal(name)))

export const DomainDialogue = Type.Object({
  /**
   * For each request, the requests a customer typically asks next about the same order ("has it shipped?" after an
   * address change). A follow-up is read in their favour: the model's probability for each is multiplied by
   * `follow_up_weight` before the best is chosen.
   */
  follow_ups: Type.Record(Type.String({ pattern: NAME }), Type.Array(IntentName), { default: {} }),
  follow_up_weight: Type.Number({ minimum: 1, maximum: 100, default: 3 }),
  /**
   * The answer selector's probability an answer needs to be given instead of its request's reply (`npm run eval`
   * reports answer selection at this threshold).
   */
  answer_threshold: Type.Number({ minimum: 0, maximum: 1, default: 0.3 }),
  /**
   * Requests that are questions about the shop (fees, methods, times): asked while another request is active, they
   * are answered and leave that request active, to go on with after them.
   */
  questions: Type.Array(IntentName, { default: [] }),
  /**
   * Problems the customer reports (a double charge, a complaint): one told beside another request is kept for next,
   * to be dealt with on its own; any other request that needs no order is answered in the same reply.
   */
  problems: Type.Array(IntentName, { default: [] }),
  /**
   * Requests about an order not yet delivered: a message describing what happened to an item the customer has (a
   * wrong, faulty or ill-fitting one) is that situation's request, however sure the model is of one of these.
   */
  before_delivery: Type.Array(IntentName, { default: [] }),
  /**
   * The intent a question is reported as by the matter it asks about, whatever request it is asked in: for each
   * policy fact (`delivery_options`, `refund_processing_days`), the intent of a question about when or how long (the
   * `time` cue) answered by an answer stating it, and of a question about the customer's own item (the message says
   * what happened to it, or that intent is the active request). Only an intent the answer belongs to.
   */
  reported_as: Type.Object({
    time: Type.Record(Type.String({ pattern: NAME }), SupportIntentName, { default: {} }),
    own_purchase: Type.Record(Type.String({ pattern: NAME }), SupportIntentName, { default: {} }),
    /** The facts that say what something costs: a price question in a request finds its answer among them. */
    price: Type.Record(Type.String({ pattern: NAME }), SupportIntentName, { default: {} })
  }, { additionalProperties: false, default: {} }),
  /** How a reply names each request when it says it will come to it next ("the payment problem"). */
  request_names: Type.Record(Type.String({ pattern: NAME }), Text, { default: {} }),
  /** What some requests are to the dialogue, so that the engine names no intent of its own. */
  roles: Type.Object({
    /** Requests about the customer's account: what happened to an item or a parcel means nothing in them. */
    account: Type.Array(SupportIntentName, { default: [] }),
    /** Requests that wait for a new address: a street address given while one is active goes on with it. */
    address: Type.Array(SupportIntentName, { default: [] }),
    /** Ways to reach the shop's people: asked with "that didn't help", they are what the customer wants instead. */
    contact: Type.Array(SupportIntentName, { default: [] }),
    /** The requests a question about a payment method named is in. */
    payment: Type.Array(SupportIntentName, { default: [] }),
    /** Where frustration vented in the middle of another request goes, and what a furious customer is handed over for. */
    complaint: Type.Optional(SupportIntentName),
    /** The refund asked to be done: for a missing part or a lost parcel, and after what happened. */
    refund: Type.Optional(SupportIntentName),
    /** A refund already asked for, chased: "where is it" while it is active is the refund, not a parcel. */
    refund_status: Type.Optional(SupportIntentName),
    /** Where a parcel is: no request for an item the customer has in hand. */
    parcel: Type.Optional(SupportIntentName),
    /** Cancelling an order: an order being cancelled has not shipped either. */
    cancellation: Type.Optional(SupportIntentName)
  }, { additionalProperties: false, default: {} })
}, { additionalProperties: false })

/**
 * One answer to a question customers ask inside a request ("is sending it back free?" inside a return): what it
 * states and how it is said, by situation (`wrong_item` → "Yes, sending back a wrong item is free."), with the
 * questions that select it. Answers live in `answers/*.yaml` of a pack directory.
 */
export const DomainAnswer = Type.Object({
  /** `topic.question`, unique in the pack; clients may see it as `answer` in a reply. */
  id: Type.String({ pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$' }),
  /** The requests it belongs to, the first its home: it is selected only inside one of them. */
  intents: Type.Array(SupportIntentName, { minItems: 1 }),
  /**
   * The policy facts it states (`return_shipping`, `delivery_options.express`, `contact.hours`…): every policy must
   * be stated by some answer, and a figure a reply writes out must be in one of these.
   */
  states: Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)?$' })),
  /**
   * The case it supposes (`shipped`: what happens once the order has shipped): a question supposing that case inside
   * a request is answered by that request's own answer for it, whichever request's the words match best.
   */
  supposes: Type.Optional(Type.String({ pattern: NAME })),
  /**
   * Words one of which every question it answers names (`[code, discount, voucher]`, in any form: stems are
   * compared): a message naming none of them is not given it, however many of its other words it shares ("forgot a
   * phone case, can I add it?" is no code added after ordering).
   */
  names: Type.Optional(Type.Array(Text, { minItems: 1 })),
  /** Templates by situation (the item's, the return window's, the account's…); `default` is required. */
  replies: IntentReplies,
  /** Questions as customers ask them: what selects the answer. */
  examples: Type.Array(Text, { minItems: 8 })
}, { additionalProperties: false })
export type DomainAnswer = Static<typeof DomainAnswer>

/** Phrases, by value, that fill a slot; matched on word stems (docs/chat.md "Slots"). */
const SlotValues = Type.Record(Type.String({ pattern: NAME }), Type.Array(Text, { minItems: 1 }))

/** Other names customers give the items of one of the policies' lists, by the item's own name. */
const OtherNames = Type.Record(Type.String({ minLength: 1 }), Type.Array(Text, { minItems: 1 }), { default: {} })

/** The words that fill the dialogue's slots and mark what a message does in the conversation. */
export const DomainSlots = Type.Object({
  /** What happened to the item or parcel, most specific first: `broke_in_use` before `defective_item`. */
  item_situation: SlotValues,
  /** The request each item situation belongs to (`wrong_item: get_refund`). */
  situation_requests: Type.Record(Type.String({ pattern: NAME }), SupportIntentName, { default: {} }),
  /**
   * The policy that states each item situation's rule (`missing_item: missing_items`): an answer stating another
   * situation's rule, and not this one's, is not given for it.
   */
  situation_policies: Type.Record(Type.String({ pattern: NAME }), Type.String({ pattern: NAME }), { default: {} }),
  /** Situations of an item the customer has in hand: no parcel to track, and told with the date, the fault's reply. */
  item_in_hand: Type.Array(Type.String({ pattern: NAME }), { default: [] }),
  /** Situations of a parcel on its way (late, lost): a refund asked to be done for one is the refund. */
  parcel_situations: Type.Array(Type.String({ pattern: NAME }), { default: [] }),
  /** Situations with a time limit of their own, not the return window's: a date given is not answered with the window. */
  own_time_limit: Type.Array(Type.String({ pattern: NAME }), { default: [] }),
  /** A reply situation to try when a reply has none for this one (`lost_parcel: late_delivery`). */
  reply_fallbacks: Type.Record(Type.String({ pattern: NAME }), Type.String({ pattern: NAME }), { default: {} }),
  /** Refund or exchange. */
  preference: SlotValues,
  /**
   * What the customer tells has become of the order, as the cases answers suppose (`supposes: shipped`): "it already
   * says shipped" in a cancellation is answered with the cancellation's answer for that case.
   */
  cases: Type.Record(Type.String({ pattern: NAME }), Type.Array(Text, { minItems: 1 }), { default: {} }),
  /** The customer's account (`no_account`). */
  account: SlotValues,
  /**
   * Other names customers give a payment method of the policies' list (`American Express: [amex]`); those of a method
   * the list does not have are not used, so that a pack can change its methods without editing these.
   */
  payment_method_names: OtherNames,
  /**
   * Other names customers give a delivery option of the policies' list (`Store pickup: [click and collect]`); those
   * of an option the list does not have are not used, as with the payment methods.
   */
  delivery_option_names: OtherNames,
  /** What a message does: corrects a value, asks the same for another order, says the answer did not help… */
  cues: Type.Object({
    correction: Type.Array(Text),
    another: Type.Array(Text),
    not_helped: Type.Array(Text),
    greeting: Type.Array(Text),
    goodbye: Type.Array(Text),
    thanks: Type.Array(Text),
    /** The customer takes note and asks nothing ("ok", "got it", "sounds good"): a courtesy when it is all they say. */
    acknowledge: Type.Array(Text, { default: [] }),
    /** The customer reports a step done ("done", "that worked"): with thanks and no question, a courtesy. */
    done: Type.Array(Text, { default: [] }),
    affirm: Type.Array(Text),
    deny: Type.Array(Text),
    own_plan: Type.Array(Text),
    request: Type.Array(Text),
    purchase: Type.Array(Text),
    /** The message asks when or how long ("how fast", "when can I"). */
    time: Type.Array(Text, { default: [] }),
    /** The message asks what something costs ("is it free", "how much"). */
    price: Type.Array(Text, { default: [] }),
    /**
     * The message asks whether the customer must pay ("do I have to pay", "will it cost me"): a reply that says it is
     * free answers "No" (the value `{pay_answer}`), where "is it free?" is answered "Yes".
     */
    must_pay: Type.Array(Text, { default: [] }),
    /** The customer asks for what was said before ("what was the link again?"): the active request's last answer. */
    again: Type.Array(Text, { default: [] }),
    /** The message is about the account rather than an order ("the address saved in my account"). */
    account_scope: Type.Array(Text, { default: [] }),
    /** The customer says what they want done ("I'd like to return it"), not only asks whether it can be. */
    wish: Type.Array(Text, { default: [] }),
    /** A detail given for the active request, said to be one ("it's a visa if that matters"). */
    detail: Type.Array(Text, { default: [] }),
    /** The customer supposes a case ("what if it already shipped?"): a question about the rule, not a request. */
    supposing: Type.Array(Text, { default: [] }),
    /** The customer asks for a person ("i want a person to look at this"): with "it didn't help", they get one. */
    person: Type.Array(Text, { default: [] })
  }, { additionalProperties: false })
}, { additionalProperties: false })
export type DomainSlots = Static<typeof DomainSlots>

export const DomainPack = Type.Object({
  name: Text,
  policies: DomainPolicies,
  links: Type.Record(Type.String({ pattern: NAME }), DomainLink),
  understanding: DomainUnderstanding,
  dialogue: Type.Optional(DomainDialogue),
  /** Answers to questions inside a request; every policy is stated by at least one. */
  answers: Type.Array(DomainAnswer, { minItems: 1 }),
  /** Examples of each support request asked plainly, which its own reply answers (answers/requests.yaml). */
  requests: Type.Record(SupportIntentName, Type.Array(Text, { minItems: 5 }), { default: {} }),
  slots: DomainSlots,
  /** Replies that do not belong to one intent. */
  fallback: Type.Object({
    /** The second message in a row the assistant did not understand. */
    misunderstood_handoff: Templates,
    /** A message that only gives a value (an order number, a date) before the customer has said what they want. */
    value_without_request: Templates,
    /** The customer says the answer did not help and the request has no further step: offer a person. */
    not_helped: Templates,
    /** The customer writes on after a person was asked to take over. */
    after_handoff: Templates,
    /** After the answer to the first of several requests: the next one comes next (`{next_request}`). */
    queued_request: Templates
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

/**
 * The plain requests, by intent: messages that ask for the request itself, with no question inside it ("I want to
 * cancel my order"). When the answer selector finds one of these the best match, the request's own reply answers.
 */
export const PlainRequests = Type.Record(Type.String({ pattern: NAME }), Type.Array(Text, { minItems: 5 }))

/** One file of a pack directory's `answers/`: answers, plain requests, or both. */
export const AnswersFile = Type.Object({
  answers: Type.Optional(Type.Array(DomainAnswer, { minItems: 1 })),
  requests: Type.Optional(PlainRequests)
}, { additionalProperties: false })
