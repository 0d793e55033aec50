import type { Fact } from '../dialogue/conversation.ts'
import { POLICY_VALUES } from '../domain-pack/load.ts'
import type { DomainPack } from '../domain-pack/schema.ts'
import { linkValueNames, renderLinkUrl, ReplyTemplate, type LinkSource, type RenderedLink } from './templates.ts'
import { policyValues, templateValues } from './values.ts'

export interface Reply {
  text: string
  links: RenderedLink[]
}

export interface RendererOptions {
  /** SUPPORT_BASE_URL: the `{base}` of every link, without a trailing slash. */
  baseUrl: string
  /** Picks among usable templates; injectable so that tests can be exact. */
  random?: () => number
}

/** What a reply is rendered from: the templates to try, most specific group first, and the conversation's values. */
export interface ReplyRequest {
  /** Groups of templates, most specific first: the first group with a usable template gives the reply. */
  groups: ReadonlyArray<readonly string[]>
  facts: Readonly<Record<string, Fact>>
  /** YYYY-MM-DD, UTC. */
  today: string
  /** The assistant's previous reply, never repeated when another template can be used. */
  previous?: string
}

/** Renders the pack's reply templates with a conversation's values; links only as a chosen template names them. */
export class ReplyRenderer {
  readonly #pack: DomainPack
  readonly #baseUrl: string
  readonly #random: () => number
  readonly #templates = new Map<string, ReplyTemplate>()
  /** Values and links that are the same in every conversation: they make a template no more specific. */
  readonly #general: ReadonlySet<string>
  readonly #policyValues: ReadonlyMap<string, string>

  constructor (pack: DomainPack, options: RendererOptions) {
    this.#pack = pack
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#random = options.random ?? Math.random
    this.#policyValues = policyValues(pack)
    const fixedLinks = Object.entries(pack.links).filter(([, link]) => linkValueNames(link.url).length === 0)
    this.#general = new Set([...POLICY_VALUES, ...fixedLinks.map(([name]) => `link:${name}`)])
  }

  /** The reply from the first group with a usable template, or undefined when none is usable. */
  render (request: ReplyRequest): Reply | undefined {
    const values = templateValues(request.facts, request.today, this.#pack.policies.return_window_days, this.#policyValues)
    const links = this.#links(values)
    for (const group of request.groups) {
      const reply = this.#pick(group, values, links, request.previous)
      if (reply !== undefined) return reply
    }
    return undefined
  }

  /**
   * A usable template at random among those that say the most about this conversation (the order, the customer's
   * name), avoiding the previous reply so that answers vary.
   */
  #pick (sources: readonly string[], values: ReadonlyMap<string, string>, links: LinkSource, previous: string | undefined): Reply | undefined {
    const rendered = sources.flatMap((source) => {
      const reply = this.#template(source).render(values, links, this.#general)
      return reply === undefined ? [] : [reply]
    })
    if (rendered.length === 0) return undefined
    const mostSpecific = Math.max(...rendered.map((reply) => reply.specificity))
    const usable = rendered.filter((reply) => reply.specificity === mostSpecific)
    const fresh = usable.filter((reply) => reply.text !== previous)
    const choices = fresh.length > 0 ? fresh : usable
    const choice = choices[Math.min(choices.length - 1, Math.floor(this.#random() * choices.length))]!
    return { text: choice.text, links: choice.links }
  }

  /** The pack's links, each rendered the first time a template asks for it. */
  #links (values: ReadonlyMap<string, string>): LinkSource {
    const rendered = new Map<string, RenderedLink | undefined>()
    return {
      get: (name) => {
        if (rendered.has(name)) return rendered.get(name)
        const link = this.#pack.links[name]
        const url = link === undefined ? undefined : renderLinkUrl(link.url, this.#baseUrl, values)
        const result = url === undefined ? undefined : { name, label: link!.label, url }
        rendered.set(name, result)
        return result
      }
    }
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
