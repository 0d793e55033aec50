import type { Static } from '@sinclair/typebox'
import type { DomainPolicies } from './schema.ts'

type Policies = Static<typeof DomainPolicies>

/**
 * The policy facts an answer can state (`return_shipping`, `delivery_options.express`, `contact.hours`…), each with
 * the text the pack gives it: every fact must be stated by some answer, and a figure an answer's reply writes out
 * must be in the text of a fact it states.
 */
export function policyFacts (policies: Policies): Map<string, string> {
  const facts = new Map<string, string>([
    ['return_window_days', `${policies.return_window_days} days`],
    ['refund_processing_days', `${policies.refund_processing_days} days`],
    ['cancellation_fee_rules', policies.cancellation_fee_rules.join(' ')],
    ['delivery_options', policies.delivery_options.map(optionText).join(' ')],
    ['payment_methods', policies.payment_methods.join(', ')]
  ])
  for (const option of policies.delivery_options) facts.set(deliveryOptionFact(option.name), optionText(option))
  for (const [name, text] of Object.entries(policies.contact)) if (text !== undefined) facts.set(`contact.${name}`, text)
  for (const name of ['return_shipping', 'exchanges', 'defective_items', 'missing_items', 'late_deliveries', 'discount_codes', 'account_security'] as const) {
    const text = policies[name]
    if (text !== undefined) facts.set(name, text)
  }
  return facts
}

/** The fact about one delivery option, by its name: `delivery_options.store_pickup`. */
export function deliveryOptionFact (name: string): string {
  return `delivery_options.${slug(name)}`
}

/**
 * Each delivery option as template values: `delivery_express_price`, `delivery_express_period`,
 * `delivery_store_pickup_price`… (the option's name in lower case, words joined by `_`).
 */
export function deliveryOptionValues (policies: Policies): Map<string, string> {
  const values = new Map<string, string>()
  for (const option of policies.delivery_options) {
    const name = slug(option.name)
    values.set(`delivery_${name}_name`, option.name)
    values.set(`delivery_${name}_period`, option.period)
    values.set(`delivery_${name}_price`, option.price)
  }
  return values
}

/** Figures a text writes out: amounts, counts, times ("$4.95", "14", "20:00", "10%"). */
export function figuresIn (text: string): string[] {
  return text.match(FIGURE) ?? []
}

const FIGURE = /\$?\d+(?:[.,:]\d+)*%?/g

function optionText (option: Policies['delivery_options'][number]): string {
  return `${option.name}: ${option.period}, ${option.price}`
}

function slug (name: string): string {
  return name.toLowerCase().split(/[^a-z0-9]+/).filter((part) => part !== '').join('_')
}
