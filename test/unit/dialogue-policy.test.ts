import { describe, expect, it } from 'vitest'
import { DialoguePolicy, type DialogueState } from '../../src/chat/dialogue/policy.ts'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import type { IntentName } from '../../src/chat/intents.ts'
import type { Understanding } from '../../src/chat/nlu/understand.ts'

// The policy alone, on understandings made by hand: what it decides for each kind of message in each state.
const policy = new DialoguePolicy(loadDomainPack())
const TODAY = '2026-11-20'
const EMPTY: DialogueState = { facts: {}, misunderstoodInARow: 0 }

function understood (intent: IntentName, probability = 0.9, rest: Partial<Understanding> = {}): Understanding {
  return {
    intent,
    status: 'understood',
    confidence: probability,
    inScope: 0.9,
    coverage: 1,
    candidates: [{ intent, probability }],
    entities: {},
    valueOnly: false,
    angry: false,
    ...rest
  }
}

function answer (entities: Understanding['entities']): Understanding {
  return { ...understood('place_order', 0.4), entities, valueOnly: true }
}

const notUnderstood: Understanding = { ...understood('out_of_scope', 0.7), status: 'not_understood', coverage: 0, candidates: [{ intent: 'greeting', probability: 0.3 }] }
const offTopic: Understanding = { ...understood('out_of_scope', 0.9), status: 'out_of_scope' }

describe('the dialogue policy', () => {
  it('decides without changing the state it is given', () => {
    const state = Object.freeze({ facts: Object.freeze({ order_id: 'A-1' }), topic: Object.freeze({ intent: 'track_order' as const }), misunderstoodInARow: 0 })
    expect(() => policy.decide(state, understood('cancel_order'), {}, TODAY)).not.toThrow()
    expect(policy.decide(state, understood('cancel_order'), {}, TODAY)).toEqual(policy.decide(state, understood('cancel_order'), {}, TODAY))
  })

  it('asks for the order, and the order number completes the waiting request', () => {
    const asked = policy.decide(EMPTY, understood('track_order'), {}, TODAY)
    expect(asked).toMatchObject({ intent: 'track_order', reply: { kind: 'intent', situations: ['ask_order'] }, pendingIntent: 'track_order' })
    const completed = policy.decide(asked, answer({ bareCode: '4417' }), {}, TODAY)
    expect(completed).toMatchObject({ intent: 'track_order', confidence: 1, facts: { order_id: '4417' } })
    expect(completed.pendingIntent).toBeUndefined()
  })

  it('a value with no request yet asks what the customer wants, and is not a misunderstanding', () => {
    expect(policy.decide(EMPTY, answer({ orderId: 'A-1' }), {}, TODAY)).toMatchObject({
      intent: 'out_of_scope', reply: { kind: 'fallback', name: 'value_without_request' }, handoff: false, misunderstoodInARow: 0, facts: { order_id: 'A-1' }
    })
  })

  it('a value continues the topic, never another request; a new order number replaces the old', () => {
    const state: DialogueState = { facts: { order_id: 'A-1' }, topic: { intent: 'complaint' }, misunderstoodInARow: 0 }
    expect(policy.decide(state, answer({ orderId: 'B-2' }), {}, TODAY)).toMatchObject({ intent: 'complaint', facts: { order_id: 'B-2' }, topic: { intent: 'complaint' } })
  })

  it('a date alone is the purchase date when the topic reasons with the return window, and only then', () => {
    const refund: DialogueState = { facts: { order_id: 'A-1' }, topic: { intent: 'get_refund' }, misunderstoodInARow: 0 }
    expect(policy.decide(refund, answer({ date: '2026-11-02' }), {}, TODAY)).toMatchObject({
      intent: 'get_refund', facts: { purchase_date: '2026-11-02' }, reply: { situations: ['inside_window', 'default'] }
    })
    const tracking: DialogueState = { ...refund, topic: { intent: 'track_order' } }
    expect(policy.decide(tracking, answer({ date: '2026-11-02' }), {}, TODAY).facts).not.toHaveProperty('purchase_date')
    // This request's context says otherwise: it wins.
    expect(policy.decide(refund, answer({ date: '2026-11-02' }), { purchase_date: '2026-10-01' }, TODAY).facts).toMatchObject({ purchase_date: '2026-10-01' })
  })

  it('a date the customer says they bought on is the purchase date in any message; a future one is never eligible', () => {
    const decision = policy.decide(EMPTY, understood('get_refund', 0.9, { entities: { orderId: 'A-1', date: '2026-12-01', dateIsPurchase: true } }), {}, TODAY)
    expect(decision).toMatchObject({ facts: { purchase_date: '2026-12-01' }, reply: { situations: ['future_purchase', 'default'] } })
  })

  it('reads a follow-up in the light of the topic, not an unrelated reading', () => {
    const afterCancel: DialogueState = { facts: { order_id: 'A-1' }, topic: { intent: 'cancel_order' }, misunderstoodInARow: 0 }
    const moneyBack = understood('payment_issue', 0.45, { candidates: [{ intent: 'payment_issue', probability: 0.45 }, { intent: 'track_refund', probability: 0.3 }, { intent: 'greeting', probability: 0.1 }] })
    expect(policy.decide(afterCancel, moneyBack, {}, TODAY).intent).toBe('track_refund')
    expect(policy.decide(EMPTY, moneyBack, {}, TODAY).intent).toBe('payment_issue')
    // A clear request of another kind stays what it is.
    const invoice = understood('get_invoice', 0.95, { candidates: [{ intent: 'get_invoice', probability: 0.95 }, { intent: 'track_refund', probability: 0.02 }] })
    expect(policy.decide(afterCancel, invoice, {}, TODAY).intent).toBe('get_invoice')
  })

  it('a short message the rejector doubted is a follow-up when the topic makes it likely, and stays off-topic when not', () => {
    const tracking: DialogueState = { facts: { order_id: 'A-1' }, topic: { intent: 'track_order' }, misunderstoodInARow: 0 }
    const doubted = { ...understood('out_of_scope', 0.4), status: 'out_of_scope' as const, candidates: [{ intent: 'track_order' as const, probability: 0.4 }, { intent: 'out_of_scope' as const, probability: 0.35 }] }
    expect(policy.decide(tracking, doubted, {}, TODAY)).toMatchObject({ intent: 'track_order', handoff: false })
    expect(policy.decide(EMPTY, doubted, {}, TODAY).intent).toBe('out_of_scope')
    const recipe = { ...offTopic, candidates: [{ intent: 'out_of_scope' as const, probability: 0.9 }, { intent: 'track_order' as const, probability: 0.05 }] }
    expect(policy.decide(tracking, recipe, {}, TODAY).intent).toBe('out_of_scope')
  })

  it('keeps what the conversation knows across a change of topic', () => {
    const state: DialogueState = { facts: { order_id: 'A-1', purchase_date: '2026-11-02', customer_name: 'Jo' }, topic: { intent: 'track_order' }, misunderstoodInARow: 0 }
    expect(policy.decide(state, understood('get_invoice'), {}, TODAY)).toMatchObject({ intent: 'get_invoice', facts: state.facts, topic: { intent: 'get_invoice' } })
  })

  it('hands over on the second message in a row it cannot understand, never for off-topic questions', () => {
    const first = policy.decide(EMPTY, notUnderstood, {}, TODAY)
    expect(first).toMatchObject({ intent: 'out_of_scope', handoff: false, misunderstoodInARow: 1 })
    expect(policy.decide(first, notUnderstood, {}, TODAY)).toMatchObject({ reply: { kind: 'fallback', name: 'misunderstood_handoff' }, handoff: true })
    let state: DialogueState = EMPTY
    for (let i = 0; i < 3; i++) {
      const decision = policy.decide({ ...state, previousIntent: 'out_of_scope' }, offTopic, {}, TODAY)
      expect(decision).toMatchObject({ intent: 'out_of_scope', handoff: false, misunderstoodInARow: 0 })
      state = decision
    }
  })

  it('hands over at once for a person, and for an angry complaint only', () => {
    expect(policy.decide(EMPTY, understood('contact_human_agent'), {}, TODAY).handoff).toBe(true)
    expect(policy.decide(EMPTY, understood('complaint', 0.9, { angry: true }), {}, TODAY)).toMatchObject({ handoff: true, reply: { situations: ['angry', 'default'] } })
    expect(policy.decide(EMPTY, understood('complaint'), {}, TODAY).handoff).toBe(false)
    expect(policy.decide(EMPTY, understood('track_order', 0.9, { angry: true, entities: { orderId: 'A-1' } }), {}, TODAY).handoff).toBe(false)
  })

  it('answers a described situation from its replies before the return window and the default', () => {
    const broken = understood('get_refund', 0.9, { situation: 'defective_item', entities: { orderId: 'A-1' } })
    expect(policy.decide({ facts: { purchase_date: '2026-11-02' }, misunderstoodInARow: 0 }, broken, {}, TODAY).reply)
      .toEqual({ kind: 'intent', situations: ['defective_item', 'inside_window', 'default'] })
  })
})
