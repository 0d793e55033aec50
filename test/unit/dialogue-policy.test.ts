import { describe, expect, it } from 'vitest'
import { AnswerSelector } from '../../src/chat/answers/selector.ts'
import { readWords, stemsOf } from '../../src/chat/answers/terms.ts'
import { asksToDo } from '../../src/chat/dialogue/clauses.ts'
import type { ClauseReading, Decision, DialogueState, MessageReading } from '../../src/chat/dialogue/decision.ts'
import { DialoguePolicy } from '../../src/chat/dialogue/policy.ts'
import { SlotReader } from '../../src/chat/dialogue/slots.ts'
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
    furious: false,
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

  it('hands over at once for a person, and for a furious complaint only', () => {
    expect(policy.decide(EMPTY, understood('contact_human_agent'), {}, TODAY).handoff).toBe(true)
    expect(policy.decide(EMPTY, understood('complaint', 0.9, { angry: true, furious: true }), {}, TODAY)).toMatchObject({ handoff: true, reply: { situations: ['angry', 'default'] } })
    expect(policy.decide(EMPTY, understood('complaint'), {}, TODAY).handoff).toBe(false)
    // Anger words alone ("this is ridiculous, i want to make a formal complaint"): the complaint form.
    expect(policy.decide(EMPTY, understood('complaint', 0.9, { angry: true }), {}, TODAY).handoff).toBe(false)
    expect(policy.decide(EMPTY, understood('track_order', 0.9, { angry: true, furious: true, entities: { orderId: 'A-1' } }), {}, TODAY).handoff).toBe(false)
  })

  it('answers a described situation from its replies before the return window and the default', () => {
    const broken = understood('get_refund', 0.9, { situation: 'defective_item', entities: { orderId: 'A-1' } })
    expect(policy.decide({ facts: { purchase_date: '2026-11-02' }, misunderstoodInARow: 0 }, broken, {}, TODAY).reply)
      .toEqual({ kind: 'intent', situations: ['defective_item', 'inside_window', 'default'] })
  })
})

describe('the dialogue policy with slots and answers', () => {
  // The message's slots and the answer selector's ranking are read from the text by the pack's own readers (no
  // model); the intent model's understanding is made by hand, so that each case says what the policy does.
  const pack = loadDomainPack()
  const slots = new SlotReader(pack.slots, pack.policies.payment_methods)
  const answers = new AnswerSelector(pack.answers, pack.requests)
  const read = (text: string): MessageReading => {
    const stems = stemsOf(text)
    return { text, answers: answers.rank(stems), slots: slots.read(stems, text, readWords(text).words) }
  }
  const decide = (state: DialogueState, text: string, understanding: Understanding, context = {}): Decision =>
    policy.decide(state, understanding, context, TODAY, read(text))
  const after = (decision: Decision, text: string): DialogueState =>
    ({ facts: decision.facts, misunderstoodInARow: decision.misunderstoodInARow, slots: decision.slots, previousIntent: decision.intent, previousMessage: text, ...(decision.topic === undefined ? {} : { topic: decision.topic }), ...(decision.pendingIntent === undefined ? {} : { pendingIntent: decision.pendingIntent }) })

  it('answers the question asked inside a request, by the situation the customer described', () => {
    const first = decide(EMPTY, 'you sent me the wrong colour, order 44120', understood('get_refund', 0.9, { entities: { orderId: '44120' } }))
    expect(first.slots.situation).toBe('wrong_item')
    const free = decide(after(first, 'you sent me the wrong colour, order 44120'), 'is sending it back free?', understood('check_refund_policy', 0.7))
    expect(free).toMatchObject({ intent: 'check_refund_policy', answer: { id: 'returns.shipping_cost' }, reply: { kind: 'answer', id: 'returns.shipping_cost', situations: ['wrong_item', 'default'] } })
    // With nothing described, the same question gets the general rule.
    expect(decide(EMPTY, 'is sending it back free?', understood('check_refund_policy', 0.7)).reply).toMatchObject({ kind: 'answer', id: 'returns.shipping_cost', situations: ['default'] })
  })

  it('reports a question by the matter it asks about: a time, the first of two questions, the customer\'s own item', () => {
    // A delivery option's speed is the delivery time, even where the model reads the options; its price first is not.
    expect(decide(EMPTY, 'how many days would express need?', understood('delivery_options', 0.95))).toMatchObject({ intent: 'delivery_period', answer: { id: 'delivery.express' } })
    expect(decide(EMPTY, 'is express expensive, and how fast is it?', understood('delivery_options', 0.95))).toMatchObject({ intent: 'delivery_options', answer: { id: 'delivery.express' } })
    // When the money comes back is the refund rule, even where the model is sure of a refund's status.
    expect(decide(EMPTY, 'when does the money come back after a return?', understood('track_refund', 0.95))).toMatchObject({ intent: 'check_refund_policy', answer: { id: 'refunds.processing_time' } })
    // Whether one's own item can still go back, told with what happened to it, is that return; asked plainly, the rule.
    expect(decide(EMPTY, 'i just changed my mind about the rug, can i still send it back?', understood('check_refund_policy', 0.8)).intent).toBe('get_refund')
    expect(decide(EMPTY, 'can i still send back a rug?', understood('check_refund_policy', 0.8)).intent).toBe('check_refund_policy')
  })

  it('a time question naming nothing but the active request\'s words is about it; a sure request is not store pickup', () => {
    const refund: DialogueState = { facts: { order_id: '66120' }, topic: { intent: 'track_refund' }, misunderstoodInARow: 0 }
    expect(decide(refund, 'how many days does that take?', understood('delivery_period', 0.95))).toMatchObject({ intent: 'check_refund_policy', answer: { id: 'refunds.processing_time' } })
    // Named, the other matter is answered.
    expect(decide(refund, 'how many days does express delivery take?', understood('delivery_period', 0.95)).answer?.id).toBe('delivery.express')
    const tracking: DialogueState = { facts: { order_id: '55310' }, topic: { intent: 'track_order' }, misunderstoodInARow: 0 }
    const sure = understood('change_shipping_address', 0.86, { candidates: [{ intent: 'change_shipping_address', probability: 0.86 }, { intent: 'delivery_options', probability: 0.12 }] })
    const moved = decide(tracking, 'could it be delivered to my workplace instead?', sure)
    expect(moved.intent).toBe('change_shipping_address')
    expect(moved.answer).toBeUndefined()
  })

  it('an answer the selector is certain of is given where the model is less sure of a request it does not fit', () => {
    const question = 'at what point do you treat a parcel as gone?'
    expect(decide(EMPTY, question, understood('edit_account', 0.86)).answer?.id).toBe('tracking.when_to_act')
    expect(decide(EMPTY, question, understood('edit_account', 0.99)).answer).toBeUndefined()
  })

  it('within a request the model is sure of, an answer is weighed among that request\'s entries', () => {
    const returning: DialogueState = { facts: { order_id: '66301' }, topic: { intent: 'get_refund', situation: 'broke_in_use' }, misunderstoodInARow: 0 }
    const sure = understood('track_refund', 0.9, { candidates: [{ intent: 'track_refund', probability: 0.9 }, { intent: 'check_refund_policy', probability: 0.09 }] })
    expect(decide(returning, 'and how long will the refund take?', sure)).toMatchObject({ intent: 'check_refund_policy', answer: { id: 'refunds.processing_time' } })
    expect(decide(returning, 'and how long will the refund take?', understood('track_refund', 0.5)).answer).toBeUndefined()
  })

  it('a plain request gets the request\'s own reply, not an answer', () => {
    const decision = decide(EMPTY, 'i want to cancel my order', understood('cancel_order'))
    expect(decision).toMatchObject({ intent: 'cancel_order', reply: { kind: 'intent', situations: ['ask_order'] } })
    expect(decision.answer).toBeUndefined()
  })

  it('a value continues the active request, and a purchase date is answered with the window first', () => {
    const asked = decide(EMPTY, 'i want to return a jacket', understood('get_refund'))
    const dated = decide(after(asked, 'i want to return a jacket'), 'bought it on the 2nd', understood('place_order', 0.4, { entities: { date: '2026-11-02', dateIsPurchase: true } }))
    expect(dated).toMatchObject({ intent: 'get_refund', facts: { purchase_date: '2026-11-02' }, pendingIntent: 'get_refund' })
    expect(dated.reply).toMatchObject({ kind: 'intent', situations: ['inside_window', 'ask_order'] })
  })

  it('"and the one from last month?" with a new order repeats the active request for it', () => {
    const invoice = decide(EMPTY, 'invoice for order 90412 please', understood('get_invoice', 0.95, { entities: { orderId: '90412' } }))
    const other = decide(after(invoice, 'invoice for order 90412 please'), 'and the one from september, 88705?', understood('track_order', 0.6, { entities: { orderId: '88705' } }))
    expect(other).toMatchObject({ intent: 'get_invoice', facts: { order_id: '88705' } })
    // A clear other request with a new order is that request.
    expect(decide(after(invoice, 'x'), 'and cancel 88705 please', understood('cancel_order', 0.95, { entities: { orderId: '88705' } })).intent).toBe('cancel_order')
  })

  it('a correction replaces the value and repeats the active request', () => {
    const cancel = decide(EMPTY, 'cancel order 55120', understood('cancel_order', 0.95, { entities: { orderId: '55120' } }))
    const corrected = decide(after(cancel, 'cancel order 55120'), 'sorry wrong number, it is 55210', understood('change_shipping_address', 0.6, { entities: { orderId: '55210' } }))
    expect(corrected).toMatchObject({ intent: 'cancel_order', facts: { order_id: '55210' } })
  })

  it('a shop question in the middle leaves the active request to go on with after it', () => {
    const address = decide(EMPTY, 'change the address of order 62418', understood('change_shipping_address', 0.95, { entities: { orderId: '62418' } }))
    const hours = decide(after(address, 'change the address of order 62418'), 'what are your opening hours?', understood('contact_customer_service', 0.9))
    expect(hours).toMatchObject({ intent: 'contact_customer_service', topic: { intent: 'change_shipping_address', aside: 'contact_customer_service' } })
    // A request waiting for its order number asks for it again after the side question.
    const waiting = decide(EMPTY, 'i want to change my delivery address', understood('change_shipping_address'))
    const aside = decide(after(waiting, 'i want to change my delivery address'), 'what are your opening hours?', understood('contact_customer_service', 0.9))
    expect(aside.pendingIntent).toBe('change_shipping_address')
    expect(aside.more).toEqual([{ intent: 'change_shipping_address', reply: { kind: 'intent', situations: ['ask_order'] } }])
  })

  it('"it didn\'t help" gives the request\'s next step, then offers a person, and yes hands over', () => {
    const reset = decide(EMPTY, 'forgot my password', understood('recover_password'))
    const first = decide(after(reset, 'forgot my password'), 'did that already, the email never came', understood('registration_problems', 0.5))
    expect(first).toMatchObject({ intent: 'recover_password', reply: { kind: 'intent', situations: ['not_helped'] }, handoff: false })
    const second = decide(after(first, 'did that already, the email never came'), 'still nothing in my inbox', understood('recover_password', 0.6))
    expect(second).toMatchObject({ reply: { kind: 'fallback', name: 'not_helped' }, handoff: false, slots: { pending: 'offer_person' } })
    expect(decide(after(second, 'still nothing in my inbox'), 'yes please', understood('thanks', 0.5))).toMatchObject({ intent: 'contact_human_agent', handoff: true })
  })

  it('a message of several requests answers the same matter\'s questions, and says it will come to another request next', () => {
    const clause = (intent: IntentName, text: string): ClauseReading =>
      ({ understanding: understood(intent, 0.9), answers: answers.rank(stemsOf(text)), asks: true, wants: asksToDo(text, read(text).slots!) })
    const both = (text: string, first: [IntentName, string], second: [IntentName, string]): Decision =>
      policy.decide(EMPTY, understood(second[0], 0.5, { entities: { orderId: '51236' }, candidates: [{ intent: second[0], probability: 0.5 }, { intent: first[0], probability: 0.4 }] }), {}, TODAY,
        { ...read(text), clauses: [clause(...first), clause(...second)] })
    // A question of the same matter with an answer is answered first, for both; the request the customer says they
    // want is the intent and stays active.
    const postage = both('i want to return order 51236 and also who pays the return postage?', ['get_refund', 'i want to return order 51236'], ['check_refund_policy', 'who pays the return postage'])
    expect(postage).toMatchObject({ intent: 'get_refund', answer: { id: 'returns.shipping_cost' }, more: [], topic: { intent: 'get_refund', aside: 'check_refund_policy' } })
    // Two questions of the same matter with answers are both answered.
    const timing = both('how long does the refund take and also who pays the return postage?', ['check_refund_policy', 'how long does the refund take'], ['check_refund_policy', 'who pays the return postage'])
    expect(timing.answer?.id).toBe('refunds.processing_time')
    expect(timing.more).toEqual([{ intent: 'check_refund_policy', reply: { kind: 'answer', id: 'returns.shipping_cost', situations: ['default'] } }])
    // …but not a second answer that states the same policy as the first.
    const window = both('i just changed my mind, can i still return it and also how long is the return window?', ['check_refund_policy', 'i just changed my mind, can i still return it'], ['check_refund_policy', 'how long is the return window'])
    expect(window.more).toEqual([])
    // Another request comes next, even when the pack answers it.
    const charged = both('my order 51236 still has not arrived and also i was charged twice?', ['track_order', 'my order 51236 still has not arrived'], ['payment_issue', 'i was charged twice'])
    expect(charged.intent).toBe('track_order')
    expect(charged.slots.queued).toEqual(['payment_issue'])
    expect(charged.more).toEqual([{ intent: 'payment_issue', reply: { kind: 'fallback', name: 'queued_request' } }])
    expect(charged.values).toMatchObject({ next_request: 'the payment problem' })
    // A request that needs nothing more and reports no problem is answered in the same reply.
    const review = both('where is my order 51236, and also i want to leave a review?', ['track_order', 'where is my order 51236'], ['review', 'i want to leave a review'])
    expect(review.intent).toBe('track_order')
    expect(review.slots.queued).toBeUndefined()
    expect(review.more).toEqual([{ intent: 'review', reply: { kind: 'intent', situations: ['default'] } }])
    // Agreeing to go on takes the queued request.
    expect(decide(after(charged, 'x'), 'ok sure', understood('thanks', 0.5))).toMatchObject({ intent: 'payment_issue', slots: { queued: [] } })
  })

  it('a statement with no request is acknowledged, its purchase date kept, and the customer asked what they need', () => {
    const text = 'Hi! I bought a floor lamp from you on October 25.'
    const decision = decide(EMPTY, text, understood('get_refund', 0.6, { entities: { date: '2026-10-25', dateIsPurchase: false } }))
    expect(decision).toMatchObject({ intent: 'greeting', reply: { kind: 'fallback', name: 'value_without_request' }, facts: { purchase_date: '2026-10-25' }, slots: { pending: 'request' } })
  })

  it('a courtesy with what the customer will do is the courtesy; goodbye wins over thanks and ends what waits', () => {
    expect(decide(EMPTY, "ok I'll look in my junk folder, thanks", understood('place_order', 0.5)).intent).toBe('thanks')
    const waiting = decide(EMPTY, 'where is my order', understood('track_order'))
    const bye = decide(after(waiting, 'where is my order'), 'thanks, bye', understood('thanks', 0.9))
    expect(bye.intent).toBe('goodbye')
    expect(bye.pendingIntent).toBeUndefined()
  })

  it('names the payment method asked about when the pack lists it', () => {
    expect(decide(EMPTY, 'do you take paypal?', understood('check_payment_methods'))).toMatchObject({ answer: { id: 'payments.method' }, values: { payment_method: 'PayPal' }, reply: { situations: ['listed_method', 'default'] } })
    expect(decide(EMPTY, 'can i pay with klarna?', understood('check_payment_methods')).values).toEqual({})
  })

  it('keeps a person on after a handoff for what the customer adds, and the flag says so', () => {
    const angry = decide(EMPTY, 'this is a disgrace, I want to complain!!!', understood('complaint', 0.9, { angry: true, furious: true }))
    expect(angry.handoff).toBe(true)
    expect(decide(after(angry, 'x'), 'the courier threw it over the fence', understood('complaint', 0.8))).toMatchObject({ handoff: true, reply: { kind: 'fallback', name: 'after_handoff' } })
  })

  it('keeps what it stores small: three recent replies, two queued requests', () => {
    let state: DialogueState = EMPTY
    for (const text of ['where is my order', 'what payment methods do you take', 'how long does delivery take', 'what is your refund policy']) {
      const decision = decide(state, text, understood('track_order'))
      state = after(decision, text)
    }
    expect(state.slots?.recent).toHaveLength(3)
    expect(JSON.parse(JSON.stringify(state.slots))).toEqual(state.slots)
  })
})
