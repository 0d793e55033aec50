import type { DomainPack } from '../domain-pack/schema.ts'
import { OUT_OF_SCOPE, SUPPORT_INTENTS, type IntentName, type SupportIntent } from '../intents.ts'
import type { Understanding } from '../nlu/understand.ts'
import type { Conversation, Fact } from './conversation.ts'
import { returnWindow } from './return-window.ts'

/** What the request adds to the conversation besides the message. */
export type RequestContext = Readonly<Record<string, Fact>>

/** What the conversation knows before the message; the policy reads it and never changes it. */
export type DialogueState = Pick<Conversation, 'facts' | 'pendingIntent' | 'misunderstoodInARow'>

/** Which templates answer: the intent's reply situations in order of preference, or one of the pack's fallbacks. */
export type ReplyChoice =
  | { kind: 'intent', situations: readonly string[] }
  | { kind: 'fallback', name: 'misunderstood_handoff' }

/** What the assistant does with one message, and what the conversation knows afterwards. */
export interface Decision {
  intent: IntentName
  confidence: number
  reply: ReplyChoice
  handoff: boolean
  /** Everything the conversation knows after the message. */
  facts: Record<string, Fact>
  /** The request waiting for its order number, if any. */
  pendingIntent?: SupportIntent
  misunderstoodInARow: number
}

const SUPPORT_INTENT_SET: ReadonlySet<string> = new Set(SUPPORT_INTENTS)

/**
 * The dialogue policy: from what the conversation knows, what the message says and today's date, decides the intent
 * answered, the reply situation, what is remembered and whether a person takes over. Pure: the same inputs give the
 * same decision, and nothing is changed.
 */
export class DialoguePolicy {
  readonly #pack: DomainPack

  constructor (pack: DomainPack) {
    this.#pack = pack
  }

  decide (state: DialogueState, understanding: Understanding, context: RequestContext, today: string): Decision {
    const { entities } = understanding
    const pending = state.pendingIntent
    const facts: Record<string, Fact> = { ...state.facts, ...context }
    const orderId = entities.orderId ?? (pending === undefined ? undefined : entities.bareCode)
    if (orderId !== undefined) facts['order_id'] = orderId
    if (entities.email !== undefined) facts['email'] = entities.email
    if (entities.date !== undefined && entities.dateIsPurchase === true && context['purchase_date'] === undefined) {
      facts['purchase_date'] = entities.date
    }

    let { intent, confidence } = understanding
    // The order number the assistant asked for completes the waiting request, unless the message clearly asks
    // for something else.
    if (pending !== undefined && orderId !== undefined && (intent === pending || !SUPPORT_INTENT_SET.has(intent))) {
      intent = pending
      confidence = 1
    }

    const understood = intent !== OUT_OF_SCOPE
    const misunderstoodInARow = understood ? 0 : state.misunderstoodInARow + 1
    const keepsPending = !SUPPORT_INTENT_SET.has(intent) && intent !== 'goodbye'
    const decision = { intent, confidence, facts, misunderstoodInARow, ...(keepsPending && pending !== undefined ? { pendingIntent: pending } : {}) }

    if (!understood && misunderstoodInARow >= 2) {
      return { ...decision, reply: { kind: 'fallback', name: 'misunderstood_handoff' }, handoff: true }
    }
    const definition = this.#pack.intents[intent]
    const angry = intent === 'complaint' && understanding.angry
    const situations = this.#situations(intent, facts, today, angry)
    const asking = situations[0] === 'ask_order'
    return {
      ...decision,
      ...(asking ? { pendingIntent: intent as SupportIntent } : {}),
      reply: { kind: 'intent', situations },
      handoff: definition.handoff === true || angry
    }
  }

  /** The reply situations to try, most specific first. */
  #situations (intent: IntentName, facts: Readonly<Record<string, Fact>>, today: string, angry: boolean): string[] {
    const definition = this.#pack.intents[intent]
    if (definition.needs_order === true && facts['order_id'] === undefined) return ['ask_order']
    if (angry) return ['angry', 'default']
    const purchaseDate = facts['purchase_date']
    if (definition.uses_return_window === true && typeof purchaseDate === 'string') {
      const { situation } = returnWindow(purchaseDate, today, this.#pack.policies.return_window_days)
      return situation === 'window_last_day' ? [situation, 'inside_window', 'default'] : [situation, 'default']
    }
    return ['default']
  }
}
