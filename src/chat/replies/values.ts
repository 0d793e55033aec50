import { writtenDate } from '../calendar.ts'
import type { Fact } from '../dialogue/conversation.ts'
import { returnWindow } from '../dialogue/return-window.ts'
import { POLICY_VALUES } from '../domain-pack/load.ts'
import { deliveryOptionValues } from '../domain-pack/policy-facts.ts'
import type { DomainPack } from '../domain-pack/schema.ts'
import type { ValueSource } from './templates.ts'

/** The pack's policies as template values, formatted once per pack. */
export function policyValues (pack: DomainPack): Map<string, string> {
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
  for (const [name, value] of deliveryOptionValues(policies)) values.set(name, value)
  if (policies.contact.chat !== undefined) values.set('contact_chat', policies.contact.chat)
  for (const name of ['return_shipping', 'exchanges', 'defective_items', 'missing_items', 'late_deliveries', 'discount_codes', 'account_security'] as const) {
    const policy = policies[name]
    if (policy !== undefined) values.set(name, policy)
  }
  return values
}

const POLICY_NAMES: ReadonlySet<string> = new Set(POLICY_VALUES)
const WINDOW_VALUES: ReadonlySet<string> = new Set(['return_deadline', 'days_left', 'days_since_purchase'])

/**
 * Every value a template may use, looked up when a template asks for it (a reply reads a few): the policies first,
 * so that a context member cannot change what the shop's policy says; then what follows from the purchase date (the
 * return window), `today`, and what the conversation knows. Dates are written as customers read them ("December 2,
 * 2026"), not as the API carries them.
 */
export class TemplateValues implements ValueSource {
  readonly #facts: Readonly<Record<string, Fact>>
  readonly #today: string
  readonly #windowDays: number
  readonly #policies: ReadonlyMap<string, string>
  #window: ReadonlyMap<string, string> | undefined

  constructor (facts: Readonly<Record<string, Fact>>, today: string, windowDays: number, policies: ReadonlyMap<string, string>) {
    this.#facts = facts
    this.#today = today
    this.#windowDays = windowDays
    this.#policies = policies
  }

  get (name: string): string | undefined {
    if (POLICY_NAMES.has(name) || this.#policies.has(name)) return this.#policies.get(name)
    const purchaseDate = this.#facts['purchase_date']
    if (WINDOW_VALUES.has(name) && typeof purchaseDate === 'string') return this.#windowValues(purchaseDate).get(name)
    if (name === 'today') return writtenDate(this.#today)
    if (!Object.hasOwn(this.#facts, name)) return undefined
    const value = this.#facts[name]
    return name === 'purchase_date' && typeof value === 'string' ? writtenDate(value) : String(value)
  }

  #windowValues (purchaseDate: string): ReadonlyMap<string, string> {
    if (this.#window === undefined) {
      const window = returnWindow(purchaseDate, this.#today, this.#windowDays)
      this.#window = new Map([
        ['return_deadline', writtenDate(window.deadline)],
        ['days_left', plural(window.daysLeft, 'day')],
        ['days_since_purchase', plural(window.daysSincePurchase, 'day')]
      ])
    }
    return this.#window
  }
}

function plural (count: number, unit: string): string {
  const magnitude = Math.abs(count)
  return `${magnitude} ${unit}${magnitude === 1 ? '' : 's'}`
}

function listOf (items: readonly string[]): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]!}`
}
