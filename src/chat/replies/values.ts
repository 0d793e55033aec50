import type { Fact } from '../dialogue/conversation.ts'
import { returnWindow } from '../dialogue/return-window.ts'
import { POLICY_VALUES } from '../domain-pack/load.ts'
import type { DomainPack } from '../domain-pack/schema.ts'

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
  if (policies.contact.chat !== undefined) values.set('contact_chat', policies.contact.chat)
  for (const name of ['return_shipping', 'exchanges', 'defective_items', 'missing_items', 'late_deliveries', 'discount_codes', 'account_security'] as const) {
    const policy = policies[name]
    if (policy !== undefined) values.set(name, policy)
  }
  return values
}

/**
 * Every value a template may use: what the conversation knows, what follows from it (the return window), then the
 * policies, last, so that a context member cannot change what the shop's policy says.
 */
export function templateValues (facts: Readonly<Record<string, Fact>>, today: string, windowDays: number, policies: ReadonlyMap<string, string>): Map<string, string> {
  const values = new Map<string, string>()
  for (const [name, fact] of Object.entries(facts)) values.set(name, String(fact))
  values.set('today', today)
  const purchaseDate = facts['purchase_date']
  if (typeof purchaseDate === 'string') {
    const window = returnWindow(purchaseDate, today, windowDays)
    values.set('return_deadline', window.deadline)
    values.set('days_left', plural(window.daysLeft, 'day'))
    values.set('days_since_purchase', plural(window.daysSincePurchase, 'day'))
  }
  for (const name of POLICY_VALUES) values.delete(name)
  for (const [name, value] of policies) values.set(name, value)
  return values
}

function plural (count: number, unit: string): string {
  const magnitude = Math.abs(count)
  return `${magnitude} ${unit}${magnitude === 1 ? '' : 's'}`
}

function listOf (items: readonly string[]): string {
  if (items.length <= 1) return items.join('')
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]!}`
}
