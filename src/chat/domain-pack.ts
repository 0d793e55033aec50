import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { parse as parseYaml } from 'yaml'
import { DomainPack, type IntentReplies } from '../../schemas/domain-pack.ts'
import { linkValueNames, ReplyTemplate, TemplateSyntaxError } from './templates.ts'

/** The pack that ships with the service (README: "The domain pack"). */
export const DEFAULT_DOMAIN_FILE = new URL('../../domain/default.yaml', import.meta.url).pathname

/** Values every reply can use, from the pack's policies. */
export const POLICY_VALUES = [
  'shop_name',
  'return_window_days',
  'refund_processing_days',
  'cancellation_fee_rules',
  'delivery_options',
  'payment_methods',
  'contact_phone',
  'contact_email',
  'contact_hours',
  'contact_chat'
] as const

export class DomainPackError extends Error {
  override name = 'DomainPackError'
}

/** Reads a YAML or JSON domain pack and checks it, naming the file and the place of the first problems. */
export function loadDomainPack (path: string = DEFAULT_DOMAIN_FILE): DomainPack {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new DomainPackError(`Domain pack ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  let data: unknown
  try {
    // YAML 1.2 is a superset of JSON: one parser reads both.
    data = parseYaml(text)
  } catch (error) {
    throw new DomainPackError(`Domain pack ${path} is not valid YAML or JSON: ${(error as Error).message}`)
  }
  return checkDomainPack(data, path)
}

/** Validates a parsed pack: its shape (schemas/domain-pack.ts), then what the shape cannot say. */
export function checkDomainPack (data: unknown, source = 'domain pack'): DomainPack {
  const withDefaults = Value.Default(DomainPack, structuredClone(data))
  const shapeErrors = [...Value.Errors(DomainPack, withDefaults)].slice(0, 5)
    .map((error) => `${error.path === '' ? '/' : error.path} ${error.message}`)
  if (shapeErrors.length > 0) throw new DomainPackError(`Domain pack ${source} is invalid: ${shapeErrors.join('; ')}`)
  const pack = withDefaults as DomainPack

  const problems: string[] = []
  for (const [name, intent] of Object.entries(pack.intents)) {
    const where = `/intents/${name}/replies`
    const parsed = new Map<string, ReplyTemplate>()
    for (const [situation, sources] of Object.entries(intent.replies as IntentReplies)) {
      for (const [index, source] of (sources ?? []).entries()) {
        let template: ReplyTemplate
        try {
          template = new ReplyTemplate(source)
        } catch (error) {
          if (!(error instanceof TemplateSyntaxError)) throw error
          problems.push(`${where}/${situation}/${index}: ${error.message}`)
          continue
        }
        parsed.set(source, template)
        for (const link of template.linkNames()) {
          if (pack.links[link] === undefined) problems.push(`${where}/${situation}/${index}: unknown link "${link}"`)
        }
      }
    }
    // Whatever the context lacks, the intent must still have something to say (an intent that needs an order
    // only replies once it has one).
    const known = new Set<string>([...POLICY_VALUES, ...(intent.needs_order === true ? ['order_id'] : [])])
    const unconditional = intent.replies.default.some((source) => {
      const template = parsed.get(source)
      return template !== undefined &&
        template.requiredValues().every((value) => known.has(value)) &&
        template.requiredLinks().every((link) => linkValueNames(pack.links[link]?.url ?? '').every((value) => known.has(value)))
    })
    if (!unconditional) {
      problems.push(`${where}/default needs a template that uses only policy values and links without context values`)
    }
    if (intent.needs_order === true && intent.replies.ask_order === undefined) {
      problems.push(`${where}/ask_order is required because the intent needs an order`)
    }
  }
  if (problems.length > 0) throw new DomainPackError(`Domain pack ${source} is invalid: ${problems.slice(0, 5).join('; ')}`)
  return pack
}
