/** The 27 customer-support intents, in the catalogue's order; the names are part of the API contract. */
export const SUPPORT_INTENTS = [
  'cancel_order',
  'change_order',
  'change_shipping_address',
  'check_cancellation_fee',
  'check_invoice',
  'check_payment_methods',
  'check_refund_policy',
  'complaint',
  'contact_customer_service',
  'contact_human_agent',
  'create_account',
  'delete_account',
  'delivery_options',
  'delivery_period',
  'edit_account',
  'get_invoice',
  'get_refund',
  'newsletter_subscription',
  'payment_issue',
  'place_order',
  'recover_password',
  'registration_problems',
  'review',
  'set_up_shipping_address',
  'switch_account',
  'track_order',
  'track_refund'
] as const

/** Conversation courtesies the assistant answers without a support task. */
export const SOCIAL_INTENTS = ['greeting', 'thanks', 'goodbye'] as const

/** What a retail support desk does not handle; also the answer when the assistant is not confident. */
export const OUT_OF_SCOPE = 'out_of_scope'

export const INTENTS = [...SUPPORT_INTENTS, ...SOCIAL_INTENTS, OUT_OF_SCOPE] as const

export type IntentName = typeof INTENTS[number]
export type SupportIntent = typeof SUPPORT_INTENTS[number]

const INTENT_SET: ReadonlySet<string> = new Set(INTENTS)

export function isIntentName (name: string): name is IntentName {
  return INTENT_SET.has(name)
}

const SUPPORT_INTENT_SET: ReadonlySet<string> = new Set(SUPPORT_INTENTS)

export function isSupportIntent (name: string): name is SupportIntent {
  return SUPPORT_INTENT_SET.has(name)
}
