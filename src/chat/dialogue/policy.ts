import type { AnswerChoice, AnswerRanking, RankedEntry } from '../answers/selector.ts'
import { isCalendarDate } from '../calendar.ts'
import { contentWordCount, stemsOf } from '../answers/terms.ts'
import { deliveryOptionFact } from '../domain-pack/policy-facts.ts'
import type { DomainAnswer, DomainPack } from '../domain-pack/schema.ts'
import { isSupportIntent, OUT_OF_SCOPE, SOCIAL_INTENTS, SUPPORT_INTENTS, type IntentName, type SupportIntent } from '../intents.ts'
import { MIN_COVERAGE, type Candidate, type Understanding } from '../nlu/understand.ts'
import type { Fact, Topic } from './conversation.ts'
import { repliedWith, replyKey, type ClauseReading, type Decision, type DialogueState, type MessageReading, type ReplyPart, type RequestContext } from './decision.ts'
import { courtesyOf, isFragment, isStreetAddress, isYes, MAX_VALUE_AROUND } from './message-shapes.ts'
import { returnWindow } from './return-window.ts'
import { MAX_QUEUED, MAX_RECENT, QUESTION_OPENING, type MessageSlots, type Slots } from './slots.ts'

const SOCIAL: ReadonlySet<string> = new Set(SOCIAL_INTENTS)
/** A message with more content words than this is a request of its own, not a value for the active one. */
const MAX_VALUE_WORDS = 5
/**
 * How sure the model must be that a message is off topic for no answer to be looked for in it, and for a short question
 * naming nothing of its own not to be about the active request ("what do you need from me" reads 0.86–0.89).
 */
const SURELY_OFF_TOPIC = 0.9
/** How sure the model must be of a clause for it to be a request of its own beside one it often follows. */
const CLEAR_REQUEST = 0.9
/** A fragment that only names another thing ("and on weekends?", "what about apple pay") has at most this many. */
const MAX_NAMED_WORDS = 2
/** A question of at most this many content words, naming nothing, asks about the request at hand. */
const MAX_VAGUE_WORDS = 6
/** A correction that asks nothing may say why in a few more words ("my bad, checked the e-mail, it was the 26th"). */
const MAX_CORRECTION_WORDS = 8
/** How sure the model must be of each clause before a message counts as several requests. */
const CLAUSE_CONFIDENCE = 0.5
/**
 * How sure the model must be of another request for a message with a new order number to be that request: "and the
 * one from last month?" repeats the active request unless it is clearly another; "actually, cancel 5531" less so.
 */
const CLEARLY_OTHER = 0.8
const PROBABLY_OTHER = 0.7
/** The model must be this sure of the request a message makes for an answer given in it to report that request. */
const OWN_REQUEST = 0.7
/** A message that names another order than the one the conversation has ("and for the other order?"). */
const ANOTHER_ORDER = /\b(?:other|another|second|different) (?:order|one|parcel|package)\b/i
/** "if": a case supposed, not told. */
const IF_WORD = /\bif\b/i
/** A message that opens with a condition ("if i close my account, …") supposes a case. */
const OPENS_WITH_IF = /^\s*if\b/i
/** A shop question asked in words the intent model did not take for one is answered when the selector is this sure. */
const RESCUE_CONFIDENCE = 0.6
/** How probable a complaint must be among the model's readings of a message that vents (`#vents`). */
const VENTED_COMPLAINT = 0.15
/** Below this probability of being off topic, a short statement in a request adds to it (`#addsToRequest`). */
const ADDED_OFF_TOPIC = 0.7
/** A statement of MAX_VAGUE_WORDS to MAX_ADDED_WORDS content words adds to the request below this probability of off topic. */
const LONGER_ADDED_OFF_TOPIC = 0.5
const MAX_ADDED_WORDS = 12
/** …and the intent model must give one of the answer's requests at least this probability. */
const RESCUE_CANDIDATE = 0.1
/** …or, when the selector is this sure, the situation the message describes must belong to one of them. */
const SURE_ANSWER = 0.9
/** An answer this probable among the entries of a request the model is sure of is its choice there. */
const WITHIN_SURE = 0.8
/** …or the selector is this sure, the intent model is not as sure of any request, and no situation says otherwise. */
const CERTAIN_ANSWER = 0.98
/** Asking to be given something: "can i get a refund for that bit", "could we have our money back". */
const ASKS_TO_GET = /\b(?:can|could|may) (?:i|we) (?:get|have)\b/i
/** Where a question may start without its mark: "wrong colour for me, can i trade it for the black one". */
const CLAUSE_BREAK = /[,.;:!]/
/** Words that leave an aside for the request: "anyway, where is it now". */
const BACK_TO_TOPIC = /^\W*(?:ok(?:ay)?\W+|so\W+)?(?:any ?ways?|anyhow|back to)\b/i
/** Words that go back to an earlier request, opening a clause (CLAUSE_BREAK): "thanks. going back to the refund". */
const BACK_TO_REQUEST = /^(?:(?:ok|okay|so|and|but) +)?(?:(?:going|coming|getting|get) +)?back to\b/i
/** A number in the message: something the request may need, that no slot reads. */
const DIGIT = /\d/
/** The shop has the return: "your warehouse got it", "you received it back". */
const RETURN_RECEIVED = /\b(?:your warehouse|you (?:got|received|have) (?:it|them)|(?:got|received) (?:it|them) back|arrived back)\b/i
/** Words that name a parcel or an order, not a refund. */
const PARCEL_WORDS = /\b(?:parcel|package|packet|delivery|delivered|courier|shipment|shipping|tracking|order)\b/i
/** The customer names the value they give: "the order number is…", "order no.", "order nr". */
const ORDER_NUMBER_NAMED = /\border (?:number|no\b|nr\b|#)/i
const EMPTY_SLOTS: MessageSlots = { cues: new Set(), asks: false, contentWords: 0 }
const WINDOW_SITUATIONS = ['inside_window', 'window_last_day', 'outside_window', 'future_purchase'] as const

/**
 * The dialogue policy: from what the conversation knows, what the message says and today's date, decides the intent
 * answered, the reply (an answer to the question asked, or the request's reply for its situation), what is
 * remembered and whether a person takes over. Pure: the same inputs give the same decision, and nothing is changed.
 *
 * The conversation has an active request (its topic) and slots. A message that only adds a value (an order number,
 * a date) continues the active request; one that names another order with "and the one…" repeats it for that
 * order; a correction replaces the value and repeats it. A question about the shop asked in the middle is answered
 * and leaves the active request in place. Any other message is read with the topic as evidence: the model's
 * candidates that customers typically ask next about the same request (the pack's `dialogue.follow_ups`) weigh more.
 * Within the request, the answer selector picks the answer to the question asked, when it is sure enough.
 */
export class DialoguePolicy {
  readonly #pack: DomainPack
  readonly #followUps: ReadonlyMap<string, ReadonlySet<IntentName>>
  readonly #followUpWeight: number
  readonly #answerThreshold: number
  readonly #questions: ReadonlySet<string>
  readonly #problems: ReadonlySet<string>
  readonly #beforeDelivery: ReadonlySet<string>
  readonly #answers: ReadonlyMap<string, DomainAnswer>
  /** The answer about each delivery option alone, by the fact it states (`delivery_options.express`). */
  readonly #optionAnswers: ReadonlyMap<string, DomainAnswer>
  readonly #reportedAs: { time: Readonly<Record<string, SupportIntent>>, own_purchase: Readonly<Record<string, SupportIntent>>, price: Readonly<Record<string, SupportIntent>> }
  readonly #roles: Roles
  /** The request that hands the conversation to a person (the pack's intent with `handoff: true`). */
  readonly #person: SupportIntent | undefined
  /** The pack's item situations by what they are to the dialogue (slots.yaml). */
  readonly #inHand: ReadonlySet<string>
  readonly #parcels: ReadonlySet<string>
  readonly #ownTimeLimit: ReadonlySet<string>
  readonly #situationPolicies: ReadonlySet<string>

  constructor (pack: DomainPack) {
    this.#pack = pack
    this.#followUps = new Map(Object.entries(pack.dialogue?.follow_ups ?? {}).map(([intent, next]) => [intent, new Set(next)]))
    this.#followUpWeight = pack.dialogue?.follow_up_weight ?? 3
    this.#answerThreshold = pack.dialogue?.answer_threshold ?? 0.3
    this.#questions = new Set(pack.dialogue?.questions ?? [])
    this.#problems = new Set(pack.dialogue?.problems ?? [])
    this.#beforeDelivery = new Set(pack.dialogue?.before_delivery ?? [])
    this.#answers = new Map(pack.answers.map((answer) => [answer.id, answer]))
    this.#optionAnswers = new Map(pack.policies.delivery_options.map((option) => deliveryOptionFact(option.name))
      .flatMap((fact) => pack.answers.filter((answer) => answer.states.length === 1 && answer.states[0] === fact).slice(0, 1).map((answer) => [fact, answer] as const)))
    this.#reportedAs = { time: pack.dialogue?.reported_as?.time ?? {}, own_purchase: pack.dialogue?.reported_as?.own_purchase ?? {}, price: pack.dialogue?.reported_as?.price ?? {} }
    this.#roles = rolesOf(pack)
    this.#person = SUPPORT_INTENTS.find((intent) => pack.intents[intent].handoff === true)
    this.#inHand = new Set(pack.slots.item_in_hand)
    this.#parcels = new Set(pack.slots.parcel_situations)
    this.#ownTimeLimit = new Set(pack.slots.own_time_limit)
    this.#situationPolicies = new Set(Object.values(pack.slots.situation_policies))
  }

  decide (state: DialogueState, understanding: Understanding, context: RequestContext, today: string, given: MessageReading = {}): Decision {
    const subject = this.#subjectNamed(state)
    const reading = given.answers !== undefined && subject !== undefined ? { ...given, answers: given.answers.implying(subject) } : given
    const { entities } = understanding
    const message = reading.slots ?? EMPTY_SLOTS
    const { cues } = message
    const previous = state.slots ?? {}
    const request = state.pendingIntent ?? state.topic?.intent
    const facts: Record<string, Fact> = { ...state.facts, ...context }
    // A value, with at most a few words around it ("buyed it 3 days ago", "order nr 84106") — with no request active,
    // unless those words are a request the model is sure of ("scrap order 77310").
    const sureRequest = understanding.status === 'understood' && isSupportIntent(understanding.intent) && understanding.confidence >= PROBABLY_OTHER
    // Whether the message has a question mark: a value or a correction given with one asks something besides.
    const unasked = reading.text !== undefined && !reading.text.includes('?')
    const valueMessage = understanding.valueOnly || entities.bareCode !== undefined ||
      ((entities.date !== undefined || entities.orderId !== undefined) && message.contentWords <= MAX_VALUE_AROUND && !message.asks &&
        message.situation === undefined && reading.slots !== undefined && (request !== undefined || !sureRequest)) ||
      // "The order number is 52617 by the way.": a few more words around an order number, while a request is active.
      (entities.orderId !== undefined && request !== undefined && message.contentWords <= MAX_VALUE_WORDS && !message.asks &&
        message.situation === undefined && !cues.has('own_plan') && reading.slots !== undefined && !sureRequest)

    // The order number the assistant asked for, given with a few words and no question ("The order number is 47731,
    // my apologies for not including it."), whatever else those words seem to say.
    // (Or named as the order number with more than was asked, "The order number is C-30417. It was placed on the 19th, I
    // paid with my Mastercard…", unless the model is sure those words ask for another request.)
    const otherRequest = understanding.status === 'understood' && isSupportIntent(understanding.intent) && understanding.intent !== state.pendingIntent &&
      understanding.confidence >= CLEARLY_OTHER
    const named = ORDER_NUMBER_NAMED.test(reading.text ?? '')
    const answersAsked = !valueMessage && state.pendingIntent !== undefined && entities.orderId !== undefined && unasked &&
      ((message.contentWords <= MAX_CORRECTION_WORDS && (named || !otherRequest)) || (named && !otherRequest))
    // The order number named as one and given for the active request, unasked ("Apologies, I forgot to include it: the
    // order number is 56004."), whatever the words around it seem to ask.
    const namesOrder = !valueMessage && request !== undefined && entities.orderId !== undefined && unasked &&
      (message.situation === undefined || message.situation === previous.situation) &&
      message.contentWords <= MAX_CORRECTION_WORDS && ORDER_NUMBER_NAMED.test(reading.text ?? '') && !cues.has('another')
    const orderId = entities.orderId ?? (valueMessage && request !== undefined ? entities.bareCode : undefined)
    const newOrder = orderId !== undefined && orderId !== state.facts['order_id']
    if (orderId !== undefined) facts['order_id'] = orderId
    if (entities.email !== undefined) facts['email'] = entities.email
    const answersWithDate = valueMessage && request !== undefined && this.#pack.intents[request].uses_return_window === true
    const previousDate = facts['purchase_date']
    // "I bought a lamp from you on 25 October": a purchase word further from the date than the recogniser looks.
    const bought = cues.has('purchase') && !this.#parcels.has(message.situation ?? '')
    // "sorry, it was october 26 not 28": a date corrects the purchase date the conversation knows.
    const correctsKnown = cues.has('correction') && previousDate !== undefined
    // (Not the day the shop got a return back: "the tracking says your warehouse got it on monday".)
    const returnReceived = RETURN_RECEIVED.test(reading.text ?? '')
    if (entities.date !== undefined && context['purchase_date'] === undefined && !returnReceived && (entities.dateIsPurchase === true || answersWithDate || bought || correctsKnown)) {
      // "wait no it was the 12th" after 3 October: the 12th of the month being corrected.
      const corrected = correctsKnown && entities.dateDayOnly === true && typeof previousDate === 'string' ? `${previousDate.slice(0, 8)}${entities.date.slice(8)}` : undefined
      facts['purchase_date'] = corrected !== undefined && isCalendarDate(corrected) && corrected <= today ? corrected : entities.date
    }
    // The date the message itself gives; and a new date at all, which may come from the support system's context.
    const datedNow = facts['purchase_date'] !== previousDate
    const newDate = facts['purchase_date'] !== state.facts['purchase_date']

    // What the message says about the item, the customer's preference and account; a new order's item is another.
    const slots: Slots = withoutTransient(previous)
    // (The first order number given is the order of what the customer described: "it not work… Order is 60418".)
    if (newOrder && state.facts['order_id'] !== undefined && message.situation === undefined) delete slots.situation
    const topicIntent = state.topic?.intent
    if (message.situation !== undefined && !answersAsked && !this.#roles.account.has(understanding.intent) && (topicIntent === undefined || !this.#roles.account.has(topicIntent) || understanding.status === 'understood')) {
      slots.situation = message.situation
    }
    if (message.preference !== undefined) slots.preference = message.preference
    if (message.account !== undefined) slots.account = message.account
    const values: Record<string, string> = {}
    const method = this.#paymentMethod(understanding, reading)
    if (method !== undefined) values['payment_method'] = method
    // "do I have to pay to send it back?": "No, … is free", where "is it free?" gets "Yes".
    if (cues.has('must_pay')) values['pay_answer'] = 'No'

    const turn: Turn = { state, understanding, message, reading, facts, slots, values, today, newDate }

    // "that didnt help at all… i want a person to look at this": a person, at once.
    if (cues.has('not_helped') && cues.has('person') && state.topic !== undefined && this.#person !== undefined) return this.#act(turn, this.#person, undefined, 1)

    // A person was offered and the customer accepts, or says again that nothing helped.
    // ("k thx" takes note and declines nothing: it is thanks.)
    if (previous.pending === 'offer_person' && this.#person !== undefined && ((isYes(message, understanding) && !cues.has('thanks')) || cues.has('not_helped'))) {
      return this.#act(turn, this.#person, undefined, 1)
    }

    // After a person was asked to take over, what the customer adds about the same matter is for that person —
    // unless the handoff was only because the assistant did not understand, and now it does.
    const misunderstood = previous.recent?.at(-1) === 'fallback:misunderstood_handoff'
    if (previous.handedOff === true && state.topic !== undefined && !cues.has('not_helped') && !(misunderstood && understanding.status === 'understood') &&
      (understanding.intent === state.topic.intent || understanding.status !== 'understood' || understanding.intent === this.#roles.complaint || valueMessage)) {
      return this.#base(turn, { intent: state.topic.intent, confidence: 1, reply: { kind: 'fallback', name: 'after_handoff' }, handoff: true, topic: state.topic })
    }

    // A value for the active request: the order number it waits for, a date, the same request for another order,
    // or a corrected value — unless the message clearly asks for another request.
    const asksOther = understanding.status === 'understood' && isSupportIntent(understanding.intent) && understanding.intent !== request &&
      understanding.confidence >= (cues.has('another') ? CLEARLY_OTHER : PROBABLY_OTHER)
    // A longer one too when the model makes little of it ("oh and the car seat from order 90240 too, same thing").
    // A correction of the order number in a few words and no question ("sorry, the order is 52209 not 52290, typo"),
    // or saying why in a few more ("i meant 52209, the other one came last week"), is the correction, whatever
    // request the model reads in the words around it.
    const correctsOrder = newOrder && state.facts['order_id'] !== undefined && request !== undefined && cues.has('correction') && message.contentWords <= MAX_CORRECTION_WORDS && unasked
    // (With no request active, there is none to repeat: "could you send me another one" asks for a replacement.)
    const forAnother = correctsOrder || (orderId !== undefined && request !== undefined && (cues.has('another') || cues.has('correction')) && !asksOther &&
      (message.contentWords <= MAX_VALUE_WORDS || understanding.status !== 'understood' || understanding.confidence < CLAUSE_CONFIDENCE))
    // One that says why in a few more words and asks nothing is the correction, whatever the model makes of the
    // words of why ("looked at the receipt again, it was the 18th not the 25th").
    const correctsDate = datedNow && cues.has('correction') &&
      ((message.contentWords <= MAX_VALUE_WORDS && !asksOther) || (correctsKnown && message.contentWords <= MAX_CORRECTION_WORDS && unasked))
    // "only 2 of the 3 mugs were in the box. i want my money back for the missing one", "the charger is missing from
    // the box?? can i get a refund for it": the refund asked for (for a missing part, wished or asked to be had; not
    // "do I get it sent or refunded?", which asks the rule).
    // (So too for a late or lost parcel, when a clause asks for the refund to be done: "its over a week late now.
    // honestly just refund me", not "could you tell me where it is, and whether I will be reimbursed?".)
    const refundAsked = reading.clauses?.some((clause) => clause.wants === true && clause.understanding.intent === this.#roles.refund) === true
    // (For a parcel that is late or lost, told now or before, a replacement asked for with the refund is the same:
    // "i want it replaced or my money back".)
    const parcel = this.#parcels.has(message.situation ?? previous.situation ?? '')
    const refundWanted = (message.preference === 'prefers_refund' && this.#refundNotItsRequest(message.situation) && (cues.has('wish') || refundAsked || ASKS_TO_GET.test(reading.text ?? ''))) ||
      (message.preference !== undefined && parcel && refundAsked)
    // How the account stands, or which the customer prefers, said in a few words ("but I don't have an account!").
    // (Not what the customer says they will do, with goodbye: "ok ill do the swap, bye".)
    const leaving = cues.has('own_plan') && cues.has('goodbye')
    const slotValue = request !== undefined && !refundWanted && !leaving && (message.account !== undefined || message.preference !== undefined) &&
      ((message.contentWords <= MAX_VALUE_WORDS && !asksOther) ||
        // …or told in more words, asking nothing, during an account request, which the model reads as one of the
        // account too ("i dont remember ever signing up tho" after the e-mail was said to be taken; not "also i dont
        // have an account yet, how do i make one").
        // (Not a new problem told with it: "it says my email is already registered but I've never signed up".)
        (message.account !== undefined && this.#roles.account.has(request) && this.#roles.account.has(understanding.intent) && !message.asks && !cues.has('wish') &&
          (understanding.intent === request || !this.#problems.has(understanding.intent))))
    // A detail said to be one ("I use gmail if this is matter"), in a few words and no question: the request goes on.
    const detail = request !== undefined && cues.has('detail') && message.contentWords <= MAX_CORRECTION_WORDS && unasked
    // A street address while an address change waits for it, or corrects it ("oh wait its apt 3D not 3B sorry"),
    // whatever the model makes of its words.
    const address = request !== undefined && this.#roles.address.has(request) && unasked && isStreetAddress(reading.text ?? '')
    // The order the assistant asked for, given by the support system's context with a few words ("yea this one"),
    // unless the message clearly asks for something else.
    const fromContext = state.pendingIntent !== undefined && context['order_id'] !== undefined && context['order_id'] !== state.facts['order_id'] &&
      message.contentWords <= MAX_VALUE_AROUND && !asksOther
    // "and for the other order?" after an invoice: the same request for an order not named yet, whose number it asks
    // for (the order it had is not the one meant any more).
    const anotherUnnamed = orderId === undefined && request !== undefined && cues.has('another') && !asksOther && message.contentWords <= MAX_VALUE_WORDS &&
      this.#pack.intents[request].needs_order === true && state.facts['order_id'] !== undefined && ANOTHER_ORDER.test(reading.text ?? '')
    if (anotherUnnamed) {
      delete facts['order_id']
      return this.#act(turn, request, undefined, 1)
    }
    if (valueMessage || answersAsked || namesOrder || forAnother || correctsDate || slotValue || detail || address || fromContext) {
      if (request === undefined) return this.#acknowledge(turn)
      return this.#continue(turn, request)
    }

    // "what if its already been shipped tho" while changing the address: the case supposed, answered for that request.
    const supposed = this.#supposedInRequest(turn)
    if (supposed !== undefined) {
      const decision = this.#answer(turn, supposed, supposed.confidence, undefined)
      // (A case the customer tells of the order is the request's: "tracking says it was dispatched already" in a
      // cancellation is that cancellation, whatever the model reads in "tracking".)
      const active = state.topic?.intent
      // (Not a case supposed: "and if it had already shipped, what then?" asks the rule.)
      const tells = message.case !== undefined && !message.cues.has('supposing') && !IF_WORD.test(reading.text ?? '')
      if (tells && active !== undefined && isSupportIntent(active) && supposed.answer.intents.includes(active)) decision.intent = active
      // (A case told with a question of another request is that request's: "…can i cancel it?")
      if (supposed.request !== undefined) decision.intent = supposed.request
      return decision
    }

    // "back to the order, what if it already shipped?", "going back to the refund…": the request made before the one
    // just answered, with the answer among its own.
    const resumed = this.#resumed(state, reading)
    if (resumed !== undefined) {
      const within = reading.answers?.best(new Set([resumed]))
      if (within?.answer === undefined || within.confidence < this.#answerThreshold) return this.#act(turn, resumed, undefined, 1)
      const decision = this.#answer(turn, { answer: within.answer, confidence: within.confidence }, 1, undefined)
      decision.intent = resumed
      return decision
    }

    // "ok" after the assistant said it would come to another request next: that request ("ok thanks" is thanks).
    const next = previous.queued?.[0]
    if (next !== undefined && isYes(message, understanding) && !cues.has('goodbye') && !cues.has('thanks')) {
      slots.queued = previous.queued!.slice(1)
      return this.#answerOrAct(turn, next, undefined, 1, reading.answers)
    }

    // "thanks, bye", "ok I'll check my spam, thanks": a courtesy, whatever the words beside it.
    const courtesy = courtesyOf(understanding, message, reading.text ?? '')
    if (courtesy !== undefined) return this.#courtesy(turn, courtesy)

    // "I bought a lamp from you on 25 October": a statement, no request yet (known only from the message's cues),
    // unless the model is sure of a request in it; a purchase told with its date asks for nothing, however sure the
    // model, unless the pack has an answer for it ("ordered 10 min ago and forgot the flat number").
    const surest = reading.answers?.top()
    // (Or its words are a plain request the model is sure of: "just placed an order 5 min ago and put 12 elm street
    // instead of 21".)
    const answered = surest !== undefined && surest.confidence >= this.#answerThreshold &&
      (surest.answer !== undefined || (understanding.status === 'understood' && understanding.confidence >= CLEAR_REQUEST))
    // (Asked, too, when the purchase is told in a request the return window decides, with no answer sure of the words:
    // "Also I bought it on 2 November, I hope that is still ok?" in a return is that return, for its date.)
    const windowAsked = request !== undefined && this.#pack.intents[request].uses_return_window === true && cues.has('purchase') && !answered
    if (reading.slots !== undefined && (!message.asks || windowAsked) && message.situation === undefined && !understanding.angry && datedNow &&
      ((cues.has('purchase') && !answered) || understanding.status !== 'understood' || SOCIAL.has(understanding.intent) || understanding.confidence < CLEARLY_OTHER)) {
      if (request !== undefined) return this.#continue(turn, request)
      return this.#acknowledge(turn)
    }

    // Several requests at once: the first is answered now, and the others too or next.
    // (The refund asked for is the request, whatever the clauses that tell what happened ask.)
    const requests = refundWanted ? [] : this.#requests(reading.clauses, understanding, reading.answers?.top()?.answer?.id)
    const clauses = this.#questionFirst(requests)
    // "I'd like to cancel order 72105 please, and does it cost anything?", "can i cancel my order and will it cost me
    // anything": the question is answered first, and the request the customer asks to be done is the message's
    // intent and the active request.
    const wished = clauses[0] !== requests[0] && (requests[0]?.wants === true || cues.has('wish')) ? requests[0] : undefined
    const main = clauses[0] ?? this.#onlyRequest(reading.clauses, understanding)
    const own = main === undefined ? understanding : { ...main.understanding, entities, valueOnly: false, angry: understanding.angry, furious: understanding.furious }
    const answers = main === undefined ? reading.answers : main.answers

    // Right after an off-topic question, a follow-up is read as continuing it ("and how long do I bake it?").
    // ("anyway where is it right now" goes back to the request.)
    const afterAside = state.previousIntent === OUT_OF_SCOPE && !BACK_TO_TOPIC.test(reading.text ?? '')
    const inTopic = this.#inTopic(own, afterAside ? OUT_OF_SCOPE : state.topic?.intent, state.topic?.aside)
    if (inTopic.status !== 'understood') {
      const rescued = this.#rescue(turn, own, answers, inTopic.confidence)
      if (rescued !== undefined) return rescued
      if (cues.has('not_helped') && state.topic !== undefined && isSupportIntent(state.previousIntent ?? '')) return this.#notHelped(turn, this.#helpedMatter(state, state.topic))
      if (this.#vents(turn, state.topic, newOrder, answers)) return this.#act(turn, this.#roles.complaint!, undefined, probabilityOf(understanding, this.#roles.complaint!))
      if (state.topic !== undefined && isSupportIntent(state.topic.intent) && this.#addsToRequest(turn, own)) return this.#continue(turn, state.topic.intent)
      // The new address an address change waits for, which the model cannot read: the change goes on.
      if (state.topic !== undefined && this.#roles.address.has(state.topic.intent) && isStreetAddress(reading.text ?? '')) return this.#continue(turn, state.topic.intent)
      return this.#notUnderstood(turn, inTopic.status, inTopic.confidence)
    }
    // Which order, described rather than numbered ("the one from august, the standing desk"), asking nothing, saying
    // nothing a cue reads (that it did not help, yes, thanks…), read as no request the model is even half sure of: the
    // waiting or active request goes on.
    // (Not what the selector is sure is one of that request's answers: "i clicked the link in the email but it says the
    // link has expired" while resetting a password is the broken link.)
    const going = state.pendingIntent ?? state.topic?.intent
    const best = answers?.top()
    const answeredInRequest = best?.answer !== undefined && best.confidence >= SURE_ANSWER && going !== undefined && best.answer.intents.includes(going as SupportIntent)
    if (going !== undefined && isSupportIntent(going) && cues.size === 0 && inTopic.confidence < CLAUSE_CONFIDENCE && !answeredInRequest && this.#addsToRequest(turn, own)) {
      return this.#continue(turn, going)
    }

    const topic = state.topic
    let intent = inTopic.intent
    let confidence = inTopic.confidence
    let situation = inTopic.situation
    // A described situation belongs to its request ("it's too small" is a return), unless the model is sure of
    // another.
    // (Not in a request about the account, read in the message or active, where what happened to an item means nothing:
    // "can i just delete the work one, i dont need it" is no change of mind about an item.)
    const accountMatter = this.#roles.account.has(understanding.intent) || (topicIntent !== undefined && this.#roles.account.has(topicIntent) && understanding.status !== 'understood')
    // (Nor in a message that names a payment method: "and paypal? i dont really like putting my card in" says nothing
    // of an item.)
    const paymentMatter = (reading.slots?.paymentMethods?.length ?? 0) > 0
    const situationRequest = message.situation === undefined || accountMatter || paymentMatter ? undefined : this.#pack.slots.situation_requests[message.situation]
    // (Nor where a parcel is, for an item in hand: "when the parcel arrived yesterday the lid was cracked".)
    const received = message.situation !== undefined && (this.#beforeDelivery.has(intent) || intent === this.#roles.parcel) && this.#inHand.has(message.situation)
    if (refundWanted && this.#roles.refund !== undefined) {
      intent = this.#roles.refund
      situation = undefined
    } else if (situationRequest !== undefined && intent !== situationRequest && (!this.#sameFamily(intent, situationRequest) || received) && (confidence < CLEARLY_OTHER || received)) {
      intent = situationRequest
      situation = undefined
    }
    // "so it should of been there already? where is it" while a refund is chased: the refund, not a parcel, unless the
    // message names one.
    // (Its reply is the refund's, whatever late-parcel answer the words match.)
    const refundStatus = this.#roles.refund_status
    // (A return the shop has, told in a parcel's words, is the refund's too: "the tracking says your warehouse got it".)
    // (With the order number too, when the shop is said to have the return: "yeah it's 49956, the tracking says you
    // got them on nov 9".)
    const refundChased = refundStatus !== undefined && topic?.intent === refundStatus && intent === this.#roles.parcel &&
      ((orderId === undefined && !PARCEL_WORDS.test(reading.text ?? '')) || returnReceived)
    if (refundChased) {
      intent = refundStatus
      situation = undefined
    }
    // What was queued comes next when the customer asks for it, or agrees to go on.
    const queued = previous.queued ?? []
    if (queued.length > 0 && (isYes(message, understanding) || (cues.has('another') && orderId === undefined)) && !queued.includes(intent as SupportIntent)) {
      intent = queued[0]!
      confidence = 1
      situation = undefined
    }
    if (queued.includes(intent as SupportIntent)) slots.queued = queued.filter((waiting) => waiting !== intent)
    // The order number the assistant asked for completes the waiting request, unless the message clearly asks
    // for something else.
    const pending = state.pendingIntent
    if (pending !== undefined && orderId !== undefined && (intent === pending || !isSupportIntent(intent))) {
      if (intent !== pending) situation = state.topic?.intent === pending ? state.topic.situation : undefined
      intent = pending
      confidence = 1
    }

    // A shop question with nothing asked is a detail of the active request ("it's a debit card" while a payment
    // fails, "the standard one" after how long delivery takes): the request goes on with it.
    if (topic !== undefined && intent !== topic.intent && this.#questions.has(intent) && this.#sameFamily(intent, topic.intent) && !message.asks &&
      message.situation === undefined && message.contentWords <= MAX_VALUE_WORDS && state.previousIntent !== OUT_OF_SCOPE && isSupportIntent(topic.intent)) {
      return this.#continue(turn, topic.intent)
    }
    // "and with standard?" after how long express takes: the same question about another thing, when the message
    // names little else (a few words say which).
    if (topic !== undefined && intent !== topic.intent && this.#questions.has(intent) && this.#questions.has(topic.intent) &&
      this.#sameFamily(intent, topic.intent) && isFragment(reading.text ?? '') &&
      !cues.has('time') && !cues.has('price') && state.previousIntent === topic.intent) {
      intent = topic.intent
    }

    // "and the phone number" after how to change the surname: a fragment right after the active request's reply that
    // the model finds plausible for it, or after a question about the shop ("and on weekends?" after the opening
    // hours), is that request, asked of another thing.
    // (The question asked last may be an aside of the active request: "what about apple pay" after "do u take paypal".)
    const lastAsked = topic === undefined ? undefined : state.previousIntent === topic.intent ? topic.intent : state.previousIntent === topic.aside ? topic.aside : undefined
    // (After a shop question, a fragment that only names the other thing: "and is picking it up free" asks anew.)
    const namesOnly = message.contentWords <= MAX_NAMED_WORDS && !cues.has('time') && !cues.has('price')
    if (lastAsked !== undefined && intent !== lastAsked && isSupportIntent(lastAsked) && isFragment(reading.text ?? '') &&
      ((this.#questions.has(lastAsked) && namesOnly) || own.candidates.some((candidate) => candidate.intent === lastAsked && candidate.probability >= RESCUE_CANDIDATE))) {
      intent = lastAsked
    }

    // "also change it on my account so this doesnt happen again" during an address change: the same change, for the
    // account's saved addresses, unless the model is sure of another request.
    if (topic !== undefined && this.#roles.address.has(topic.intent) && intent !== topic.intent && cues.has('account_scope') && !this.#roles.address.has(intent) && confidence < CLEARLY_OTHER) {
      intent = topic.intent
    }

    // "It didn't help", said about the request just answered: its next step, or a person.
    const justAnswered = topic !== undefined && state.previousIntent !== undefined && this.#sameMatter(state.previousIntent, topic)
    // Unless the customer says whom they want instead ("that didn't work, give me your phone number").
    const asksForContact = own.status === 'understood' && this.#roles.contact.has(own.intent) && own.confidence >= PROBABLY_OTHER
    if (cues.has('not_helped') && topic !== undefined && !newOrder && !asksForContact && (this.#sameMatter(intent, topic) || justAnswered) &&
      !this.#asksElse(own, topic, reading.text, answers)) {
      return this.#notHelped(turn, this.#helpedMatter(state, topic, understanding))
    }
    if (asksForContact && cues.has('not_helped')) {
      intent = own.intent
      situation = own.situation
    }

    // Frustration vented in the middle of another request, asking nothing the pack answers ("this is the 2nd time with
    // you guys, really annoyed", "thats ridiculous, i've been shopping with you for years"): a complaint.
    if (this.#vents(turn, topic, newOrder, answers)) {
      intent = this.#roles.complaint!
      confidence = probabilityOf(understanding, intent)
      situation = undefined
    }

    // (The refund asked for after what happened is answered by the refund's reply for what happened, not by whatever
    // answer the words of the story match: "i dont even want it anymore" is no change of mind about an item in hand.)
    const decision = this.#answerOrAct(turn, intent, situation, confidence, refundWanted || refundChased ? undefined : answers, own.candidates)
    // The same reply as the last, to other words than last time and no new question: what was said did not help —
    // unless the words give something the request needs that no slot reads (a new address: "it's 14 Elm Street").
    const gives = DIGIT.test(reading.text ?? '')
    // (Not a detail or a wish added to it, "actually make the second one the red one": the reply's other wording.)
    const repeated = topic !== undefined && !newOrder && !newDate && !gives && message.situation === undefined && !message.asks && decision.intent === topic.intent &&
      !cues.has('correction') && !cues.has('wish') &&
      state.previousMessage !== undefined && normalised(state.previousMessage) !== normalised(reading.text ?? '') &&
      state.slots?.recent?.at(-1) === decision.slots.recent!.at(-1)
    if (repeated) return this.#notHelped(turn, topic.intent)
    for (const clause of clauses.slice(1)) decision.more.push(...this.#alsoAsked(turn, decision, clause))
    const wish = wished?.understanding.intent
    const asked = decision.intent
    if (wish !== undefined && isSupportIntent(wish) && isSupportIntent(asked) && decision.answer !== undefined && asked !== wish) {
      decision.topic = { intent: wish, aside: asked, asideAnswer: decision.answer.id }
      decision.intent = wish
      decision.confidence = wished!.understanding.confidence
      // The answer's reply that does the request wished for, when it has one (the fee's rule, then the cancel link).
      const { reply } = decision
      const answer = reply.kind === 'answer' ? this.#answers.get(reply.id) : undefined
      if (reply.kind === 'answer' && answer !== undefined) decision.reply = { ...reply, situations: wishFirst(answer, reply.situations) }
    }
    return decision
  }

  /**
   * The reply to `intent`: the answer to the question asked within it when the selector is sure, else its reply.
   * `answers` and `candidates` are the message's, or its first request's when it makes several.
   */
  #answerOrAct (turn: Turn, intent: IntentName, situation: string | undefined, confidence: number, answers: AnswerRanking | undefined, candidates = turn.understanding.candidates): Decision {
    // A request that hands over, or an angry complaint, is answered by handing over.
    // …and what the customer says they will do, with the order for it and no question ("great, I'll send it back
    // today. It's order 20517."), goes on with the request.
    const planOnly = turn.message.cues.has('own_plan') && turn.understanding.entities.orderId !== undefined && turn.reading.text?.includes('?') !== true
    if (isSupportIntent(intent) && this.#pack.intents[intent].handoff !== true && !(intent === this.#roles.complaint && turn.understanding.furious) && !planOnly) {
      const described = turn.message.situation === undefined ? undefined : this.#pack.slots.situation_requests[turn.message.situation]
      const topic = turn.state.topic
      // "and express?", "and my phone number": a fragment that leaves its question to the last one is answered within
      // the active request, and reported as it, whatever else its words could be.
      const fragment = topic !== undefined && topic.intent === intent && isFragment(turn.reading.text ?? '')
      // ("do u take paypal?" then "what about gift cards": the same question of the method it names.)
      const last = fragment && topic.answer !== undefined ? this.#answers.get(topic.answer) : undefined
      const sameOfMethod = last !== undefined && turn.values['payment_method'] !== undefined && last.replies['listed_method'] !== undefined
      // (Of the delivery option it names, if it names one: "and how fast is standard" after the price of express.)
      const bestWithin = fragment ? answers?.bestAmong(new Set([intent])) : undefined
      const within = sameOfMethod
        ? { answer: last, confidence: 1 }
        : bestWithin?.answer !== undefined ? this.#ofNamedOption(turn, intent, { answer: bestWithin.answer, confidence: bestWithin.confidence }) : bestWithin
      // (Not an answer about an item in hand, for a change to an order not yet delivered: "and make it 2 torches
      // instead of 1" after adding batteries is the change, not an exchange.)
      if (within?.answer !== undefined && within.confidence >= this.#answerThreshold && !this.#aboutItemInHand(intent, topic, described, within.answer)) {
        const decision = this.#answer(turn, { answer: within.answer, confidence: within.confidence }, confidence, situation)
        // (A fragment asking when or how much asks that of the thing: "and how fast is that one" is its time. One
        // right after a question asked in the request asks that question again: "does that cost anything?" then "and
        // if it's already shipped?" is the fee's.)
        const aside = topic?.aside
        const followsAside = aside !== undefined && turn.state.previousIntent === aside && within.answer.intents.includes(aside)
        if (!turn.message.cues.has('time') && !turn.message.cues.has('price')) decision.intent = followsAside ? aside : intent
        return decision
      }
      const again = this.#askedOfLastAnswer(turn, intent, answers) ?? this.#askedAgain(turn, intent) ?? this.#supposedOfLastAnswer(turn)
      if (again !== undefined) return this.#answer(turn, { answer: again, confidence: 1 }, confidence, situation)
      const found = this.#answerFor(intent, turn.state.topic, answers, candidates, described, turn.message.cues.has('time'), situation, turn.message.cues.has('price'))
      const method = this.#ofNamedMethod(turn, intent, found)
      if (method !== undefined && method !== found) {
        // (Reported as the request the message makes beside it when the model is sure of it, as a rule asked within a
        // request is, "Can I pay with a gift card? I want to order the oak desk today."; else as the question it
        // answers, "want to order a present for my mum, can I pay with a gift card?")
        const decision = this.#answer(turn, method, confidence, situation)
        decision.intent = this.#questions.has(intent) || turn.understanding.confidence >= OWN_REQUEST ? intent : method.answer.intents[0]!
        return decision
      }
      const choice = this.#ofNamedOption(turn, intent, found)
      if (choice !== undefined && !this.#aboutOtherSituation(choice.answer, turn.message.situation) && !this.#toldSituationReply(turn, intent, choice.answer)) {
        return this.#answer(turn, choice, confidence, situation)
      }
    }
    return this.#act(turn, intent, situation, confidence)
  }

  /**
   * The best answer within the request, or within the active request and the question asked in it when one of
   * theirs is more probable ("and do I pay the postage?" in a return, read as a delivery question), or the answer
   * the selector is surest of when that is far more probable and the intent model finds its request plausible too,
   * or the situation the customer describes belongs to it ("I just don't like it, can I send it back?").
   */
  #answerFor (intent: SupportIntent, topic: Topic | undefined, answers: AnswerRanking | undefined, candidates: readonly Candidate[] = [], described?: SupportIntent, timeQuestion = false, modelSituation?: string, priceQuestion = false): AnswerChoice | undefined {
    if (answers === undefined) return undefined
    const sure = candidates.some((candidate) => candidate.intent === intent && candidate.probability >= OWN_REQUEST)
    // Within a request the model is sure of, the selector's choice is weighed among that request's entries only ("how
    // long will the refund take?" shares "how long… take" with delivery times).
    const own = answers.best(new Set([intent]))
    const among = sure ? answers.bestAmong(new Set([intent])) : undefined
    const active = topic === undefined ? undefined : answers.best(new Set([topic.intent, ...topic.aside === undefined ? [] : [topic.aside]]))
    // (Not an answer only of the active request when the model is sure the message tells another problem, or makes a
    // request that is no follow-up of the active one: "Also I forget the password for the business account" after
    // switching accounts is the password; "also i moved house… how do i change that one" after the e-mail, the address.)
    const elsewhere = topic !== undefined && (this.#problems.has(intent) || (intent !== topic.intent && this.#followUps.get(topic.intent)?.has(intent) !== true))
    const otherRequest = sure && elsewhere && active?.answer?.intents.includes(intent) !== true
    let choice = active?.answer !== undefined && active.confidence > (own?.confidence ?? 0) && !otherRequest ? active : own
    const top = answers.top()
    // A request the model is sure of gives way only to an answer the selector is sure of ("have it delivered to my
    // office instead?" is an address change, whatever words it shares with store pickup).
    // Nor does a situation the model reads in the message as this request ("order N still isn't here after two
    // weeks" is a late parcel, not a late refund).
    // (Or one the request has a reply of its own for: "what if i already opened it" read as a detail the refund policy
    // does not state is that, not the after-shipping answer its words match.)
    const agreed = modelSituation !== undefined && (this.#pack.slots.situation_requests[modelSituation] === intent || this.#pack.intents[intent].replies[modelSituation] !== undefined)
    // (Or it is the active request's, fairly sure, and the model is not sure of another: "ok if i add a $6 thing its
    // free right" after the price of standard shipping, which the model reads as the cancellation fee.)
    const ofActive = top?.answer !== undefined && topic !== undefined && top.confidence >= WITHIN_SURE && top.answer.intents.includes(topic.intent as SupportIntent) &&
      described === undefined && !candidates.some((candidate) => candidate.probability >= CLEAR_REQUEST)
    if (top?.answer !== undefined && top.confidence > (choice?.confidence ?? 0) && (ofActive ||
      (top.confidence >= (sure && !top.answer.intents.includes(intent) ? SURE_ANSWER : RESCUE_CONFIDENCE) &&
      !(agreed && !top.answer.intents.includes(intent)) &&
      ((described !== undefined && top.confidence >= SURE_ANSWER && top.answer.intents.includes(described)) ||
        (top.confidence >= CERTAIN_ANSWER && (described === undefined || top.answer.intents.includes(described)) &&
          !candidates.some((candidate) => candidate.probability >= SURE_ANSWER)) ||
        candidates.some((candidate) => candidate.probability >= RESCUE_CANDIDATE && this.#plausibleFor(top, candidate.intent)) ||
        // (Or the selector is sure and the model not clearly so: "…if I add the cups will the shipping be free?", which
        // the model reads as the cancellation fee at 0.70.)
        (top.confidence >= SURE_ANSWER && described === undefined && !candidates.some((candidate) => candidate.probability >= CLEARLY_OTHER)))))) choice = top
    // A question of when or how long, or of what it costs, read as another matter (not one that follows the active
    // request) that names nothing but the active request's words is about the active request: "how many days does it
    // take?" while a refund is the topic gets its answer; "is that free" after a question about sending it back, which
    // the model reads as delivery prices, the active request's answer about a price.
    const asking = timeQuestion ? 'time' : priceQuestion ? 'price' : undefined
    if (asking !== undefined && topic !== undefined && intent !== topic.intent && intent !== topic.aside && this.#followUps.get(topic.intent)?.has(intent) !== true) {
      const current = new Set<IntentName>([topic.intent, ...topic.aside === undefined ? [] : [topic.aside]])
      // (Or one of its answers, but only among all the selector's, as likely as any: "until when I can do it?".)
      const weak = choice === undefined || choice.confidence < this.#answerThreshold
      if ((weak || choice?.answer?.intents.some((name) => current.has(name)) !== true) && answers.namesNothingBut(current, intent, asking)) {
        const inTopic = asking === 'time' ? answers.bestAmong(current) : this.#pricedAmong(current, answers)
        if (inTopic?.answer !== undefined) choice = inTopic
      }
    }
    if (choice === own && choice?.answer !== undefined && among !== undefined && among.confidence >= WITHIN_SURE) choice = among
    // A question of when or how long within a request, with no answer sure enough: the request's answers about time,
    // by the facts they state ("how long are refunds supposed to take anyway?" is the refund's processing time).
    // (Not when the request asked plainly is what the selector finds: "how long will it take to arrive then?")
    const plain = own !== undefined && own.answer === undefined && own.confidence >= this.#answerThreshold
    if (timeQuestion && !plain && (choice?.answer === undefined || choice.confidence < this.#answerThreshold)) {
      const timed = answers.bestWhere((answer) => answer.intents.includes(intent) && this.#reportedFor(this.#reportedAs.time, answer) === intent)
      if (timed?.answer !== undefined) choice = timed
    }
    // The same for what something costs ("would the return cost me anything?" in a return: the return postage).
    if (priceQuestion && !timeQuestion && !plain && (choice?.answer === undefined || choice.confidence < this.#answerThreshold)) {
      const priced = answers.bestWhere((answer) => answer.intents.includes(intent) && this.#reportedFor(this.#reportedAs.price, answer) !== undefined)
      if (priced?.answer !== undefined) choice = priced
    }
    // A change to an order not yet delivered, with nothing told of an item in hand ("can i just swap the blue mug for
    // the black one in that order"), is the change itself, not the exchange of a delivered item.
    // (An order being cancelled has not shipped either: "dont cancel it. can i just swap the blue mug for the black one".)
    if (choice?.answer !== undefined && this.#aboutItemInHand(intent, topic, described, choice.answer)) return undefined
    return choice?.answer !== undefined && choice.confidence >= this.#answerThreshold ? { answer: choice.answer, confidence: choice.confidence } : undefined
  }

  /**
   * The subject the answer just given, or the active request's, names (`names`: discount codes), if any: a message that
   * leaves it out speaks of it still ("i typed it in lower case, is that a problem?").
   */
  #subjectNamed (state: DialogueState): readonly string[] | undefined {
    const given = [this.#lastAnswer(state), ...[state.topic?.answer, state.topic?.asideAnswer].map((id) => id === undefined ? undefined : this.#answers.get(id))]
    return given.find((answer) => answer?.names !== undefined)?.names
  }

  /** The answer the last reply gave, if it gave one. */
  #lastAnswer (state: DialogueState): DomainAnswer | undefined {
    const key = state.slots?.recent?.at(-1)
    const replied = key === undefined ? undefined : repliedWith(key)
    return replied?.kind === 'answer' ? this.#answers.get(replied.name) : undefined
  }

  /**
   * The situations of an answer's reply. A request the model is sure the message makes, asked with a question about
   * a rule of another request's that the answer is for ("can i cancel order 5521? will it cost anything?"), is wished
   * for as much as said so: the reply that does it first (its `wish` reply, with the request's link).
   */
  #answerSituations (turn: Turn, answer: DomainAnswer, own: SupportIntent | undefined): string[] {
    const situations = this.#situations(turn, answer.replies, undefined)
    // (Not a case supposed: "if i close my account do you delete my data?" asks what would happen.)
    const requested = own !== undefined && own !== answer.intents[0] && !this.#questions.has(own) &&
      !turn.message.cues.has('supposing') && !OPENS_WITH_IF.test(turn.reading.text ?? '')
    return requested ? wishFirst(answer, situations) : situations
  }

  /**
   * A payment method of the pack's list named in the shop's question about payment methods ("can i use paypal
   * instead?"): the answer that says it is accepted, whatever answer the other words match.
   */
  #ofNamedMethod (turn: Turn, intent: SupportIntent, found: AnswerChoice | undefined): AnswerChoice | undefined {
    const question = this.#paymentQuestion(turn, intent)
    if (question === undefined) return undefined
    // (An answer of the question's own that the selector found stands: "can I pay the rest of my gift card with Visa?")
    if (found?.answer.intents.includes(question) === true) return found
    const answer = this.#pack.answers.find((candidate) => candidate.intents[0] === question && candidate.replies['listed_method'] !== undefined)
    return answer === undefined ? undefined : { answer, confidence: 1 }
  }

  /**
   * The question about paying that a message naming a listed method asks: its own intent's, or, in another request
   * about paying, asked with a question mark, the payment question the model also reads ("gonna order a jacket for my
   * brother, can I use a gift card?").
   */
  #paymentQuestion (turn: Turn, intent: SupportIntent): SupportIntent | undefined {
    if (turn.values['payment_method'] === undefined || !this.#roles.payment.has(intent)) return undefined
    if (this.#questions.has(intent)) return intent
    if (turn.reading.text?.includes('?') !== true) return undefined
    return [...this.#roles.payment].find((name) => this.#questions.has(name) && probabilityOf(turn.understanding, name) >= RESCUE_CANDIDATE) as SupportIntent | undefined
  }

  /**
   * The answer about the one delivery option the message names, in place of one about another option or of none
   * ("how fast is pickup" shares "fast" with express; "pickup how many days" is no standard delivery).
   */
  #ofNamedOption (turn: Turn, intent: SupportIntent, choice: AnswerChoice | undefined): AnswerChoice | undefined {
    const named = turn.message.deliveryOptions
    // (Of a message of several questions, each its own: "whats the price of the quicker one? and is pickup free")
    if (named?.length !== 1 || (turn.reading.clauses?.length ?? 0) > 1) return choice
    const option = named[0]!
    const answer = this.#optionAnswers.get(option)
    if (answer === undefined || !answer.intents.includes(intent)) return choice
    // (An answer about the option named, or about no one option, stands: "is there parking at the pickup store?")
    const about = choice?.answer.states.length === 1 ? choice.answer.states[0]! : undefined
    if (choice !== undefined && (about === option || about === undefined || !this.#optionAnswers.has(about))) return choice
    return { answer, confidence: 1 }
  }

  /**
   * The last answer again, for a case supposed that it has a reply of its own for: "what if it was broken when it
   * came?" right after what sending it back costs is that answer, for a faulty item.
   */
  #supposedOfLastAnswer (turn: Turn): DomainAnswer | undefined {
    const { message } = turn
    if (!message.cues.has('supposing') || message.situation === undefined) return undefined
    const last = this.#lastAnswer(turn.state)
    return last?.replies[message.situation] !== undefined ? last : undefined
  }

  /**
   * The active request's last answer, asked for again ("sorry what was the review link again?" after an aside), when
   * the message is about that request.
   */
  #askedAgain (turn: Turn, intent: SupportIntent): DomainAnswer | undefined {
    const topic = turn.state.topic
    if (!turn.message.cues.has('again') || topic === undefined || topic.answer === undefined || topic.intent !== intent) return undefined
    return this.#answers.get(topic.answer)
  }

  /**
   * The answer just given, asked again of when or what it costs: "how many days does it take with that?", "and how
   * quick is that" right after the answer about one delivery option is that option's, not the option the selector
   * finds for the words alone. Only a question that names nothing but when or what it costs, of an answer about one
   * thing (it states one fact) that says when or what it costs (`reported_as`), and belongs to the request asked.
   */
  #askedOfLastAnswer (turn: Turn, intent: SupportIntent, answers: AnswerRanking | undefined): DomainAnswer | undefined {
    const { message } = turn
    const asking = message.cues.has('time') ? 'time' : message.cues.has('price') ? 'price' : undefined
    if (asking === undefined || !message.asks || answers === undefined) return undefined
    const last = this.#lastAnswer(turn.state)
    if (last === undefined || last.states.length !== 1 || this.#reportedFor(this.#reportedAs[asking], last) === undefined) return undefined
    return last.intents.includes(intent) && answers.namesNothingBut(new Set(), undefined, asking) ? last : undefined
  }

  /**
   * Whether the intent model's reading `intent` fits the selector's answer: one of the answer's requests, or when the
   * selector is sure, one whose follow-ups include the answer's home ("how long does a parcel trace take?" read as a
   * delivery-time question is the tracking answer's).
   */
  #plausibleFor (ranked: RankedEntry, intent: IntentName): boolean {
    const intents = ranked.answer?.intents ?? []
    return intents.includes(intent as SupportIntent) || (ranked.confidence >= SURE_ANSWER && this.#followUps.get(intent)?.has(intents[0]!) === true)
  }

  /** An off-topic or unclear message that the answer selector is sure is a question the pack answers. */
  #rescue (turn: Turn, understanding: Understanding, answers: AnswerRanking | undefined, confidence: number): Decision | undefined {
    if (answers === undefined || understanding.coverage < MIN_COVERAGE) return undefined
    // Not a message the model is all but certain is off topic ("btw do you know if its gonna snow this weekend"),
    // whatever words it shares with an answer.
    if (surelyOffTopic(understanding)) return undefined
    const topic = turn.state.topic
    // A question of the active request ("do you need a photo of it?" in a return) is answered, even after an aside.
    const inTopic = topic === undefined ? undefined : this.#answerFor(topic.intent, topic, answers)
    // Any other: right after an off-topic question the customer is still off-topic ("and how long do I bake it?"),
    // and the intent model must find the answer's request plausible too (the selector reads only shared words).
    const vague = topic === undefined ? undefined : this.#vagueTimeQuestion(turn, understanding, answers, topic)
    if (vague !== undefined) return this.#answer(turn, vague, vague.confidence, understanding.situation)
    // "What do you need from me to sort this out?" in a return: a short question that names nothing, which the model
    // takes for off-topic but not clearly, asks about the active request: its own reply for what happened.
    if (topic !== undefined && isSupportIntent(topic.intent) && this.#vagueQuestion(turn, understanding, answers)) return this.#act(turn, topic.intent, topic.situation, 1)
    const top = inTopic ?? (turn.state.previousIntent === OUT_OF_SCOPE ? undefined : answers.top())
    if (top?.answer === undefined || top.confidence < RESCUE_CONFIDENCE) return undefined
    const choice: AnswerChoice = { answer: top.answer, confidence: top.confidence }
    if (inTopic === undefined && !understanding.candidates.some((candidate) => candidate.probability >= RESCUE_CANDIDATE && choice.answer.intents.includes(candidate.intent as SupportIntent))) return undefined
    return this.#answer(turn, choice, Math.max(confidence, choice.confidence), understanding.situation)
  }

  /**
   * Whether what happened is told of an item (not a parcel on its way) and belongs to a request other than the refund
   * (a part missing from the parcel), so that a refund wished for it is a request of its own.
   */
  #refundNotItsRequest (situation: string | undefined): boolean {
    if (situation === undefined || this.#parcels.has(situation) || this.#roles.refund === undefined) return false
    const request = this.#pack.slots.situation_requests[situation]
    return request !== undefined && request !== this.#roles.refund
  }

  /**
   * A question supposing a case (the `supposing` cue: "what if…", "and if…") that the selector is fairly sure of an
   * answer for (RESCUE_CONFIDENCE) which supposes a case of its own (`supposes`), asked inside a request: the answer
   * for that case that is the active request's own (its home, else one of its requests) — "what if it ships before i
   * get to do it" while changing an order is no cancellation's answer. None when the active request has none, or the
   * model is sure of a request that is neither the active one nor one of its follow-ups. So too a question with the
   * case told as having happened (the `cases` slot: "it already says shipped. so i cant cancel it anymore?").
   */
  #supposedInRequest (turn: Turn): (AnswerChoice & { request?: SupportIntent }) | undefined {
    const { message, state, understanding, reading } = turn
    const topic = state.topic
    if (topic === undefined || !isSupportIntent(state.previousIntent ?? '')) {
      // "if i cancel my order now, you charge me something? it was sended yesterday": the case told, for the request
      // the model is sure the message asks about.
      const sure = understanding.status === 'understood' && understanding.confidence >= CLEARLY_OTHER
      const told = sure && message.case !== undefined && message.asks ? this.#caseAnswer(message.case, understanding.intent) : undefined
      return told === undefined ? undefined : { answer: told, confidence: 1 }
    }
    if (understanding.status === 'understood' && understanding.confidence >= CLEARLY_OTHER && !this.#sameMatter(understanding.intent, topic)) return undefined
    // "it already says shipped. so i cant cancel it anymore?": the case told, asked about within the request; or told
    // alone, in a few words, which asks what now ("it says it's already been shipped" in a cancellation).
    // (Or, asked of a request the message reads as, more likely than not: "it just says in transit… can i cancel it?"
    // while a late parcel is tracked.)
    const ownRequest = message.asks && understanding.status === 'understood' && understanding.confidence >= CLAUSE_CONFIDENCE ? understanding.intent : undefined
    const told = message.case !== undefined && (message.asks || message.contentWords <= MAX_VALUE_WORDS) ? this.#caseAnswer(message.case, topic.intent) : undefined
    if (told !== undefined) return { answer: told, confidence: 1 }
    const toldOfOwn = message.case !== undefined && ownRequest !== undefined && isSupportIntent(ownRequest) ? this.#caseAnswer(message.case, ownRequest) : undefined
    if (toldOfOwn !== undefined) return { answer: toldOfOwn, confidence: 1, request: ownRequest as SupportIntent }
    if (!message.cues.has('supposing')) return undefined
    const top = reading.answers?.top()
    if (top?.answer?.supposes === undefined || top.confidence < RESCUE_CONFIDENCE || top.answer.intents[0] === topic.intent) return undefined
    const own = this.#caseAnswer(top.answer.supposes, topic.intent)
    return own === undefined ? undefined : { answer: own, confidence: top.confidence }
  }

  /** The request's own answer for a case (`supposes`), or one of another request's it belongs to as well. */
  #caseAnswer (supposes: string, request: IntentName): DomainAnswer | undefined {
    const cases = this.#pack.answers.filter((answer) => answer.supposes === supposes)
    return cases.find((answer) => answer.intents[0] === request) ?? cases.find((answer) => answer.intents.includes(request as SupportIntent))
  }

  /**
   * The request a message says it goes back to ("back to the order…") when another was answered since: the latest
   * support request among the last replies other than the one the last reply was for.
   */
  #resumed (state: DialogueState, reading: MessageReading): SupportIntent | undefined {
    if (!isSupportIntent(state.previousIntent ?? '') || !(reading.text ?? '').split(CLAUSE_BREAK).some((clause) => BACK_TO_REQUEST.test(clause.trimStart()))) return undefined
    const recent = state.slots?.recent ?? []
    const last = recent.length === 0 ? undefined : this.#requestOf(recent.at(-1)!)
    for (let i = recent.length - 2; i >= 0; i--) {
      const intent = this.#requestOf(recent[i]!)
      if (intent !== undefined && intent !== last) return intent
    }
    return undefined
  }

  /** The request a reply (a replyKey) was for: an answer's first request, or the intent replied to. */
  #requestOf (key: string): SupportIntent | undefined {
    const replied = repliedWith(key)
    if (replied.kind === 'answer') return this.#answers.get(replied.name)?.intents[0]
    return replied.kind === 'intent' && isSupportIntent(replied.name) ? replied.name : undefined
  }

  /**
   * Whether the message vents about a request other than a complaint: angry, or read as a complaint first, with a
   * complaint among the model's candidates (0.15) and no other request it is fairly sure of, nothing that happened to
   * an item, no new order and no answer of the pack's the selector is fairly sure of.
   */
  #vents (turn: Turn, topic: Topic | undefined, newOrder: boolean, answers: AnswerRanking | undefined): boolean {
    const { understanding, message } = turn
    const complaint = this.#roles.complaint
    if (complaint === undefined || topic === undefined || topic.intent === complaint || message.situation !== undefined || newOrder) return false
    if (!understanding.angry && understanding.candidates[0]?.intent !== complaint) return false
    if (!understanding.candidates.some((candidate) => candidate.intent === complaint && candidate.probability >= VENTED_COMPLAINT)) return false
    if (understanding.candidates.some((candidate) => candidate.intent !== complaint && candidate.probability >= PROBABLY_OTHER)) return false
    return (answers?.top()?.confidence ?? 0) < RESCUE_CONFIDENCE
  }

  /**
   * A statement (no question) in the middle of a request, which the model does not find clearly off topic: what the
   * customer adds to the matter at hand ("checked with the neighbours", "both on my visa", "maybe my husband did, we
   * share the email"), not an aside. Up to MAX_VAGUE_WORDS content words below ADDED_OFF_TOPIC, up to MAX_ADDED_WORDS
   * below LONGER_ADDED_OFF_TOPIC.
   */
  #addsToRequest (turn: Turn, understanding: Understanding): boolean {
    const { message, state, reading } = turn
    if (message.asks || (reading.text ?? '').includes('?') || message.contentWords === 0 || message.contentWords > MAX_ADDED_WORDS) return false
    if (state.previousIntent === OUT_OF_SCOPE || !isSupportIntent(state.previousIntent ?? '') || understanding.coverage < MIN_COVERAGE) return false
    // (An apology that corrects no value is about the conversation: "sorry for the rant btw, long week lol".)
    const { entities } = turn.understanding
    if (message.cues.has('correction') && entities.orderId === undefined && entities.date === undefined && entities.email === undefined) return false
    // (A longer one only when the model finds it less likely off topic than not.)
    const bound = message.contentWords <= MAX_VAGUE_WORDS ? ADDED_OFF_TOPIC : LONGER_ADDED_OFF_TOPIC
    return !understanding.candidates.some((candidate) => candidate.intent === OUT_OF_SCOPE && candidate.probability >= bound)
  }

  /**
   * A short question (at most MAX_VAGUE_WORDS content words) that the model is not clearly sure is off topic and
   * whose words the answer selector barely knows: it names no matter of its own, so it is about the one at hand.
   */
  #vagueQuestion (turn: Turn, understanding: Understanding, answers: AnswerRanking): boolean {
    const { message, state } = turn
    if (!message.asks || message.contentWords > MAX_VAGUE_WORDS || state.previousIntent === OUT_OF_SCOPE || message.situation !== undefined) return false
    if (surelyOffTopic(understanding)) return false
    const top = answers.top()
    // (Nor one whose best answer belongs to another matter than the one at hand, the model finding that matter no
    // more likely than a tenth: "so what happens now, do i get another one?" after a late parcel shares its words
    // with a missing item's answer.)
    const request = state.topic?.intent
    const elsewhere = top?.answer !== undefined && request !== undefined && !top.answer.intents.includes(request as SupportIntent) &&
      !understanding.candidates.some((candidate) => candidate.probability >= RESCUE_CANDIDATE && top.answer!.intents.includes(candidate.intent as SupportIntent))
    return top === undefined || top.confidence < RESCUE_CONFIDENCE || elsewhere
  }

  /**
   * "How long is that supposed to take??" in a refund: a question of time in a few words that names nothing but the
   * active request's, which the model is not clearly sure is off topic, asks about the active request's time.
   */
  #vagueTimeQuestion (turn: Turn, understanding: Understanding, answers: AnswerRanking, topic: Topic): AnswerChoice | undefined {
    const { message, state } = turn
    if (!message.cues.has('time') || !message.asks || message.contentWords > MAX_VALUE_WORDS || state.previousIntent === OUT_OF_SCOPE) return undefined
    if (surelyOffTopic(understanding)) return undefined
    const current = new Set<IntentName>([topic.intent, ...topic.aside === undefined ? [] : [topic.aside]])
    if (!answers.namesNothingBut(current)) return undefined
    const best = answers.bestAmong(current)
    return best?.answer === undefined ? undefined : { answer: best.answer, confidence: best.confidence }
  }

  /**
   * The answer about a price of the requests in `current`, those a request comes first or second in before the rest
   * (a cancellation's fee before the return postage, which a cancelled order can also come to).
   */
  #pricedAmong (current: ReadonlySet<IntentName>, answers: AnswerRanking): RankedEntry | undefined {
    const pricedIn = (places: number): RankedEntry | undefined => answers.bestWhere((answer) =>
      answer.intents.slice(0, places).some((name) => current.has(name)) && this.#reportedFor(this.#reportedAs.price, answer) !== undefined)
    return pricedIn(2) ?? pricedIn(Infinity)
  }

  /**
   * The active request's reading of an answer, where the conversation so far says what the message is about:
   * - a question right after a question asked in the request (an aside), that the model is not sure is a request of
   *   its own or that supposes a case, is about the same rules ("do I have to pay to send it back?", then "do you need
   *   pictures of it?"; "does it cost anything to cancel?", then "what if its already shipped");
   * - a fact told, with no question, within the request the answer belongs to ("it already says shipped tho" in a
   *   cancellation) is that request's;
   * - a question of the active request's own answers, while what happened keeps to that request ("it was delivered on
   *   the 9th, is that too late to report it?" about a missing part), is that request's, when the request the model
   *   reads in it has nothing to say about what happened (tracking, for a missing part).
   */
  #inTopicReport (turn: Turn, answer: DomainAnswer, own: SupportIntent | undefined): SupportIntent | undefined {
    const current = turn.state.topic
    if (current === undefined) return undefined
    const { message } = turn
    const aside = current.aside
    if (aside !== undefined && turn.state.previousIntent === aside && answer.intents.includes(aside) && message.asks &&
      (own === undefined || message.cues.has('supposing'))) return aside
    const unasked = !message.asks && turn.reading.text?.includes('?') !== true
    if (unasked && (own === undefined || own === current.intent) && answer.intents.includes(current.intent)) return current.intent
    const situation = turn.slots.situation
    if (situation !== undefined && answer.intents[0] === current.intent && this.#pack.slots.situation_requests[situation] === current.intent &&
      (own === undefined || this.#pack.intents[own].replies[situation] === undefined)) return current.intent
    return undefined
  }

  /**
   * The decision to give an answer. The intent reported is the request the message itself makes when the model is
   * sure of it and the answer belongs to it ("I want to send them back, they don't fit" is a refund); otherwise a
   * question about a rule is that rule's, the answer's home ("and do I pay the postage?" is the refund policy,
   * whatever request it was asked in). A question leaves the active request active, and so does a question the model
   * is sure is another request the answer belongs to as well ("how long till the money is back?" in a return): the
   * answer is given beside it. A new problem told ("it says my e-mail is taken") becomes the active request.
   */
  #answer (turn: Turn, choice: AnswerChoice, confidence: number, modelSituation?: string): Decision {
    const { answer } = choice
    const home = answer.intents[0]!
    const current = turn.state.topic
    const asked = this.#askedAs(turn, answer)
    const own = asked === undefined ? this.#ownRequest(turn.understanding, answer) : undefined
    // The model reading a question about the customer's own item as the rule (the answer's home) is overruled.
    const reported = asked ?? this.#inTopicReport(turn, answer, own) ?? this.#ruleQuestion(turn, answer, own) ?? (own === home ? undefined : own) ?? this.#aboutOwnPurchase(turn, answer) ?? own ?? home
    // (A new problem told, not asked about, is no question beside the request: "it says my e-mail is taken".)
    const toldProblem = own !== undefined && this.#problems.has(own) && turn.reading.text?.includes('?') !== true
    const beside = own !== undefined && current !== undefined && current.intent !== own && !this.#questions.has(own) && !toldProblem &&
      answer.intents.includes(current.intent) && turn.message.asks
    const intent = beside ? current.intent : reported
    const active = beside ? current : this.#activeAfter(current, intent)
    const topic: Topic = beside || active.aside === reported ? { ...active, aside: reported, asideAnswer: answer.id } : { ...active, answer: answer.id }
    const described = turn.slots.situation ?? modelSituation
    if (described !== undefined && topic.intent === intent) topic.situation = described
    const decision = this.#base(turn, {
      intent,
      confidence,
      reply: { kind: 'answer', id: answer.id, situations: this.#answerSituations(turn, answer, own) },
      handoff: false,
      topic,
      answer: { id: answer.id, confidence: choice.confidence }
    })
    // An answer within a request that needs the order (a late parcel, a faulty item): then the order number.
    if (turn.facts['order_id'] === undefined && this.#pack.intents[intent].needs_order === true && this.#pack.intents[home].needs_order === true) {
      decision.pendingIntent = intent
      decision.more.push({ intent, reply: { kind: 'intent', situations: ['ask_order'] } })
    } else {
      this.#resume(turn, decision)
    }
    // …unless that other request is no follow-up of the active one: "could I swap it for the black one?" in a
    // return is that return's exchange, not an order change.
    decision.intent = beside && asked === undefined && !this.#sameFamily(own, current.intent) ? current.intent : reported
    // The model's probability for the request it read, or for the rule's intent the selector's for its answer.
    if (own === undefined) decision.confidence = choice.confidence
    return decision
  }

  /**
   * The intent of a question about when or how long, by the facts its answer states ("how fast is express?" is a
   * delivery time, "when do I get my money back?" the refund rule), whatever request it was asked in, unless a price
   * is asked first.
   */
  #askedAs (turn: Turn, answer: DomainAnswer): SupportIntent | undefined {
    // A time and a price asked together ask about the option as a whole ("how fast is express and what does it
    // cost" is delivery_options); a time asked after a question of its own ("can i pick it up in store? how quick is that") is about what that
    // question asked.
    const at = turn.message.cueAt ?? {}
    if (at.time === undefined || at.price !== undefined) return undefined
    // A problem of the customer's own in progress, told with when it started or that it still isn't solved ("sent my
    // return back 2 weeks ago and still no money. how long does this take??"), is that problem, as the model is sure.
    const { understanding } = turn
    if (understanding.status === 'understood' && this.#problems.has(understanding.intent) && understanding.confidence >= CLEAR_REQUEST &&
      answer.intents.includes(understanding.intent as SupportIntent) && (turn.message.cues.has('not_helped') || understanding.entities.date !== undefined)) {
      return understanding.intent as SupportIntent
    }
    const text = turn.reading.text ?? ''
    const question = text.indexOf('?')
    if (question >= 0 && question < text.length - 1) {
      const before = stemsOf(text.slice(0, question))
      if (before.length <= at.time && contentWordCount(before) >= MAX_VALUE_AROUND) return undefined
    }
    return this.#reportedFor(this.#reportedAs.time, answer)
  }

  /**
   * The intent of a question about an item the customer has bought, by the facts its answer states ("can I still
   * return it?" once the purchase date or the order is known, or in a return, is that return): a request, not a rule.
   */
  #aboutOwnPurchase (turn: Turn, answer: DomainAnswer): SupportIntent | undefined {
    const intent = this.#reportedFor(this.#reportedAs.own_purchase, answer)
    const told = turn.message.situation !== undefined || turn.state.topic?.intent === intent
    return told ? intent : undefined
  }

  #reportedFor (byFact: Readonly<Record<string, SupportIntent>>, answer: DomainAnswer): SupportIntent | undefined {
    for (const fact of answer.states) {
      const intent = byFact[fact.split('.', 1)[0]!]
      if (intent !== undefined && answer.intents.includes(intent)) return intent
    }
    return undefined
  }

  /**
   * A question about the rule rather than a request, when it says no wish: one that gives its own purchase date and
   * names no order ("can I still return a jacket I bought on October 28?"; with the order named, "order 12877, bought
   * it on 1 March", it is that order's request), one that supposes a case, or one that asks what something costs. Its
   * intent is the rule's: the first of the answer's intents that is a question about the shop.
   */
  #ruleQuestion (turn: Turn, answer: DomainAnswer, own: SupportIntent | undefined): SupportIntent | undefined {
    const { message, understanding, reading } = turn
    if (reading.text?.includes('?') !== true || message.cues.has('wish')) return undefined
    // (A date told in a request the answer is the reply to asks no rule: "where is my package?? ordered 2 weeks ago".)
    const request = own !== undefined && own === answer.intents[0] && !this.#questions.has(own)
    // "and if it already shipped can I still cancel it?": a case supposed, not the customer's own, asks the rule too.
    // (Not with what happened to the item told: "I buy a jacket on 28 of october, it is too small. I can still return it?"
    // is that return.)
    const dated = understanding.entities.date !== undefined && understanding.entities.orderId === undefined && turn.newDate && !request &&
      message.situation === undefined
    // "do I have to pay for shipping them back? they came broken": what something costs asks the rule as well.
    if (!dated && !message.cues.has('supposing') && !message.cues.has('price')) return undefined
    return answer.intents.find((intent) => this.#questions.has(intent))
  }

  /** The request the message makes, when the answer given belongs to it and the model is sure of it. */
  #ownRequest (understanding: Understanding, answer: DomainAnswer): SupportIntent | undefined {
    const own = understanding.intent
    return isSupportIntent(own) && answer.intents.includes(own) && understanding.confidence >= OWN_REQUEST ? own : undefined
  }

  /** The decision to answer `intent` with its own reply: its situation, whether it waits for an order, the topic. */
  #act (turn: Turn, intent: IntentName, situation: string | undefined, confidence: number): Decision {
    const { state, understanding, facts } = turn
    const definition = this.#pack.intents[intent]
    const angry = intent === this.#roles.complaint && understanding.furious
    const support = isSupportIntent(intent)
    // About the account, not an order ("where do I change the address in my account?"): its reply for the account.
    // (The order the conversation knows does not make it about that order: "change it on my account too".)
    const accountScoped = understanding.entities.orderId === undefined && turn.message.cues.has('account_scope') && definition.replies['account_scope'] !== undefined
    const asking = support && definition.needs_order === true && facts['order_id'] === undefined && !accountScoped
    // Asking for the order, the reply for the situation comes first when it can be said without the order.
    const situations = asking
      ? [...this.#situations(turn, definition.replies, situation).filter((name) => name !== 'default'), 'ask_order']
      : accountScoped ? ['account_scope'] : angry ? ['angry', 'default'] : this.#situations(turn, definition.replies, situation)
    let topic: Topic | undefined = state.topic
    if (support) {
      topic = this.#activeAfter(state.topic, intent)
      const described = turn.slots.situation ?? situation
      if (topic.intent === intent && described !== undefined) topic.situation = described
    }
    const decision = this.#base(turn, {
      intent,
      confidence,
      reply: { kind: 'intent', situations },
      handoff: definition.handoff === true || angry,
      ...(topic === undefined ? {} : { topic })
    })
    // A courtesy or an off-topic question leaves a waiting request waiting; goodbye ends it.
    const waiting = asking ? intent : !support && intent !== 'goodbye' ? state.pendingIntent : undefined
    if (waiting !== undefined) decision.pendingIntent = waiting
    else delete decision.pendingIntent
    if (!asking) this.#resume(turn, decision)
    return decision
  }

  /** The active request after answering `intent`: a question about the shop leaves another request active. */
  #activeAfter (topic: Topic | undefined, intent: SupportIntent): Topic {
    if (topic !== undefined && topic.intent !== intent && this.#questions.has(intent) && !this.#questions.has(topic.intent)) {
      return { ...withoutAside(topic), aside: intent }
    }
    return { intent }
  }

  /** A value for the active request: answered with the answer it got, or its reply, the new value first. */
  #continue (turn: Turn, active: SupportIntent): Decision {
    const { state } = turn
    const topic = state.topic
    // A purchase date after a question about the return window (asked in the middle of the request) answers it; after
    // another question of that request's (what the return postage costs), it goes on with the request.
    const aside = topic?.aside
    const asideAnswer = topic?.asideAnswer === undefined ? undefined : this.#answers.get(topic.asideAnswer)
    const aboutWindow = asideAnswer === undefined || WINDOW_SITUATIONS.some((situation) => asideAnswer.replies[situation] !== undefined)
    const request = aside !== undefined && turn.newDate && state.pendingIntent === undefined && this.#pack.intents[aside].uses_return_window === true && aboutWindow ? aside : active
    const answerId = request === aside ? topic?.asideAnswer : state.pendingIntent === undefined || state.pendingIntent === topic?.intent ? topic?.answer : undefined
    const answer = answerId === undefined ? undefined : this.#answers.get(answerId)
    // A purchase date the answer cannot speak to is answered by the request's reply, which reasons with it.
    // A new address is answered by the change's own reply, with its link, not by the answer about the change.
    const newAddress = this.#roles.address.has(request) && isStreetAddress(turn.reading.text ?? '')
    // An order number given for an answer none of whose replies names an order ("specifically the one for order 51877"
    // after where all the invoices are) is answered by the request's own reply, for that order.
    const orderUnused = turn.understanding.entities.orderId !== undefined && answer !== undefined &&
      !Object.values(answer.replies).some((templates) => templates?.some((template) => template.includes('{order_id}')))
    // (A date the answer speaks to only for another part of the window, "bought on October 28" for an answer with a
    // reply only for when the window has closed, is the request's too: its reply says until when.)
    // (A request the return window does not decide has no reply that reasons with a date: its answer stands, "Order
    // number is 73388, I bought it on 12 November" after a parcel shown delivered but not there.)
    const speaksToDate = !turn.newDate || this.#pack.intents[request].uses_return_window !== true ||
      this.#windowNow(turn).some((situation) => answer?.replies[situation] !== undefined)
    if (answer !== undefined && answer.intents.includes(request) && !newAddress && !orderUnused && speaksToDate) {
      // The order number given for an answer that says what it does with one ("Order #60231" after asking for an
      // invoice with the company's name): that reply, with the order.
      const own = this.#situations(turn, answer.replies, undefined)
      const situations = turn.understanding.entities.orderId !== undefined ? wishFirst(answer, own) : own
      return this.#base(turn, {
        intent: request,
        confidence: 1,
        reply: { kind: 'answer', id: answer.id, situations },
        handoff: false,
        topic: topic!,
        answer: { id: answer.id, confidence: 1 }
      })
    }
    const situation = state.pendingIntent === undefined || state.pendingIntent === topic?.intent ? topic?.situation : undefined
    const decision = this.#act(turn, request, situation, 1)
    if (topic !== undefined && topic.intent === request && topic.aside !== undefined) decision.topic = { ...decision.topic!, aside: topic.aside }
    return decision
  }

  /** Where the purchase date the conversation knows stands in the return window, the most specific first. */
  #windowNow (turn: Turn): string[] {
    const purchaseDate = turn.facts['purchase_date']
    if (typeof purchaseDate !== 'string') return []
    const { situation } = returnWindow(purchaseDate, turn.today, this.#pack.policies.return_window_days)
    return situation === 'window_last_day' ? [situation, 'inside_window'] : [situation]
  }

  /** A value or a statement with no request yet: noted, and the customer asked what they need. */
  #acknowledge (turn: Turn): Decision {
    const intent = turn.message.cues.has('greeting') ? 'greeting' : OUT_OF_SCOPE
    const decision = this.#base(turn, { intent, confidence: 1, reply: { kind: 'fallback', name: 'value_without_request' }, handoff: false })
    decision.slots.pending = 'request'
    return decision
  }

  /** The request's next step when its answer did not help; then a person is offered; then one takes over. */
  #notHelped (turn: Turn, intent: SupportIntent): Decision {
    const recent = turn.state.slots?.recent ?? []
    const topic = turn.state.topic ?? { intent }
    const nextStep = this.#pack.intents[intent].replies['not_helped']
    // The next step is no step when the answer just given already said it, word for word.
    const lastAnswer = this.#lastAnswer(turn.state)
    const saidAlready = lastAnswer !== undefined && nextStep !== undefined &&
      Object.values(lastAnswer.replies).some((templates) => templates?.some((template) => nextStep.includes(template)))
    if (nextStep !== undefined && !saidAlready && !recent.includes(replyKey(intent, { kind: 'intent', situations: ['not_helped'] }, turn.facts, turn.values))) {
      return this.#base(turn, { intent, confidence: 1, reply: { kind: 'intent', situations: ['not_helped'], otherwise: 'not_helped' }, handoff: false, topic })
    }
    if (recent.at(-1) === 'fallback:not_helped' && this.#person !== undefined) return this.#act(turn, this.#person, undefined, 1)
    const decision = this.#base(turn, { intent, confidence: 1, reply: { kind: 'fallback', name: 'not_helped' }, handoff: false, topic })
    decision.slots.pending = 'offer_person'
    return decision
  }

  /** Thanks or goodbye; goodbye ends what was waiting. */
  #courtesy (turn: Turn, intent: 'thanks' | 'goodbye'): Decision {
    const decision = this.#act(turn, intent, undefined, 1)
    if (intent === 'goodbye') {
      delete decision.slots.queued
      delete decision.pendingIntent
    }
    return decision
  }

  #notUnderstood (turn: Turn, status: Understanding['status'], confidence: number): Decision {
    const { state } = turn
    const keeps = state.pendingIntent === undefined ? {} : { pendingIntent: state.pendingIntent }
    if (status === 'out_of_scope') {
      return { ...this.#base(turn, { intent: OUT_OF_SCOPE, confidence, reply: { kind: 'intent', situations: ['default'] }, handoff: false, ...topicOf(state) }), ...keeps, misunderstoodInARow: 0 }
    }
    const misunderstoodInARow = state.misunderstoodInARow + 1
    if (misunderstoodInARow >= 2) {
      return { ...this.#base(turn, { intent: OUT_OF_SCOPE, confidence, reply: { kind: 'fallback', name: 'misunderstood_handoff' }, handoff: true, ...topicOf(state) }), ...keeps, misunderstoodInARow }
    }
    return { ...this.#base(turn, { intent: OUT_OF_SCOPE, confidence, reply: { kind: 'intent', situations: ['default'] }, handoff: false, ...topicOf(state) }), ...keeps, misunderstoodInARow }
  }

  /** The parts of a decision every path shares: the facts, slots, values and what the reply was, remembered. */
  #base (turn: Turn, decision: Pick<Decision, 'intent' | 'confidence' | 'reply' | 'handoff'> & Partial<Pick<Decision, 'topic' | 'answer'>>): Decision {
    const { state, facts, slots, values } = turn
    const full: Decision = {
      ...decision,
      more: [],
      facts,
      values,
      slots: { ...slots },
      misunderstoodInARow: 0,
      ...(state.pendingIntent === undefined || decision.intent === state.pendingIntent || !SOCIAL.has(decision.intent) ? {} : { pendingIntent: state.pendingIntent })
    }
    if (decision.topic === undefined) delete full.topic
    full.slots.recent = [...state.slots?.recent ?? [], replyKey(decision.intent, decision.reply, facts, turn.values)].slice(-MAX_RECENT)
    if (decision.handoff) full.slots.handedOff = true
    else delete full.slots.handedOff
    return full
  }

  /**
   * After a question answered in the middle of a request that waits for the order number, the assistant asks for it
   * again; after a courtesy, too.
   */
  #resume (turn: Turn, decision: Decision): void {
    const pending = turn.state.pendingIntent
    if (pending === undefined || decision.intent === pending || decision.pendingIntent !== undefined) return
    if (turn.facts['order_id'] !== undefined) return
    if (!this.#questions.has(decision.intent) && !SOCIAL.has(decision.intent)) return
    decision.pendingIntent = pending
    if (decision.intent !== 'thanks' && decision.intent !== 'goodbye') decision.more.push({ intent: pending, reply: { kind: 'intent', situations: ['ask_order'] } })
  }

  /**
   * Another request in the same message: a question answered too when it needs nothing more; a request that does,
   * named and kept for next.
   */
  #alsoAsked (turn: Turn, decision: Decision, clause: ClauseReading): ReplyPart[] {
    const intent = clause.understanding.intent
    if (!isSupportIntent(intent)) return []
    // A question with an answer, in its own request or the first one's, is answered too, unless that answer needs
    // an order not known yet, or the clause is another request of its own (a late parcel, then a double charge):
    // that one comes next.
    const another = !this.#sameFamily(intent, decision.intent) && !this.#questions.has(intent)
    const choice = clause.answers?.best(new Set([intent, ...isSupportIntent(decision.intent) ? [decision.intent] : []]))
    const answer = choice?.answer
    // An answer stating the same policy as the first one says nothing new ("can I still return it? am I in time?").
    const first = decision.answer === undefined ? undefined : this.#answers.get(decision.answer.id)
    const repeats = first !== undefined && answer !== undefined && answer.states.some((fact) => first.states.includes(fact))
    if (!another && answer !== undefined && choice!.confidence >= this.#answerThreshold && answer.id !== decision.answer?.id && !repeats &&
      (turn.facts['order_id'] !== undefined || this.#pack.intents[answer.intents[0]!].needs_order !== true)) {
      return [{ intent, reply: { kind: 'answer', id: answer.id, situations: this.#situations(turn, answer.replies, undefined) } }]
    }
    // A request asked for that needs nothing more, hands nothing over and reports no problem ("and put me on the
    // newsletter too pls") is answered too.
    const definition = this.#pack.intents[intent]
    if (clause.wants === true && intent !== decision.intent && definition.needs_order !== true && definition.handoff !== true && !this.#problems.has(intent) && decision.more.length === 0) {
      return [{ intent, reply: { kind: 'intent', situations: this.#situations(turn, definition.replies, clause.understanding.situation) } }]
    }
    // A shop question asked plainly beside a narrower one of the same matter, with no answer of its own ("how much is
    // shipping? and is there a faster option, how much does that cost"): the request's own reply, which covers both,
    // instead of the answer.
    if (intent === decision.intent && this.#questions.has(intent) && decision.answer !== undefined && decision.reply.kind === 'answer' && clause.asks &&
      (choice?.answer === undefined || choice.confidence < this.#answerThreshold)) {
      decision.reply = { kind: 'intent', situations: this.#situations(turn, definition.replies, clause.understanding.situation) }
      delete decision.answer
      if (decision.topic !== undefined) delete decision.topic.answer
      return []
    }
    // Another side of the same matter is covered by the first reply.
    if (intent === decision.intent || this.#sameFamily(intent, decision.intent)) return []
    if (this.#questions.has(intent)) return [{ intent, reply: { kind: 'intent', situations: this.#situations(turn, this.#pack.intents[intent].replies, clause.understanding.situation) } }]
    const queued = [...decision.slots.queued ?? [], intent].filter((waiting, i, all) => all.indexOf(waiting) === i).slice(0, MAX_QUEUED)
    decision.slots.queued = queued
    const name = this.#pack.dialogue?.request_names[intent]
    if (name === undefined) return []
    decision.values['next_request'] = name
    return [{ intent, reply: { kind: 'fallback', name: 'queued_request' } }]
  }

  /**
   * The requests of a message that makes several, in order, or none: at least two different ones, each clause
   * understood with confidence and asking (or describing what happened), one of them the message's own reading.
   */
  #requests (given: readonly ClauseReading[] | undefined, whole: Understanding, wholeAnswer?: string): ClauseReading[] {
    if (given === undefined) return []
    const clauses = given.map((clause) => this.#questionOfWhole(clause, whole, wholeAnswer))
    // A clause the model is unsure of that asks nothing to be done does not outvote a whole message it reads as
    // another request ("actually i dont need the work one anymore. how do i close it" is closing the account).
    const wholeSure = whole.status === 'understood' && whole.confidence >= PROBABLY_OTHER
    const outvoted = (clause: ClauseReading): boolean => wholeSure && clause.wants !== true && clause.understanding.confidence < CLEARLY_OTHER &&
      clause.understanding.intent !== whole.intent && !this.#sameFamily(clause.understanding.intent, whole.intent)
    const requests = clauses.filter((clause) => clause.understanding.status === 'understood' && isSupportIntent(clause.understanding.intent) &&
      clause.understanding.confidence >= CLAUSE_CONFIDENCE && clause.asks && !outvoted(clause))
    // A clause of the same family as an earlier one is a detail of it ("I don't want it any more. Can I send it back?"),
    // unless it asks a question of its own that has another answer ("how long does the refund take, and could I get
    // a replacement instead?").
    const answerOf = (clause: ClauseReading): string | undefined => {
      const best = clause.answers?.best(new Set([clause.understanding.intent as SupportIntent, requests[0]!.understanding.intent as SupportIntent]))
      return best?.answer !== undefined && best.confidence >= this.#answerThreshold ? best.answer.id : undefined
    }
    const distinct = requests.filter((clause, i) => {
      const earlier = requests.slice(0, i)
      if (!earlier.some((other) => this.#sameFamily(other.understanding.intent, clause.understanding.intent))) return true
      // A request of its own that the model is sure of and that needs nothing more ("open an account, and put me on
      // the newsletter too"), though customers often ask it next.
      if (this.#standsAlone(clause, earlier)) return true
      // A question about a request's rule, sure, asked beside the request wished for in words that name neither
      // ("can i cancel order 61002? and is there a fee for that").
      if (this.#asksRuleOf(clause, earlier)) return true
      const own = answerOf(clause)
      return own !== undefined && earlier.every((other) => answerOf(other) !== own)
    })
    if (distinct.length < 2 || !distinct.some((clause) => clause.understanding.intent === whole.intent || this.#sameFamily(clause.understanding.intent, whole.intent))) return []
    return distinct
  }

  /**
   * A clause that asks a question the model reads as off topic on its own, but not surely, while the selector is
   * fairly sure of an answer of the request the whole message makes ("How much is the faster one? And is standard
   * delivery free…"): that request's question — unless its answer is the one the whole message gets anyway ("I was in
   * hospital and couldn't send the return in time. Is there anything you can do?").
   */
  #questionOfWhole (clause: ClauseReading, whole: Understanding, wholeAnswer: string | undefined): ClauseReading {
    const own = clause.understanding
    if (own.status === 'understood' || !clause.asks || whole.status !== 'understood' || !isSupportIntent(whole.intent) || surelyOffTopic(own)) return clause
    const top = clause.answers?.top()
    if (top?.answer === undefined || top.confidence < RESCUE_CONFIDENCE || !top.answer.intents.includes(whole.intent) || top.answer.id === wholeAnswer) return clause
    return { ...clause, understanding: { ...own, intent: whole.intent, status: 'understood', confidence: top.confidence } }
  }

  /**
   * The one clause that makes a request the model is sure of, in a message it reads as off topic as a whole, but not
   * clearly, when the other clauses ask nothing ("oh right, I made one years ago. no clue what the password was").
   */
  #onlyRequest (clauses: readonly ClauseReading[] | undefined, whole: Understanding): ClauseReading | undefined {
    if (clauses === undefined) return undefined
    // "I want to delete my account. You send me far too many emails.": the clause that asks for it to be done, sure
    // of the request the whole message is likeliest to be, is that request, whatever the reasons told beside it match.
    // (Or beside a question the model makes nothing of: "thats ridiculous, you wont take it back?? i want to make a
    // formal complaint".)
    if (whole.status === 'understood') {
      const wanted = clauses.filter((clause) => clause.wants && clause.understanding.intent === whole.intent && clause.understanding.confidence >= CLEARLY_OTHER)
      const unsure = whole.confidence < CLEARLY_OTHER
      if (wanted.length === 1 && clauses.every((clause) => clause === wanted[0] || !clause.asks || (!unsure && !this.#readsRequest(clause)))) return wanted[0]
      // (Or another request, the one clause that asks at all: "i dont want a tracking link the tracking hasnt changed
      // in 8 days. i want it replaced or my money back" is the refund, whatever "tracking" makes of the whole.)
      const other = clauses.filter((clause) => clause.wants && clause.understanding.status === 'understood' && isSupportIntent(clause.understanding.intent) &&
        clause.understanding.confidence >= CLEARLY_OTHER)
      if (other.length === 1 && clauses.every((clause) => clause === other[0] || !clause.asks)) return other[0]
    }
    if (whole.status === 'understood' || whole.confidence >= CLEARLY_OTHER) return undefined
    const sure = clauses.filter((clause) => clause.understanding.status === 'understood' && isSupportIntent(clause.understanding.intent) && clause.understanding.confidence >= CLEARLY_OTHER)
    // (Of two sure clauses, the one that asks: "ok so my 1 star review. it broke after 3 days…", the review only told.
    // Another clause may ask the same request again: "…motor smells burnt. actually can i just get my money back".)
    const asking = sure.filter((clause) => clause.asks || clause.wants)
    const chosen = sure.length === 1 ? sure[0]! : asking.length === 1 ? asking[0]! : undefined
    if (chosen === undefined || clauses.some((clause) => clause !== chosen && clause.asks && clause.understanding.intent !== chosen.understanding.intent)) return undefined
    return chosen
  }

  /** Whether the model reads a clause as a request, at least as likely as not. */
  #readsRequest (clause: ClauseReading): boolean {
    return clause.understanding.status === 'understood' && clause.understanding.confidence >= CLAUSE_CONFIDENCE
  }

  /** Whether a clause is a question intent the model is sure of, after a clause that wishes for another request. */
  #asksRuleOf (clause: ClauseReading, earlier: readonly ClauseReading[]): boolean {
    const { intent, confidence } = clause.understanding
    return this.#questions.has(intent) && confidence >= CLEARLY_OTHER &&
      earlier.some((other) => other.wants === true && other.understanding.intent !== intent && !this.#questions.has(other.understanding.intent))
  }

  /** Whether a clause is another request than the earlier ones, sure and answerable without an order or a person. */
  #standsAlone (clause: ClauseReading, earlier: readonly ClauseReading[]): boolean {
    const { intent, confidence } = clause.understanding
    if (clause.wants !== true || !isSupportIntent(intent) || confidence < CLEAR_REQUEST || this.#questions.has(intent) || this.#problems.has(intent)) return false
    const definition = this.#pack.intents[intent]
    return definition.needs_order !== true && definition.handoff !== true && earlier.every((other) => other.understanding.intent !== intent)
  }

  /**
   * The requests of a message with a question the pack answers first, when the first request has no answer and the
   * question is about the same matter ("I cancelled my order yesterday. When do I get my money back?"): the answer
   * covers both, and the order number is asked for after it.
   */
  #questionFirst (requests: ClauseReading[]): ClauseReading[] {
    const [first, ...rest] = requests
    if (first === undefined || this.#clauseAnswer(first) !== undefined) return requests
    const question = rest.find((clause) => this.#sameFamily(clause.understanding.intent, first.understanding.intent) && this.#clauseAnswer(clause) !== undefined)
    return question === undefined ? requests : [question, ...requests.filter((clause) => clause !== question)]
  }

  /** The answer a clause asks for, in its own request, when the selector is sure enough. */
  #clauseAnswer (clause: ClauseReading): string | undefined {
    const best = clause.answers?.best(new Set([clause.understanding.intent as SupportIntent]))
    return best?.answer !== undefined && best.confidence >= this.#answerThreshold ? best.answer.id : undefined
  }

  /**
   * The request "it didn't help" is about: the one just answered when it is of the active request's matter (the
   * sign-up problem answered after how to open an account, not the account), else the active request.
   */
  #helpedMatter (state: DialogueState, topic: Topic, understanding?: Understanding): SupportIntent {
    // Unless the message names another request answered in the last replies, as the model is sure ("that payment
    // problems page didnt help" after a question about PayPal beside the double charge).
    if (understanding !== undefined && understanding.status === 'understood' && isSupportIntent(understanding.intent) &&
      understanding.confidence >= CLEARLY_OTHER && this.#answeredLately(state, understanding.intent)) return understanding.intent
    const last = state.previousIntent
    // (A rule asked about within the customer's own request did not help with that request: "that didnt help. its been
    // 14 days" after how long refunds take, while a refund is chased, is the refund.)
    if (last !== undefined && this.#questions.has(last) && !this.#questions.has(topic.intent)) return topic.intent
    return last !== undefined && isSupportIntent(last) && this.#sameMatter(last, topic) ? last : topic.intent
  }

  /**
   * Whether an answer is about an item in hand while the request is a change to an order not yet delivered, with
   * nothing told of an item, in a conversation about such an order (a change, or a cancellation).
   */
  #aboutItemInHand (intent: IntentName, topic: Topic | undefined, described: SupportIntent | undefined, answer: DomainAnswer): boolean {
    // (An answer about an item in hand is one of the refund's; what delivery costs is none: "if I add the cups will
    // the shipping be free?")
    return this.#beforeDelivery.has(intent) && described === undefined && topic?.intent !== undefined &&
      (this.#beforeDelivery.has(topic.intent) || topic.intent === this.#roles.cancellation) &&
      !answer.intents.slice(0, 1).some((home) => this.#beforeDelivery.has(home) || home === this.#roles.cancellation) &&
      this.#roles.refund !== undefined && answer.intents.includes(this.#roles.refund)
  }

  /**
   * Whether an answer states the rule of another situation than the one the message tells ("could you send me another
   * one or refund me" of a smashed vase is no missing item, whatever its words share with that answer).
   */
  #aboutOtherSituation (answer: DomainAnswer, situation: string | undefined): boolean {
    const own = situation === undefined ? undefined : this.#pack.slots.situation_policies[situation]
    if (own === undefined) return false
    return answer.states.some((fact) => this.#situationPolicies.has(fact) && fact !== own) && !answer.states.includes(own)
  }

  /**
   * Whether a request told with what happened to an item, asking no question, is better answered by the request's own
   * reply for that than by a rule's answer with nothing to say of it ("i want to return a dress it doesnt fit" is no
   * change of mind, whatever its words share with that answer).
   */
  #toldSituationReply (turn: Turn, intent: IntentName, answer: DomainAnswer): boolean {
    const situation = turn.message.situation
    const text = turn.reading.text
    if (situation === undefined || !this.#inHand.has(situation) || text === undefined || text.includes('?') || text.split(CLAUSE_BREAK).some((clause) => QUESTION_OPENING.test(clause))) return false
    // (An answer of a rule, that is; one of the request itself, "it arrived smashed, again", says more.)
    return this.#questions.has(answer.intents[0]!) && answer.replies[situation] === undefined && this.#pack.intents[intent].replies[situation] !== undefined
  }

  /** Whether one of the last replies was `intent`'s own, or an answer whose home it is. */
  #answeredLately (state: DialogueState, intent: SupportIntent): boolean {
    return (state.slots?.recent ?? []).some((key) => this.#requestOf(key) === intent)
  }

  /** Whether two requests are one or follow up each other. */
  #sameFamily (a: IntentName, b: IntentName): boolean {
    return a === b || this.#followUps.get(a)?.has(b) === true || this.#followUps.get(b)?.has(a) === true
  }

  /**
   * Whether a message said not to have helped clearly asks a question of another matter, whose words only sound like
   * the active one ("how do I change the name? it still shows my old one"); or is a new problem which the model and the
   * selector are both sure of, asked in the matter ("it keeps saying email already in use?? i never signed up" after
   * how to open an account), or asked or told in another ("also my discount code didnt work" while adding an item to
   * an order): that problem's answer.
   */
  #asksElse (own: Understanding, topic: Topic, text: string | undefined, answers: AnswerRanking | undefined): boolean {
    if (own.status !== 'understood' || !isSupportIntent(own.intent) || !(own.confidence >= CLEARLY_OTHER)) return false
    const asked = text?.includes('?') === true
    const sameMatter = this.#sameMatter(own.intent, topic)
    if (asked && !sameMatter) return true
    // (Told of a related request, what did not help may be a new problem the pack answers for sure: "it keeps saying
    // my phone number is invalid" while opening an account is a sign-up problem's answer, not the account's next step.)
    if (!asked && sameMatter && own.intent === topic.intent) return false
    // (A problem of another request asked about: "it keeps saying email invalid when i try to sign up??" after how to
    // open an account is that sign-up problem, whichever of its answers fits.)
    if (asked && this.#problems.has(own.intent) && own.intent !== topic.intent) return true
    const ownAnswer = answers?.best(new Set([own.intent]))
    return ownAnswer?.answer !== undefined && ownAnswer.confidence >= SURE_ANSWER && own.intent !== topic.intent && ownAnswer.answer.id !== topic.answer
  }

  /** Whether `intent` is about the same matter as the active request (itself, a follow-up, a question in it). */
  #sameMatter (intent: IntentName, topic: Topic): boolean {
    return intent === topic.intent || intent === topic.aside || this.#followUps.get(topic.intent)?.has(intent) === true
  }

  /**
   * The message read with the topic as evidence: each candidate the topic's follow-ups name weighs more, and the
   * best after weighing wins. A message that on its own was not understood, or taken for off-topic, is read as a
   * follow-up only when the weighing makes that follow-up more likely than not.
   */
  #inTopic (understanding: Understanding, topic: IntentName | undefined, aside?: IntentName): Reading {
    const own: Reading = { intent: understanding.intent, ...(understanding.situation === undefined ? {} : { situation: understanding.situation }), confidence: understanding.confidence, status: understanding.status }
    const related = topic === undefined ? undefined : this.#followUps.get(topic)
    // A message of words the model does not know is not read into the topic either.
    if (related === undefined || topic === undefined || understanding.coverage < MIN_COVERAGE) return own
    // The topic's own request counts as a follow-up too ("and where is the other one?" after tracking), and so do
    // the question asked in it and that question's follow-ups.
    const followUps = new Set<IntentName>([topic, ...related])
    if (aside !== undefined) for (const intent of [aside, ...this.#followUps.get(aside) ?? []]) followUps.add(intent)
    const weighed = understanding.candidates.map((candidate): Candidate => ({
      intent: candidate.intent,
      probability: candidate.probability * (followUps.has(candidate.intent) ? this.#followUpWeight : 1)
    }))
    const total = weighed.reduce((sum, candidate) => sum + candidate.probability, 0) +
      Math.max(0, 1 - understanding.candidates.reduce((sum, candidate) => sum + candidate.probability, 0))
    const best = weighed.reduce((a, b) => b.probability > a.probability ? b : a)
    if (best.intent === own.intent || !followUps.has(best.intent)) return own
    const probability = best.probability / total
    if (own.status !== 'understood' && probability < 0.5) return own
    return { intent: best.intent, confidence: Math.round(probability * 1000) / 1000, status: best.intent === OUT_OF_SCOPE ? 'out_of_scope' : 'understood' }
  }

  /**
   * The reply situations to try, most specific first: a purchase date given just now (its return window), what
   * happened to the item, the preference, the account, a payment method named, the situation the model read, the
   * return window, then `default`. Only those the replies have are kept.
   */
  #situations (turn: Turn, replies: Readonly<Record<string, readonly string[]>>, modelSituation: string | undefined): string[] {
    const { slots, values } = turn
    const window = this.#windowNow(turn)
    const described: string[] = []
    for (const situation of [slots.situation, slots.preference, slots.account]) {
      if (situation === undefined) continue
      described.push(situation)
      const instead = this.#pack.slots.reply_fallbacks[situation]
      if (instead !== undefined) described.push(instead)
    }
    if (values['payment_method'] !== undefined) described.push('listed_method')
    // Asked how long or how soon: the reply that says that first, where the answer has one.
    if (turn.message.cues.has('time')) described.push('asks_time')
    // The customer asks for the request to be done, not only about a detail of it: the reply that does it first.
    if (turn.message.cues.has('wish')) described.unshift('wish')
    // The model's reading of the situation, unless the slots say what happened.
    if (modelSituation !== undefined && slots.situation === undefined) described.push(modelSituation)
    // (A date just given answers with the return window first, unless what happened has a time limit of its own: a
    // missing part is reported within days of delivery, whenever it was bought.)
    const ownLimit = slots.situation !== undefined && this.#ownTimeLimit.has(slots.situation)
    // (Nor, well inside the window, what happened to an item, told with the date: its reply says what to do.)
    const toldNow = turn.message.situation !== undefined && this.#inHand.has(turn.message.situation) && window[0] === 'inside_window'
    const ordered = turn.newDate && !ownLimit && !toldNow ? [...window, ...described] : [...described, ...window]
    return [...ordered, 'default'].filter((situation, i, all) => replies[situation] !== undefined && all.indexOf(situation) === i)
  }

  /** The payment methods of the pack's list the customer named, as words of a reply, if a payment question is in question. */
  #paymentMethod (understanding: Understanding, reading: MessageReading): string | undefined {
    // Most messages name no method: then there is nothing to rank.
    const methods = reading.slots?.paymentMethods
    if (methods === undefined) return undefined
    // (Unless the model reads the shop's question about payment methods: a question of the payment role.)
    if (!(this.#roles.payment.has(understanding.intent) && this.#questions.has(understanding.intent))) {
      const ranked = reading.answers?.best(this.#roles.payment)
      if (ranked === undefined || ranked.confidence < this.#answerThreshold) return undefined
    }
    // "paypal or amex?": both, as a person would answer.
    return methods.length === 1 ? methods[0] : `${methods.slice(0, -1).join(', ')} and ${methods.at(-1)!}`
  }
}

/** One message's working state while the policy decides. */
interface Turn {
  state: DialogueState
  understanding: Understanding
  message: MessageSlots
  reading: MessageReading
  facts: Record<string, Fact>
  slots: Slots
  values: Record<string, string>
  today: string
  /** The message gave the purchase date, or another one. */
  newDate: boolean
}

interface Reading {
  intent: IntentName
  situation?: string
  confidence: number
  status: Understanding['status']
}

/** The slots kept from one message to the next: what the assistant waited for is answered by this one. */
function withoutTransient (slots: Slots): Slots {
  const kept: Slots = { ...slots }
  delete kept.pending
  return kept
}

function normalised (text: string): string {
  return text.trim().toLowerCase()
}

function withoutAside (topic: Topic): Topic {
  const { aside: _aside, asideAnswer: _answer, ...rest } = topic
  return rest
}

function topicOf (state: DialogueState): { topic?: Topic } {
  return state.topic === undefined ? {} : { topic: state.topic }
}

/** Whether the model is all but certain the message is off topic (SURELY_OFF_TOPIC). */
/** The model's probability that the message makes `intent`, rounded as confidences are. */
/** An answer's reply situations with its `wish` reply first, when it has one: the reply that does the request. */
function wishFirst (answer: DomainAnswer, situations: readonly string[]): string[] {
  return answer.replies['wish'] === undefined || situations.includes('wish') ? [...situations] : ['wish', ...situations]
}

function probabilityOf (understanding: Understanding, intent: IntentName): number {
  const probability = understanding.candidates.find((candidate) => candidate.intent === intent)?.probability ?? 0
  return Math.round(probability * 1000) / 1000
}

/** What some requests are to the dialogue (the pack's `dialogue.roles`). */
interface Roles {
  account: ReadonlySet<IntentName>
  address: ReadonlySet<IntentName>
  contact: ReadonlySet<IntentName>
  payment: ReadonlySet<IntentName>
  complaint?: SupportIntent
  refund?: SupportIntent
  refund_status?: SupportIntent
  parcel?: SupportIntent
  cancellation?: SupportIntent
}

function rolesOf (pack: DomainPack): Roles {
  const { account = [], address = [], contact = [], payment = [], ...single } = pack.dialogue?.roles ?? {}
  return { account: new Set(account), address: new Set(address), contact: new Set(contact), payment: new Set(payment), ...single }
}

function surelyOffTopic (understanding: Understanding): boolean {
  return understanding.candidates.some((candidate) => candidate.intent === OUT_OF_SCOPE && candidate.probability >= SURELY_OFF_TOPIC)
}
