import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Static, TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { load as parseYaml } from 'js-yaml'
import { stemsOf } from '../answers/terms.ts'
import { linkValueNames, ReplyTemplate, TemplateSyntaxError } from '../replies/templates.ts'
import { deliveryOptionValues, figuresIn, policyFacts } from './policy-facts.ts'
import { AnswersFile, DomainPack, NluFile } from './schema.ts'

/** The pack that ships with the service: `domain/` (docs/chat.md, "The domain pack"). */
export const DEFAULT_DOMAIN_PACK = fileURLToPath(new URL('../../../domain', import.meta.url))

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
  'contact_chat',
  'return_shipping',
  'exchanges',
  'defective_items',
  'missing_items',
  'late_deliveries',
  'discount_codes',
  'account_security'
] as const

/**
 * Reply situations the dialogue itself decides, besides the situations an intent's examples describe and the values
 * of the pack's slots (`wrong_item`, `prefers_exchange`, `no_account`…).
 */
export const DIALOGUE_SITUATIONS = ['default', 'ask_order', 'inside_window', 'window_last_day', 'outside_window', 'future_purchase', 'angry', 'not_helped', 'listed_method', 'account_scope', 'wish', 'asks_time'] as const

export class DomainPackError extends Error {
  override name = 'DomainPackError'
}

/**
 * Reads a domain pack and checks it, naming the file and the place of the first problems. `path` is a pack directory
 * (`responses.yaml`, `slots.yaml`, `nlu/understanding.yaml`, any number of `nlu/*.yaml` files of examples and of
 * `answers/*.yaml` files of answers) or one YAML or JSON file holding the merged pack.
 */
export function loadDomainPack (path: string = DEFAULT_DOMAIN_PACK): DomainPack {
  let directory: boolean
  try {
    directory = statSync(path).isDirectory()
  } catch (error) {
    throw new DomainPackError(`Domain pack ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  return checkDomainPack(directory ? readPackDirectory(path) : readData(path), path)
}

/** The files of a pack directory merged into one pack: each nlu file adds examples to the intent it names. */
function readPackDirectory (directory: string): unknown {
  const responses = readData(join(directory, 'responses.yaml'))
  if (!isRecord(responses)) throw new DomainPackError(`Domain pack ${join(directory, 'responses.yaml')} must be a mapping`)
  const nlu = join(directory, 'nlu')
  const understanding = readData(join(nlu, 'understanding.yaml'))
  const intents: Record<string, Record<string, unknown>> = {}
  for (const [name, definition] of Object.entries(isRecord(responses['intents']) ? responses['intents'] : {})) {
    intents[name] = isRecord(definition) ? { ...definition, examples: [] } : { examples: [] }
  }
  const files = readdirSync(nlu).filter((file) => /\.ya?ml$/.test(file) && file !== 'understanding.yaml').sort()
  for (const file of files) {
    const data = checkShape(NluFile, readData(join(nlu, file)), join(nlu, file))
    const intent = intents[data.intent] ??= { examples: [] }
    ;(intent['examples'] as string[]).push(...data.examples ?? [])
    for (const [situation, examples] of Object.entries(data.situations ?? {})) {
      const situations = (intent['situations'] ??= {}) as Record<string, string[]>
      ;(situations[situation] ??= []).push(...examples)
    }
  }
  const answersDirectory = join(directory, 'answers')
  const answers: unknown[] = []
  const requests: Record<string, string[]> = {}
  for (const file of listYaml(answersDirectory)) {
    const data = checkShape(AnswersFile, readData(join(answersDirectory, file)), join(answersDirectory, file))
    answers.push(...data.answers ?? [])
    for (const [intent, examples] of Object.entries(data.requests ?? {})) (requests[intent] ??= []).push(...examples)
  }
  return { ...responses, understanding, slots: readData(join(directory, 'slots.yaml')), answers, requests, intents }
}

function listYaml (directory: string): string[] {
  try {
    return readdirSync(directory).filter((file) => /\.ya?ml$/.test(file)).sort()
  } catch (error) {
    throw new DomainPackError(`Domain pack ${directory} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
}

function readData (path: string): unknown {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    throw new DomainPackError(`Domain pack ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  try {
    // YAML 1.2 is a superset of JSON: one parser reads both.
    return parseYaml(text)
  } catch (error) {
    throw new DomainPackError(`Domain pack ${path} is not valid YAML or JSON: ${(error as Error).message}`)
  }
}

function checkShape<T extends TSchema> (schema: T, data: unknown, source: string): Static<T> {
  const withDefaults = Value.Default(schema, structuredClone(data))
  const errors = [...Value.Errors(schema, withDefaults)].slice(0, 5)
    .map((error) => `${error.path === '' ? '/' : error.path} ${error.message}`)
  if (errors.length > 0) throw new DomainPackError(`Domain pack ${source} is invalid: ${errors.join('; ')}`)
  return withDefaults as Static<T>
}

/** Validates a parsed pack: its shape (schema.ts), then what the shape cannot say. */
export function checkDomainPack (data: unknown, source = 'domain pack'): DomainPack {
  const pack = checkShape(DomainPack, data, source)
  const problems: string[] = []
  const slotSituations = [...Object.keys(pack.slots.item_situation), ...Object.keys(pack.slots.preference), ...Object.keys(pack.slots.account)]
  const itemSituations = new Set(Object.keys(pack.slots.item_situation))
  const { situation_policies: policiesOf, item_in_hand: inHand, parcel_situations: parcels, own_time_limit: ownLimit } = pack.slots
  for (const situation of [...Object.keys(policiesOf), ...inHand, ...parcels, ...ownLimit]) {
    if (!itemSituations.has(situation)) problems.push(`/slots: "${situation}" is no item_situation`)
  }
  for (const [situation, policy] of Object.entries(policiesOf)) {
    if (!(policy in pack.policies)) problems.push(`/slots/situation_policies/${situation}: no policy "${policy}"`)
  }
  for (const [name, intent] of Object.entries(pack.intents)) {
    const where = `/intents/${name}/replies`
    const situations = new Set<string>([...DIALOGUE_SITUATIONS, ...slotSituations, ...Object.keys(intent.situations ?? {})])
    const parsed = new Map<string, ReplyTemplate>()
    for (const [situation, sources] of Object.entries(intent.replies)) {
      if (!situations.has(situation)) problems.push(`${where}/${situation}: no such situation (the intent's examples name none)`)
      for (const [index, source] of sources.entries()) {
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
    if (intent.needs_order === true && intent.replies['ask_order'] === undefined) {
      problems.push(`${where}/ask_order is required because the intent needs an order`)
    }
  }
  problems.push(...answerProblems(pack, new Set([...DIALOGUE_SITUATIONS, ...slotSituations])))
  const supposed = new Set(pack.answers.flatMap((answer) => answer.supposes === undefined ? [] : [answer.supposes]))
  for (const told of Object.keys(pack.slots.cases)) if (!supposed.has(told)) problems.push(`/slots/cases/${told}: no answer supposes it`)
  if (problems.length > 0) throw new DomainPackError(`Domain pack ${source} is invalid: ${problems.slice(0, 5).join('; ')}`)
  return pack
}

/**
 * What the answers' shape cannot say: ids are unique; each states facts the policies have, and every policy fact
 * is stated by some answer; replies are for situations the dialogue knows, name links the pack has, write out no
 * figure that the facts they state do not give, and can answer with no conversation values.
 */
function answerProblems (pack: DomainPack, situations: ReadonlySet<string>): string[] {
  const problems: string[] = []
  const facts = policyFacts(pack.policies)
  const policyValues = new Set<string>([...POLICY_VALUES, ...deliveryOptionValues(pack.policies).keys()])
  const stated = new Set<string>()
  const ids = new Set<string>()
  for (const [index, answer] of pack.answers.entries()) {
    const where = `/answers/${index} (${answer.id})`
    if (ids.has(answer.id)) problems.push(`${where}: the id is used twice`)
    ids.add(answer.id)
    if (answer.names !== undefined) {
      const named = new Set(answer.names.flatMap((name) => stemsOf(name)))
      for (const [i, example] of answer.examples.entries()) {
        if (!stemsOf(example).some((stem) => named.has(stem))) problems.push(`${where}/examples/${i}: names none of the answer's names (${answer.names.join(', ')})`)
      }
    }
    const texts: string[] = []
    for (const fact of answer.states) {
      const text = facts.get(fact)
      if (text === undefined) problems.push(`${where}/states: no policy fact "${fact}" (the pack's: ${[...facts.keys()].join(', ')})`)
      else texts.push(text)
      stated.add(fact)
    }
    let unconditional = false
    for (const [situation, sources] of Object.entries(answer.replies)) {
      if (!situations.has(situation)) problems.push(`${where}/replies/${situation}: no such situation`)
      for (const [i, source] of sources.entries()) {
        let template: ReplyTemplate
        try {
          template = new ReplyTemplate(source)
        } catch (error) {
          if (!(error instanceof TemplateSyntaxError)) throw error
          problems.push(`${where}/replies/${situation}/${i}: ${error.message}`)
          continue
        }
        for (const link of template.linkNames()) {
          if (pack.links[link] === undefined) problems.push(`${where}/replies/${situation}/${i}: unknown link "${link}"`)
        }
        for (const figure of figuresIn(template.literalText())) {
          if (!texts.some((text) => text.includes(figure))) problems.push(`${where}/replies/${situation}/${i}: "${figure}" is in no policy the answer states`)
        }
        unconditional ||= situation === 'default' && template.requiredValues().every((value) => policyValues.has(value)) &&
          template.requiredLinks().every((link) => linkValueNames(pack.links[link]?.url ?? '').length === 0)
      }
    }
    if (!unconditional) problems.push(`${where}/replies/default needs a template that uses only policy values and links without context values`)
  }
  // `delivery_options` as a whole is stated when each option is, and each option when the whole list is.
  const options = [...facts.keys()].filter((fact) => fact.startsWith('delivery_options.'))
  if (stated.has('delivery_options')) for (const option of options) stated.add(option)
  if (options.every((option) => stated.has(option))) stated.add('delivery_options')
  for (const fact of facts.keys()) if (!stated.has(fact)) problems.push(`/policies: no answer states "${fact}"`)
  return problems
}

function isRecord (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
