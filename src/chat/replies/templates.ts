/**
 * Reply templates: `{name}` is a value (a policy, a context member, a remembered fact), `{link:name}` a link of the
 * domain pack, and `[...]` an optional part, left out unless every value inside it is known. A template whose
 * required values are not all known is not used: a reply never states a fact it does not have.
 */

export interface LinkTemplate {
  label: string
  url: string
}

export interface RenderedLink {
  /** The link's name in the pack (`tracking`); the wire shows label and URL. */
  name: string
  label: string
  url: string
}

/** The links a template may name, rendered on demand (a Map of them will do). */
export interface LinkSource {
  get: (name: string) => RenderedLink | undefined
}

/** The values a template may use (a Map of them will do). */
export interface ValueSource {
  get: (name: string) => string | undefined
}

/** Which values and links are known: enough to choose a template before rendering any. */
export interface KnownNames {
  value: (name: string) => boolean
  link: (name: string) => boolean
}

export interface RenderedReply {
  text: string
  links: RenderedLink[]
}

type Part =
  | { kind: 'text', text: string }
  | { kind: 'value', name: string }
  /** `key`: the link's name as `general` and the specificity count name it, `link:<name>`. */
  | { kind: 'link', name: string, key: string }
  | { kind: 'optional', parts: Part[] }

const TOKEN = /\{(link:)?([a-z][a-z0-9_]*)\}|\[|\]/g

export class TemplateSyntaxError extends Error {
  override name = 'TemplateSyntaxError'
}

/** A template parsed once, rendered many times. */
export class ReplyTemplate {
  readonly source: string
  readonly #parts: Part[]

  constructor (source: string) {
    this.source = source
    this.#parts = parse(source)
  }

  /** Names of the values the template needs, outside optional parts. */
  requiredValues (): string[] {
    return this.#parts.flatMap((part) => part.kind === 'value' ? [part.name] : [])
  }

  /** The text the template writes out itself, besides its values and links (optional parts included). */
  literalText (): string {
    return literal(this.#parts)
  }

  /** Names of every link the template mentions. */
  linkNames (): string[] {
    return collect(this.#parts, 'link')
  }

  /** Names of the links the template needs, outside optional parts. */
  requiredLinks (): string[] {
    return this.#parts.flatMap((part) => part.kind === 'link' ? [part.name] : [])
  }

  /**
   * How many of the values and links the reply would use are particular to the conversation (not in `general`: the
   * policies and fixed pages), or undefined when one it needs is unknown (`render` would give none): without
   * rendering anything.
   */
  specificity (known: KnownNames, general: ReadonlySet<string>): number | undefined {
    return specificityOf(this.#parts, known, general)
  }

  /** The reply, or undefined when a value or link it needs is unknown. */
  render (values: ValueSource, links: LinkSource): RenderedReply | undefined {
    const used: RenderedLink[] = []
    const text = renderParts(this.#parts, values, links, used)
    if (text === undefined) return undefined
    const unique = used.length < 2 ? used : used.filter((link, index) => used.findIndex((other) => other.url === link.url) === index)
    return { text: text.replace(SPACES, ' ').trim(), links: unique }
  }
}

const SPACES = /\s{2,}/g
const LINK_VALUE = /\{([a-z][a-z0-9_]*)\}/g

/** The values a link template needs besides `{base}`: none for a fixed page, `order_id` for an order's page. */
export function linkValueNames (template: string): string[] {
  return [...template.matchAll(LINK_VALUE)].map((match) => match[1]!).filter((name) => name !== 'base')
}

/** The URL of a link template, or undefined when a value it needs is unknown. Values are URL-encoded. */
export function renderLinkUrl (template: string, base: string, values: ValueSource): string | undefined {
  return new LinkUrlTemplate(template).render(base, values)
}

/** A link template read once, rendered with every reply that offers the link. */
export class LinkUrlTemplate {
  /** The text before each value, then the text after the last. */
  readonly #texts: string[] = []
  /** The names of its values, `base` included, in order. */
  readonly #names: string[] = []

  constructor (template: string) {
    let last = 0
    for (const match of template.matchAll(LINK_VALUE)) {
      this.#texts.push(template.slice(last, match.index))
      this.#names.push(match[1]!)
      last = match.index + match[0].length
    }
    this.#texts.push(template.slice(last))
  }

  /** The URL, or undefined when a value it needs is unknown. Values are URL-encoded. */
  render (base: string, values: ValueSource): string | undefined {
    let url = this.#texts[0]!
    for (let i = 0; i < this.#names.length; i++) {
      const name = this.#names[i]!
      if (name === 'base') {
        url += base
      } else {
        const value = values.get(name)
        if (value === undefined) return undefined
        url += encodeURIComponent(value)
      }
      url += this.#texts[i + 1]!
    }
    return url
  }
}

/** How many of the names in `parts` are not general, or undefined when one they need is unknown. */
function specificityOf (parts: readonly Part[], known: KnownNames, general: ReadonlySet<string>): number | undefined {
  let specificity = 0
  for (const part of parts) {
    const own = specificityOfPart(part, known, general)
    if (own === undefined) return undefined
    specificity += own
  }
  return specificity
}

/** 1 for a value or link not general, 0 for a general one or text, undefined for an unknown one. */
function specificityOfPart (part: Part, known: KnownNames, general: ReadonlySet<string>): number | undefined {
  switch (part.kind) {
    case 'text':
      return 0
    case 'value':
      return !known.value(part.name) ? undefined : general.has(part.name) ? 0 : 1
    case 'link':
      return !known.link(part.name) ? undefined : general.has(part.key) ? 0 : 1
    case 'optional':
      // Left out, and counting for nothing, unless every name in it is known.
      return specificityOf(part.parts, known, general) ?? 0
  }
}

function renderParts (
  parts: Part[],
  values: ValueSource,
  links: LinkSource,
  /** The links it rendered, in order. */
  used: RenderedLink[]
): string | undefined {
  let text = ''
  for (const part of parts) {
    switch (part.kind) {
      case 'text':
        text += part.text
        break
      case 'value': {
        const value = values.get(part.name)
        if (value === undefined) return undefined
        text += value
        break
      }
      case 'link': {
        const link = links.get(part.name)
        if (link === undefined) return undefined
        used.push(link)
        text += link.url
        break
      }
      case 'optional': {
        const mark = used.length
        const optional = renderParts(part.parts, values, links, used)
        if (optional === undefined) {
          used.length = mark
        } else {
          text += optional
        }
        break
      }
    }
  }
  return text
}

function parse (source: string): Part[] {
  const root: Part[] = []
  let current = root
  let optional: Part[] | undefined
  let last = 0
  for (const match of source.matchAll(TOKEN)) {
    if (match.index > last) current.push({ kind: 'text', text: source.slice(last, match.index) })
    last = match.index + match[0].length
    if (match[0] === '[') {
      if (optional !== undefined) throw new TemplateSyntaxError(`nested "[" in template: ${source}`)
      optional = []
      current = optional
    } else if (match[0] === ']') {
      if (optional === undefined) throw new TemplateSyntaxError(`"]" without "[" in template: ${source}`)
      root.push({ kind: 'optional', parts: optional })
      optional = undefined
      current = root
    } else {
      const name = match[2]!
      current.push(match[1] === undefined ? { kind: 'value', name } : { kind: 'link', name, key: `link:${name}` })
    }
  }
  if (optional !== undefined) throw new TemplateSyntaxError(`"[" without "]" in template: ${source}`)
  if (last < source.length) current.push({ kind: 'text', text: source.slice(last) })
  return root
}

function collect (parts: Part[], kind: 'value' | 'link'): string[] {
  return parts.flatMap((part) => part.kind === 'optional' ? collect(part.parts, kind) : part.kind === kind ? [part.name] : [])
}

function literal (parts: Part[]): string {
  return parts.map((part) => part.kind === 'text' ? part.text : part.kind === 'optional' ? literal(part.parts) : ' ').join('')
}
