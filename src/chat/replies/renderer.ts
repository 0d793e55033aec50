import type { Fact } from '../dialogue/conversation.ts'
import { POLICY_VALUES } from '../domain-pack/load.ts'
import type { DomainPack } from '../domain-pack/schema.ts'
import { linkValueNames, LinkUrlTemplate, ReplyTemplate, type KnownNames, type LinkSource, type RenderedLink } from './templates.ts'
import { policyValues, TemplateValues } from './values.ts'

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
  /** The assistant's previous reply, never repeated when another template can be used, nor its links if avoidable. */
  previous?: string
}

interface PackLink {
  label: string
  url: LinkUrlTemplate
  /** The values its URL needs besides `{base}`: it is offered only when they are known. */
  needs: readonly string[]
}

/**
 * Renders the pack's reply templates with a conversation's values. A template is chosen before anything is rendered
 * (whether its values and links are known, and how much it says about the conversation, follow from the names
 * alone); then only the chosen reply is rendered, its links with it — and, when the previous reply must not be
 * repeated, the texts of the other templates it was chosen among.
 */
export class ReplyRenderer {
  readonly #pack: DomainPack
  readonly #baseUrl: string
  readonly #random: () => number
  readonly #templates = new Map<string, ReplyTemplate>()
  readonly #links: ReadonlyMap<string, PackLink>
  /** Values and links that are the same in every conversation: they make a template no more specific. */
  readonly #general: ReadonlySet<string>
  readonly #policyValues: ReadonlyMap<string, string>

  constructor (pack: DomainPack, options: RendererOptions) {
    this.#pack = pack
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '')
    this.#random = options.random ?? Math.random
    this.#policyValues = policyValues(pack)
    this.#links = new Map(Object.entries(pack.links).map(([name, link]) => [name, { label: link.label, url: new LinkUrlTemplate(link.url), needs: linkValueNames(link.url) }]))
    const fixedLinks = [...this.#links].filter(([, link]) => link.needs.length === 0)
    this.#general = new Set([...POLICY_VALUES, ...this.#policyValues.keys(), ...fixedLinks.map(([name]) => `link:${name}`)])
  }

  /** The reply from the first group with a usable template, or undefined when none is usable. */
  render (request: ReplyRequest): Reply | undefined {
    const values = new TemplateValues(request.facts, request.today, this.#pack.policies.return_window_days, this.#policyValues)
    const known: KnownNames = {
      value: (name) => values.get(name) !== undefined,
      link: (name) => this.#links.get(name)?.needs.every(known.value) === true
    }
    const links = this.#linkSource(values)
    for (const group of request.groups) {
      const reply = this.#pick(group, known, values, links, request.previous)
      if (reply !== undefined) return reply
    }
    return undefined
  }

  /**
   * A usable template at random among those that say the most about this conversation (the order, the customer's
   * name), avoiding the previous reply so that answers vary.
   */
  #pick (sources: readonly string[], known: KnownNames, values: TemplateValues, links: LinkSource, previous: string | undefined): Reply | undefined {
    let mostSpecific = -1
    let usable: ReplyTemplate[] = []
    for (const source of sources) {
      const template = this.#template(source)
      const specificity = template.specificity(known, this.#general)
      if (specificity === undefined || specificity < mostSpecific) continue
      if (specificity > mostSpecific) {
        mostSpecific = specificity
        usable = []
      }
      usable.push(template)
    }
    if (usable.length === 0) return undefined
    // Usable by construction: every value and link they need is known. Another text than the previous reply, and
    // better one that offers no link the customer was just given ("but I don't have an account!" after the sign-up
    // help page gets the team, not the page again).
    if (previous !== undefined && usable.length > 1) {
      const fresh = usable.map((template) => template.render(values, links)!).filter((reply) => reply.text !== previous)
      const newLinks = fresh.filter((reply) => reply.links.every((link) => !previous.includes(link.url)))
      if (newLinks.length > 0) return this.#choose(newLinks)
      if (fresh.length > 0) return this.#choose(fresh)
    }
    return this.#choose(usable).render(values, links)!
  }

  #choose<T> (items: readonly T[]): T {
    return items[Math.min(items.length - 1, Math.floor(this.#random() * items.length))]!
  }

  /** The pack's links, each rendered the first time a template asks for it. */
  #linkSource (values: TemplateValues): LinkSource {
    const rendered = new Map<string, RenderedLink | undefined>()
    return {
      get: (name) => {
        if (rendered.has(name)) return rendered.get(name)
        const link = this.#links.get(name)
        const url = link === undefined ? undefined : link.url.render(this.#baseUrl, values)
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
