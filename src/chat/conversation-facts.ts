import type { Fact } from './dialogue/conversation.ts'

/** How much a conversation remembers (CONVERSATION_MAX_FACTS, CONVERSATION_MAX_FACT_BYTES). */
export interface FactLimits {
  /** Facts kept at most. */
  count: number
  /** Their size at most: the characters of each name and value, and 6 for the JSON around them. */
  bytes: number
}

/**
 * Twice the members one request's context may have (50), and the size of a whole chat body (64 KiB): a message's own
 * context fits, and a conversation's facts stay a small JSON value to read and write with every message.
 */
export const DEFAULT_FACT_LIMITS: FactLimits = { count: 100, bytes: 65_536 }

/**
 * What the conversation keeps of the facts after a message: all of them while within the limits; beyond, the least
 * recently given go first. A fact is given when it is new, changes, or comes again in the request's context, so a
 * support system that sends what it knows with every message keeps it; one that sends ever new members keeps the
 * latest. The kept facts are ordered oldest first, which is how the next message reads their age.
 *
 * The order is the object's own, as JSON keeps it, with one exception of JavaScript's: names that are array indexes
 * ("7") always come first, so they count as the oldest.
 */
export function boundFacts (before: Readonly<Record<string, Fact>>, after: Readonly<Record<string, Fact>>, given: Iterable<string>, limits: FactLimits): Record<string, Fact> {
  // Most messages of most conversations know no fact at all.
  if (Object.keys(after).length === 0) return {}
  const fresh = new Set<string>()
  for (const name of given) if (Object.hasOwn(after, name)) fresh.add(name)
  for (const name in after) if (before[name] !== after[name]) fresh.add(name)
  const older = Object.keys(after).filter((name) => !fresh.has(name))
  const order = [...older, ...fresh]

  const sizes = order.map((name) => factBytes(name, after[name]!))
  let bytes = sizes.reduce((sum, size) => sum + size, 0)
  let first = 0
  while (first < order.length && (order.length - first > limits.count || bytes > limits.bytes)) bytes -= sizes[first++]!

  const kept: Record<string, Fact> = {}
  for (const name of order.slice(first)) kept[name] = after[name]!
  return kept
}

/**
 * A fact's size: the characters of its name and value, and 6 for the quotes, colon and comma of their JSON. A
 * character is a byte for Latin text; escapes and other scripts take more as stored, up to 6 bytes a character.
 * Counted so because measuring UTF-8 or JSON would cost more than the rest of a message's work.
 */
function factBytes (name: string, value: Fact): number {
  return name.length + (typeof value === 'string' ? value.length : String(value).length) + 6
}
