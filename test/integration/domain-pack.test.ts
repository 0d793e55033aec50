import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { dump } from 'js-yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkDomainPack, DEFAULT_DOMAIN_PACK, DomainPackError, loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import { INTENTS } from '../../src/chat/intents.ts'
import { ReplyRenderer } from '../../src/chat/replies/renderer.ts'
import { ReplyTemplate, renderLinkUrl } from '../../src/chat/replies/templates.ts'
import { API_KEY, createTestApp, TEST_CHAT_CONFIG } from '../support/app.ts'

let dir: string
/** The default pack merged into one object, as a single-file pack holds it. */
let original: Record<string, any>

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-domain-'))
  original = structuredClone(loadDomainPack()) as Record<string, any>
})

afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

function variant (change: (pack: Record<string, any>) => void): Record<string, any> {
  const copy = structuredClone(original)
  change(copy)
  return copy
}

describe('the default domain pack', () => {
  it('is valid and covers every intent of the catalogue', () => {
    const pack = loadDomainPack()
    expect(Object.keys(pack.intents).sort()).toEqual([...INTENTS].sort())
    expect(pack.policies.return_window_days).toBe(30)
  })

  it('has several reply templates for every intent', () => {
    for (const [name, intent] of Object.entries(loadDomainPack().intents) as Array<[string, { replies: { default: string[] } }]>) {
      expect(intent.replies.default.length, name).toBeGreaterThanOrEqual(2)
    }
  })
})

describe('a domain pack that is wrong stops start-up, naming the place', () => {
  it.each([
    ['a missing intent', (pack: Record<string, any>) => { delete pack['intents']['track_refund'] }, '/intents/track_refund Expected required property'],
    ['an intent outside the catalogue', (pack: Record<string, any>) => { pack['intents']['sell_stocks'] = pack['intents']['greeting'] }, '/intents'],
    ['a policy of the wrong type', (pack: Record<string, any>) => { pack['policies']['return_window_days'] = 'thirty' }, '/policies/return_window_days'],
    ['a link that is not under {base}', (pack: Record<string, any>) => { pack['links']['contact'].url = 'https://evil.example/contact' }, '/links/contact/url'],
    ['a reply naming an unknown link', (pack: Record<string, any>) => { pack['intents']['review'].replies.default.push('See {link:nowhere}') }, 'unknown link "nowhere"'],
    ['an unclosed optional part', (pack: Record<string, any>) => { pack['intents']['review'].replies.default.push('Thanks [{customer_name}') }, '"[" without "]"'],
    ['an order intent that cannot ask for the order', (pack: Record<string, any>) => { delete pack['intents']['track_order'].replies.ask_order }, '/intents/track_order/replies/ask_order is required'],
    ['an intent with nothing to say without context', (pack: Record<string, any>) => { pack['intents']['review'].replies.default = ['Thanks {customer_name}!'] }, '/intents/review/replies/default needs a template'],
    ['replies for a situation the intent does not have', (pack: Record<string, any>) => { pack['intents']['review'].replies.broken_item = ['Sorry!'] }, '/intents/review/replies/broken_item: no such situation'],
    ['a situation with too few examples', (pack: Record<string, any>) => { pack['intents']['review'].situations = { stars: ['five stars'] } }, '/intents/review/situations/stars'],
    ['a policy no answer states', (pack: Record<string, any>) => {
      pack['answers'] = pack['answers'].filter((answer: { states: string[] }) => !answer.states.includes('missing_items'))
    }, '/policies: no answer states "missing_items"'],
    ['an answer stating a fact the policies lack', (pack: Record<string, any>) => { pack['answers'][0].states.push('loyalty_points') }, 'no policy fact "loyalty_points"'],
    ['an answer writing a figure no stated policy gives', (pack: Record<string, any>) => {
      const answer = pack['answers'].find((candidate: { id: string }) => candidate.id === 'returns.shipping_cost')
      answer.replies.default.push('A return label costs $3.50.')
    }, '"$3.50" is in no policy the answer states'],
    ['two answers with one id', (pack: Record<string, any>) => { pack['answers'][1].id = pack['answers'][0].id }, 'the id is used twice'],
    ['a case told that no answer supposes', (pack: Record<string, any>) => { pack['slots'].cases.lost_in_the_post = ['the courier lost it'] }, '/slots/cases/lost_in_the_post: no answer supposes it'],
    ['an answer example that names none of the answer\'s names', (pack: Record<string, any>) => {
      const answer = pack['answers'].find((candidate: { id: string }) => candidate.id === 'discounts.combine')
      answer.examples.push('can i use two of them at once')
    }, "names none of the answer's names (code, discount, voucher, coupon, promo, promotion)"],
    ['answer replies for a situation the dialogue does not know', (pack: Record<string, any>) => { pack['answers'][0].replies.sunny_day = ['Nice!'] }, '/replies/sunny_day: no such situation'],
    ['an answer with nothing to say without context', (pack: Record<string, any>) => {
      const answer = pack['answers'].find((candidate: { id: string }) => candidate.id === 'contact.email')
      answer.replies.default = ['Write to us about order {order_id}.']
    }, '(contact.email)/replies/default needs a template'],
    ['an answer with too few examples', (pack: Record<string, any>) => { pack['answers'][0].examples = ['how long'] }, '/answers/0/examples'],
    ['an answer for an intent outside the support catalogue', (pack: Record<string, any>) => { pack['answers'][0].intents = ['greeting'] }, '/answers/0/intents/0'],
    ['a dialogue role outside the support catalogue', (pack: Record<string, any>) => { pack['dialogue'].roles.refund = 'thanks' }, '/dialogue/roles/refund'],
    ['an item situation the slots do not have', (pack: Record<string, any>) => { pack['slots'].item_in_hand.push('melted') }, '/slots: "melted" is no item_situation'],
    ['a situation whose rule is no policy', (pack: Record<string, any>) => { pack['slots'].situation_policies.missing_item = 'lost_items' }, '/slots/situation_policies/missing_item: no policy "lost_items"']
  ])('%s', (_case, change, message) => {
    expect(() => checkDomainPack(variant(change), 'test pack')).toThrow(DomainPackError)
    expect(() => checkDomainPack(variant(change), 'test pack')).toThrow(message)
  })

  it('a file that is not YAML', async () => {
    const file = join(dir, 'broken.yaml')
    await writeFile(file, 'name: [unclosed')
    expect(() => loadDomainPack(file)).toThrow(/broken\.yaml is not valid YAML or JSON/)
  })

  it('a file that does not exist', () => {
    expect(() => loadDomainPack(join(dir, 'missing.json'))).toThrow(/missing\.json cannot be read \(ENOENT\)/)
  })

  it('a pack directory without answers', async () => {
    const copy = await mkdtemp(join(dir, 'pack-'))
    await cp(DEFAULT_DOMAIN_PACK, copy, { recursive: true })
    await rm(join(copy, 'answers'), { recursive: true })
    expect(() => loadDomainPack(copy)).toThrow(/answers cannot be read \(ENOENT\)/)
  })

  it('a pack directory without responses.yaml', async () => {
    const empty = await mkdtemp(join(dir, 'empty-'))
    expect(() => loadDomainPack(empty)).toThrow(/responses\.yaml cannot be read \(ENOENT\)/)
  })

  it.each([
    ['an intent outside the catalogue', 'intent: sell_stocks\nexamples: [buy shares]\n', /nlu\/extra\.yaml is invalid: \/intent/],
    ['examples that are not text', 'intent: review\nexamples: [[1, 2]]\n', /nlu\/extra\.yaml is invalid: \/examples\/0/],
    ['an unknown member', 'intent: review\nexample: [nice]\n', /nlu\/extra\.yaml is invalid/]
  ])('an nlu file with %s, naming the file', async (_case, text, message) => {
    const copy = await mkdtemp(join(dir, 'pack-'))
    await cp(DEFAULT_DOMAIN_PACK, copy, { recursive: true })
    await writeFile(join(copy, 'nlu', 'extra.yaml'), text)
    expect(() => loadDomainPack(copy)).toThrow(DomainPackError)
    expect(() => loadDomainPack(copy)).toThrow(message)
  })
})

describe('a pack directory', () => {
  it('adds the examples of every nlu file to the intent it names', async () => {
    const copy = await mkdtemp(join(dir, 'pack-'))
    await cp(DEFAULT_DOMAIN_PACK, copy, { recursive: true })
    await writeFile(join(copy, 'nlu', 'more-reviews.yaml'), dump({ intent: 'review', examples: ['I would give the kettle five stars'] }))
    const pack = loadDomainPack(copy)
    const before: string[] = original['intents']['review'].examples
    expect(pack.intents.review.examples).toHaveLength(before.length + 1)
    expect(pack.intents.review.examples).toEqual(expect.arrayContaining([...before, 'I would give the kettle five stars']))
  })
})

describe('DOMAIN_PACK', () => {
  it('a JSON pack with its own policies changes what the assistant says', async () => {
    const file = join(dir, 'shop.json')
    await writeFile(file, JSON.stringify(variant((pack) => {
      pack['policies']['return_window_days'] = 14
      pack['policies']['payment_methods'] = ['Visa', 'cash on delivery']
    })))
    const t = await createTestApp({
      chat: { ...TEST_CHAT_CONFIG, domainPack: file, supportBaseUrl: 'https://help.example.org', redisKeyPrefix: 'x:', conversationTtlMs: 60_000, maxConversations: 10, historyLimit: 10 }
    })
    try {
      const send = async (message: string, context: Record<string, string> = {}): Promise<{ reply: string, links: Array<{ url: string }> }> =>
        (await t.app.inject({ method: 'POST', url: '/v1/chat/send', headers: { authorization: `Bearer ${API_KEY}` }, payload: { message, user_id: 'u', context } })).json()
      expect((await send('what payment methods do you accept')).reply).toContain('Visa and cash on delivery')
      const refund = await send('I want a refund', { order_id: 'Z-1', purchase_date: new Date(Date.now() - 20 * 86_400_000).toISOString().slice(0, 10) })
      expect(refund.reply).toMatch(/window of 14 days (?:for .+ )?(?:ended|closed)/)
      expect(refund.links.map((link) => link.url)).toContain('https://help.example.org/contact')
    } finally {
      await t.close()
    }
  })

  it('a single YAML file, a JSON file and the directory are the same pack', async () => {
    const yaml = join(dir, 'same.yaml')
    const json = join(dir, 'same.json')
    await writeFile(yaml, dump(original))
    await writeFile(json, JSON.stringify(original))
    expect(loadDomainPack(yaml)).toEqual(loadDomainPack())
    expect(loadDomainPack(json)).toEqual(loadDomainPack())
  })
})

describe('reply templates', () => {
  const links = new Map([['tracking', { name: 'tracking', label: 'Track', url: 'https://s/orders/A-1/tracking' }]])

  it('fills values and links, and lists the links it used', () => {
    const template = new ReplyTemplate('Order {order_id}: {link:tracking}')
    expect(template.render(new Map([['order_id', 'A-1']]), links)).toEqual({
      text: 'Order A-1: https://s/orders/A-1/tracking',
      links: [{ name: 'tracking', label: 'Track', url: 'https://s/orders/A-1/tracking' }]
    })
    // Both the value and the link are particular to the conversation; neither is general.
    expect(template.specificity({ value: () => true, link: () => true }, new Set())).toBe(2)
  })

  it('is not used when a required value is unknown', () => {
    expect(new ReplyTemplate('Order {order_id} is on its way').render(new Map(), links)).toBeUndefined()
  })

  it('leaves out an optional part whose value is unknown', () => {
    const template = new ReplyTemplate('Hello[ {customer_name}]!')
    expect(template.render(new Map(), links)?.text).toBe('Hello!')
    expect(template.render(new Map([['customer_name', 'Ana']]), links)?.text).toBe('Hello Ana!')
  })

  it('URL-encodes context values in links', () => {
    expect(renderLinkUrl('{base}/orders/{order_id}', 'https://s', new Map([['order_id', 'A 1/../x?y']])))
      .toBe('https://s/orders/A%201%2F..%2Fx%3Fy')
    expect(renderLinkUrl('{base}/orders/{order_id}', 'https://s', new Map())).toBeUndefined()
  })
})

describe('every reply of the default pack reads well', () => {
  // Rendered with everything a conversation can know, so that every optional part shows.
  const pack = loadDomainPack()
  const renderer = new ReplyRenderer(pack, { baseUrl: 'https://shop.example.com' })
  const facts = { order_id: 'A-10042', purchase_date: '2026-11-02', email: 'jo@example.com', customer_name: 'Jo', payment_method: 'PayPal', next_request: 'the refund', pay_answer: 'No' }
  const templates = [
    ...Object.entries(pack.intents).flatMap(([intent, definition]) =>
      Object.entries(definition.replies).flatMap(([situation, sources]) => sources.map((source) => [`${intent}/${situation}`, source] as const))),
    ...Object.entries(pack.fallback).flatMap(([name, sources]) => sources.map((source) => [`fallback/${name}`, source] as const)),
    ...pack.answers.flatMap((answer) =>
      Object.entries(answer.replies).flatMap(([situation, sources]) => sources.map((source) => [`answers/${answer.id}/${situation}`, source] as const)))
  ]

  it.each(templates)('%s: %s', (_where, source) => {
    const reply = renderer.render({ groups: [[source]], facts, today: '2026-11-20' })
    expect(reply).toBeDefined()
    const text = reply!.text
    // No two links with nothing but spaces or punctuation between them.
    expect(text).not.toMatch(/https?:\/\/\S+[\s.,;:]*https?:\/\//)
    // Parentheses balanced and never nested (policy values have their own, as delivery options do).
    let depth = 0
    for (const character of text) {
      depth += character === '(' ? 1 : character === ')' ? -1 : 0
      expect(depth).toBeGreaterThanOrEqual(0)
      expect(depth).toBeLessThanOrEqual(1)
    }
    expect(depth).toBe(0)
    // A sentence, not a fragment: it starts with a capital letter or a value, and ends with punctuation or a link.
    expect(text).toMatch(/^[A-Z"0-9{]/)
    expect(text).toMatch(/([.!?)]|https?:\/\/\S+)$/)
    expect(text).not.toMatch(/\s[.,;:]|\.\.|\s{2}/)
  })
})
