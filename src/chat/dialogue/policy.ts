import type { DomainPack } from '../domain-pack/schema.ts'
import { OUT_OF_SCOPE, SUPPORT_INTENTS, type IntentName, type SupportIntent } from '../intents.ts'
import { MIN_COVERAGE, type Candidate, type Understanding } from '../nlu/understand.ts'
import type { Conversation, Fact, Topic } from './conversation.ts'
import { returnWindow } from './return-window.ts'

/** What the request adds to the conversation besides the message. */
export type RequestContext = Readonly<Record<string, Fact>>

/** What the conversation knows before the message; the policy reads it and never changes it. */
export type DialogueState = Pick<Conversation, 'facts' | 'topic' | 'pendingIntent' | 'misunderstoodInARow'> & {
  /** The intent the assistant answered last. */
  previousIntent?: IntentName
}

/** Which templates answer: the intent's reply situations in order of preference, or one of the pack's fallbacks. */
export type ReplyChoice =
  | { kind: 'intent', situations: readonly string[] }
  | { kind: 'fallback', name: 'misunderstood_handoff' | 'value_without_request' }

/** What the assistant does with one message, and what the conversation knows afterwards. */
export interface Decision {
  intent: IntentName
  confidence: number
  reply: ReplyChoice
  handoff: boolean
  /** Everything the conversation knows after the message. */
  facts: Record<string, Fact>
  /** The request the conversation is about after the message. */
  topic?: Topic
  /** The request waiting for its order number, if any. */
  pendingIntent?: SupportIntent
  misunderstoodInARow: number
}

const SUPPORT_INTENT_SET: ReadonlySet<string> = new Set(SUPPORT_INTENTS)
/** Requests whose replies reason with the purchase date: a date answering them is the purchase date. */
const isSupportIntent = (intent: string): intent is SupportIntent => SUPPORT_INTENT_SET.has(intent)

/**
 * The dialogue policy: from what the conversation knows, what the message says and today's date, decides the intent
 * answered, the reply situation, what is remembered and whether a person takes over. Pure: the same inputs give the
 * same decision, and nothing is changed.
 *
 * The conversation has a topic — the last request acted on. A message that only gives a value (an order number, a
 * date) completes or continues that topic, never starts another request; any other message is read with the topic
 * as evidence: the model's candidates that customers typically ask next about the same request (the pack's
 * `dialogue.follow_ups`) weigh more.
 */
export class DialoguePolicy {
  readonly #pack: DomainPack
  readonly #followUps: ReadonlyMap<string, ReadonlySet<string>>
  readonly #followUpWeight: number

  constructor (pack: DomainPack) {
    this.#pack = pack
    this.#followUps = new Map(Object.entries(pack.dialogue?.follow_ups ?? {}).map(([intent, next]) => [intent, new Set(next)]))
    this.#followUpWeight = pack.dialogue?.follow_up_weight ?? 3
  }

  decide (state: DialogueState, understanding: Understanding, context: RequestContext, today: string): Decision {
    const { entities } = understanding
    const request = state.pendingIntent ?? state.topic?.intent
    const answer = understanding.valueOnly || entities.bareCode !== undefined

    const facts: Record<string, Fact> = { ...state.facts, ...context }
    const orderId = entities.orderId ?? (answer && request !== undefined ? entities.bareCode : undefined)
    if (orderId !== undefined) facts['order_id'] = orderId
    if (entities.email !== undefined) facts['email'] = entities.email
    const answersWithDate = answer && request !== undefined && this.#pack.intents[request].uses_return_window === true
    if (entities.date !== undefined && context['purchase_date'] === undefined && (entities.dateIsPurchase === true || answersWithDate)) {
      facts['purchase_date'] = entities.date
    }

    const base = { facts, ...(state.topic === undefined ? {} : { topic: state.topic }) }
    if (answer) {
      if (request === undefined) {
        return { ...base, intent: OUT_OF_SCOPE, confidence: 1, reply: { kind: 'fallback', name: 'value_without_request' }, handoff: false, misunderstoodInARow: 0 }
      }
      const situation = state.pendingIntent === undefined || state.pendingIntent === state.topic?.intent ? state.topic?.situation : undefined
      return this.#act(base, request, situation, 1, understanding, today)
    }

    // Right after an off-topic question, a follow-up is read as continuing it ("and how long do I bake it?").
    const reading = this.#inTopic(understanding, state.previousIntent === OUT_OF_SCOPE ? OUT_OF_SCOPE : state.topic?.intent)
    if (reading.status === 'not_understood') {
      const misunderstoodInARow = state.misunderstoodInARow + 1
      const keeps = state.pendingIntent === undefined ? {} : { pendingIntent: state.pendingIntent }
      if (misunderstoodInARow >= 2) {
        return { ...base, ...keeps, intent: OUT_OF_SCOPE, confidence: reading.confidence, reply: { kind: 'fallback', name: 'misunderstood_handoff' }, handoff: true, misunderstoodInARow }
      }
      return { ...base, ...keeps, intent: OUT_OF_SCOPE, confidence: reading.confidence, reply: { kind: 'intent', situations: ['default'] }, handoff: false, misunderstoodInARow }
    }

    let { intent, confidence } = reading
    let situation = reading.situation
    // The order number the assistant asked for completes the waiting request, unless the message clearly asks
    // for something else.
    const pending = state.pendingIntent
    if (pending !== undefined && orderId !== undefined && (intent === pending || !isSupportIntent(intent))) {
      if (intent !== pending) situation = state.topic?.intent === pending ? state.topic.situation : undefined
      intent = pending
      confidence = 1
    }
    return this.#act(base, intent, situation, confidence, understanding, today, state.pendingIntent)
  }

  /** The decision to answer `intent`: its reply situation, whether it waits for an order, the new topic. */
  #act (base: Pick<Decision, 'facts' | 'topic'>, intent: IntentName, situation: string | undefined, confidence: number, understanding: Understanding, today: string, pending?: SupportIntent): Decision {
    const definition = this.#pack.intents[intent]
    const angry = intent === 'complaint' && understanding.angry
    const situations = this.#situations(intent, situation, base.facts, today, angry)
    const support = isSupportIntent(intent)
    const asking = support && situations[0] === 'ask_order'
    // A courtesy or an off-topic question leaves a waiting request waiting; goodbye ends it.
    const waiting = asking ? intent : !support && intent !== 'goodbye' ? pending : undefined
    return {
      ...base,
      ...(support ? { topic: { intent, ...(situation === undefined ? {} : { situation }) } } : {}),
      ...(waiting === undefined ? {} : { pendingIntent: waiting }),
      intent,
      confidence,
      reply: { kind: 'intent', situations },
      handoff: definition.handoff === true || angry,
      misunderstoodInARow: 0
    }
  }

  /**
   * The message read with the topic as evidence: each candidate the topic's follow-ups name weighs more, and the
   * best after weighing wins. A message that on its own was not understood, or taken for off-topic, is read as a
   * follow-up only when the weighing makes that follow-up more likely than not.
   */
  #inTopic (understanding: Understanding, topic: IntentName | undefined): Reading {
    const own: Reading = { intent: understanding.intent, ...(understanding.situation === undefined ? {} : { situation: understanding.situation }), confidence: understanding.confidence, status: understanding.status }
    const related = topic === undefined ? undefined : this.#followUps.get(topic)
    // A message of words the model does not know is not read into the topic either.
    if (related === undefined || topic === undefined || understanding.coverage < MIN_COVERAGE) return own
    // The topic's own request counts as a follow-up too ("and where is the other one?" after tracking).
    const followUps = new Set([topic, ...related])
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

  /** The reply situations to try, most specific first. */
  #situations (intent: IntentName, situation: string | undefined, facts: Readonly<Record<string, Fact>>, today: string, angry: boolean): string[] {
    const definition = this.#pack.intents[intent]
    if (definition.needs_order === true && facts['order_id'] === undefined) return ['ask_order']
    if (angry) return ['angry', 'default']
    const situations = situation === undefined ? [] : [situation]
    const purchaseDate = facts['purchase_date']
    if (definition.uses_return_window === true && typeof purchaseDate === 'string') {
      const window = returnWindow(purchaseDate, today, this.#pack.policies.return_window_days).situation
      situations.push(...(window === 'window_last_day' ? [window, 'inside_window'] : [window]))
    }
    return [...situations, 'default']
  }
}

interface Reading {
  intent: IntentName
  situation?: string
  confidence: number
  status: Understanding['status']
}
