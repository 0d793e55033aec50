import { createHash } from 'node:crypto'
import type { DomainIntent, DomainPack, ReplySituation } from '../../schemas/domain-pack.ts'
import type { Conversation, Fact } from './conversation.ts'
import { extractEntities } from './entities.ts'
import { POLICY_VALUES } from './domain-pack.ts'
import { IntentModel, type IntentScore } from './intent-model.ts'
import { isIntentName, OUT_OF_SCOPE, SUPPORT_INTENTS, type IntentName, type SupportIntent } from './intents.ts'
import { returnWindow, utcDate } from './return-window.ts'
import { linkValueNames, ReplyTemplate, renderLinkUrl, type RenderedLink } from './templates.ts'

export interface AssistantOptions {
  /** SUPPORT_BASE_URL: the `{base}` of every link, without a trailing slash. */
  baseUrl: string
  /** Picks among usable templates; injectable so that tests can be exact. */
  random?: () => number
}

export interface Understanding {
  intent: IntentName
  confidence: number
}

export interface AssistantReply {
  reply: string
  intent: IntentName
  confidence: number
  links: RenderedLink[]
  handoff: boolean
}

/** What the request adds to the conversation besides the message. */
export type RequestContext = Record<string, Fact>

const SUPPORT_INTENT_SET: ReadonlySet<string> = new Set(SUPPORT_INTENTS)
const ANGRY_PUNCTUATION = /[!?]{3,}/

/**
 * The dialogue: understands a message (intent model + entities), updates what the conversation knows, and picks the
 * reply the domain pack has for the situation. Plain logic over a Conversation object; storing it is the caller's.
 */
export class SupportAssistant {
  readonly pack: DomainPack
  readonly model: IntentModel
  readonly #baseUrl: string
  readonly #random: () => number
  readonly #templates = new Map<string, ReplyTemplate>()
  readonly #angerWords: RegExp
  /** Values and links that are the same in every conversation. */
  readonly #general: ReadonlySet<string>
  /** The policies as template values, formatted once. */
  readonly #policyValues: ReadonlyMap<string, string>

  constructor (pack: DomainPack, options: AssistantOptions) {
    this.pack = pack
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#random = options.random ?? Math.random
    this.model = trainedModel(pack)
    this.#policyValues = policyValues(pack)
    const words = pack.understanding.anger_words.map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    const fixedLinks = Object.entries(pack.links).filter(([, link]) => linkValueNames(link.url).length === 0)
    this.#general = new Set([...POLICY_VALUES, ...fixedLinks.map(([name]) => `link:${name}`)])
    this.#angerWords = new RegExp(`\\b(?:${words.join('|') || '(?!)'})`, 'i')
  }

  /** The intent of one message; below the pack's confidence threshold it is out_of_scope. */
  classifyIntent (message: string): Understanding {
    const score: IntentScore = this.model.classify(message)
    const intent = isIntentName(score.intent) ? score.intent : OUT_OF_SCOPE
    if (score.confidence < this.pack.understanding.confidence_threshold && intent !== OUT_OF_SCOPE) {
      return { intent: OUT_OF_SCOPE, confidence: round(1 - score.confidence) }
    }
    return { intent, confidence: round(score.confidence) }
  }

  /** Answers `message` and records in `conversation` what was learnt; the caller appends the turns and saves. */
  respond (conversation: Conversation, message: string, context: RequestContext, now: Date): AssistantReply {
    const facts = conversation.facts
    Object.assign(facts, context)
    const pending = conversation.pendingIntent
    const entities = extractEntities(message, pending !== undefined)
    if (entities.orderId !== undefined) facts['order_id'] = entities.orderId
    if (entities.email !== undefined) facts['email'] = entities.email
    if (entities.date !== undefined && entities.dateIsPurchase === true && context['purchase_date'] === undefined) {
      facts['purchase_date'] = entities.date
    }

    let { intent, confidence } = this.classifyIntent(message)
    // The order number the assistant asked for completes the waiting request, unless the message clearly asks
    // for something else.
    if (pending !== undefined && entities.orderId !== undefined && (intent === pending || !SUPPORT_INTENT_SET.has(intent))) {
      intent = pending
      confidence = 1
    }

    const understood = intent !== OUT_OF_SCOPE
    conversation.misunderstoodInARow = understood ? 0 : conversation.misunderstoodInARow + 1
    if (SUPPORT_INTENT_SET.has(intent) || intent === 'goodbye') delete conversation.pendingIntent

    const definition = this.pack.intents[intent]
    const values = this.#values(facts, now)
    const links = this.#links(values)

    if (!understood && conversation.misunderstoodInARow >= 2) {
      const rendered = this.#pick(this.pack.fallback.misunderstood_handoff, values, links, conversation)
      return { reply: rendered.text, intent, confidence, links: rendered.links, handoff: true }
    }

    const angry = intent === 'complaint' && this.#isAngry(message)
    const situations = this.#situations(definition, facts, now, angry)
    if (situations[0] === 'ask_order') conversation.pendingIntent = intent as SupportIntent
    for (const situation of situations) {
      const sources = definition.replies[situation]
      if (sources === undefined) continue
      const rendered = this.#tryPick(sources, values, links, conversation)
      if (rendered !== undefined) {
        const handoff = definition.handoff === true || angry
        return { reply: rendered.text, intent, confidence, links: rendered.links, handoff }
      }
    }
    // Unreachable with a checked pack: every intent has a default template that needs no context.
    throw new Error(`No usable reply for intent ${intent}`)
  }

  /** The reply situations to try, most specific first. */
  #situations (definition: DomainIntent, facts: Record<string, Fact>, now: Date, angry: boolean): ReplySituation[] {
    if (definition.needs_order === true && facts['order_id'] === undefined) return ['ask_order']
    if (angry) return ['angry', 'default']
    const purchaseDate = facts['purchase_date']
    if (definition.uses_return_window === true && typeof purchaseDate === 'string') {
      const { situation } = returnWindow(purchaseDate, utcDate(now), this.pack.policies.return_window_days)
      return situation === 'window_last_day' ? [situation, 'inside_window', 'default'] : [situation, 'default']
    }
    return ['default']
  }

  #isAngry (message: string): boolean {
    const letters = message.replace(/[^a-zA-Z]/g, '')
    const shouting = letters.length >= 12 && letters === letters.toUpperCase()
    return shouting || ANGRY_PUNCTUATION.test(message) || this.#angerWords.test(message)
  }

  /** Every value a template may use: what the conversation knows, what follows from it, then the policies. */
  #values (facts: Record<string, Fact>, now: Date): Map<string, string> {
    const values = new Map<string, string>()
    for (const [name, fact] of Object.entries(facts)) values.set(name, String(fact))
    const today = utcDate(now)
    values.set('today', today)
    const purchaseDate = facts['purchase_date']
    if (typeof purchaseDate === 'string') {
      const window = returnWindow(purchaseDate, today, this.pack.policies.return_window_days)
      values.set('return_deadline', window.deadline)
      values.set('days_left', plural(window.daysLeft, 'day'))
      values.set('days_since_purchase', plural(window.daysSincePurchase, 'day'))
    }
    // Policies last: a context member cannot change what the shop's policy says.
    for (const name of POLICY_VALUES) values.delete(name)
    for (const [name, value] of this.#policyValues) values.set(name, value)
    return values
  }

  /** The pack's links whose URL can be filled in now. */
  #links (values: ReadonlyMap<string, string>): Map<string, RenderedLink> {
    const links = new Map<string, RenderedLink>()
    for (const [name, link] of Object.entries(this.pack.links)) {
      const url = renderLinkUrl(link.url, this.#baseUrl, values)
      if (url !== undefined) links.set(name, { label: link.label, url })
    }
    return links
  }

  #pick (sources: readonly string[], values: Map<string, string>, links: Map<string, RenderedLink>, conversation: Conversation): { text: string, links: RenderedLink[] } {
    const rendered = this.#tryPick(sources, values, links, conversation)
    if (rendered === undefined) throw new Error('No usable fallback reply')
    return rendered
  }

  /**
   * A usable template at random among those that say the most about this conversation (the order, the customer's
   * name), avoiding the assistant's previous reply so that answers vary.
   */
  #tryPick (sources: readonly string[], values: Map<string, string>, links: Map<string, RenderedLink>, conversation: Conversation): { text: string, links: RenderedLink[] } | undefined {
    const rendered = sources.flatMap((source) => {
      const reply = this.#template(source).render(values, links, this.#general)
      return reply === undefined ? [] : [reply]
    })
    if (rendered.length === 0) return undefined
    const mostSpecific = Math.max(...rendered.map((reply) => reply.specificity))
    const usable = rendered.filter((reply) => reply.specificity === mostSpecific)
    const previous = conversation.turns.findLast((turn) => turn.role === 'assistant')?.text
    const fresh = usable.filter((rendered) => rendered.text !== previous)
    const choices = fresh.length > 0 ? fresh : usable
    const choice = choices[Math.min(choices.length - 1, Math.floor(this.#random() * choices.length))]!
    return { text: choice.text, links: choice.links }
  }

  #template (source: string): ReplyTemplate {
    let template = this.#templates.get(source)
    if (template === undefined) {
      template = new ReplyTemplate(source)
      this.#templates.set(source, template)
    }
    return template
  }
}

/** The last model trained, by a hash of what it was trained from: apps built again from one pack (tests) train once. */
let lastTrained: { key: string, model: IntentModel } | undefined

function trainedModel (pack: DomainPack): IntentModel {
  const examples = Object.entries(pack.intents).flatMap(([intent, definition]) =>
    definition.examples.map((text) => ({ text, intent })))
  const synonyms = pack.understanding.synonyms
  const key = createHash('sha256').update(JSON.stringify([examples, synonyms])).digest('base64')
  if (lastTrained?.key !== key) lastTrained = { key, model: IntentModel.train(examples, { synonyms }) }
  return lastTrained.model
}

function policyValues (pack: DomainPack): Map<string, string> {
  const { policies } = pack
  const values = new Map<string, string>([
    ['shop_name', pack.name],
    ['return_window_days', String(policies.return_window_days)],
    ['refund_processing_days', String(policies.refund_processing_days)],
    ['cancellation_fee_rules', policies.cancellation_fee_rules.join(' ')],
    ['delivery_options', listOf(policies.delivery_options.map((option) => `${option.name} (${option.period}, ${option.price})`))],
    ['payment_methods', listOf(policies.payment_methods)],
    ['contact_phone', policies.contact.phone],
    ['contact_email', policies.contact.email],
    ['contact_hours', policies.contact.hours]
  ])
  if (policies.contact.chat !== undefined) values.set('contact_chat', policies.contact.chat)
  return values
}

function round (value: number): number {
  return Math.round(value * 1000) / 1000
}

function plural (count: number, unit: string): string {
  const magnitude = Math.abs(count)
  return `${magnitude} ${unit}${magnitude === 1 ? '' : 's'}`
}

function listOf (items: readonly string[]): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]!}`
}
