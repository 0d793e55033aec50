import { describe, expect, it } from 'vitest'
import { boundFacts, DEFAULT_FACT_LIMITS } from '../../src/chat/conversation-facts.ts'
import type { Fact } from '../../src/chat/dialogue/conversation.ts'
import { SerialByKey } from '../../src/chat/serial-by-key.ts'

const members = (prefix: string, count: number, value: Fact = 'x'): Record<string, Fact> =>
  Object.fromEntries(Array.from({ length: count }, (_, index) => [`${prefix}${index}`, value]))

describe('boundFacts', () => {
  it('keeps every fact while within the limits, in the order they were given', () => {
    const before = { order_id: 'A-1', customer_name: 'Ada' }
    const after = { ...before, vip: true, order_id: 'A-2' }
    expect(Object.entries(boundFacts(before, after, ['vip'], DEFAULT_FACT_LIMITS))).toEqual([['customer_name', 'Ada'], ['vip', true], ['order_id', 'A-2']])
  })

  it('beyond the count, forgets the least recently given first', () => {
    const before = members('old', 5)
    const context = members('new', 3)
    const kept = boundFacts(before, { ...before, ...context }, Object.keys(context), { count: 6, bytes: 65_536 })
    expect(Object.keys(kept)).toEqual(['old2', 'old3', 'old4', 'new0', 'new1', 'new2'])
  })

  it('a member the context gives again counts as given now, even unchanged', () => {
    const before = { customer_name: 'Ada', ...members('old', 4) }
    const context = { customer_name: 'Ada', ...members('new', 2) }
    const kept = boundFacts(before, { ...before, ...context }, Object.keys(context), { count: 5, bytes: 65_536 })
    expect(Object.keys(kept)).toEqual(['old2', 'old3', 'customer_name', 'new0', 'new1'])
  })

  it('beyond the size, counted in characters of names and values and 6 for their JSON, forgets the least recently given first', () => {
    const before = { a: 'x'.repeat(1000), b: 'é'.repeat(500), n: 12_345 }
    const after = { ...before, c: 'y'.repeat(1000) }
    // a: 1 + 1000 + 6; b: 1 + 500 + 6; n: 1 + 5 + 6; c: 1 + 1000 + 6.
    const all = 1007 + 507 + 12 + 1007
    expect(Object.keys(boundFacts(before, after, ['c'], { count: 100, bytes: all }))).toEqual(['a', 'b', 'n', 'c'])
    expect(Object.keys(boundFacts(before, after, ['c'], { count: 100, bytes: all - 1 }))).toEqual(['b', 'n', 'c'])
    expect(Object.keys(boundFacts(before, after, ['c'], { count: 100, bytes: all - 1007 - 1 }))).toEqual(['n', 'c'])
  })

  it('keeps the conversation bounded however many new members each message brings', () => {
    let facts: Record<string, Fact> = { order_id: 'A-1' }
    for (let message = 0; message < 400; message++) {
      const context = Object.fromEntries(Array.from({ length: 49 }, (_, member) => [`m${message}_${member}`, 'v'.repeat(1000)]))
      facts = boundFacts(facts, { ...facts, ...context }, Object.keys(context), DEFAULT_FACT_LIMITS)
      expect(Buffer.byteLength(JSON.stringify(facts))).toBeLessThanOrEqual(DEFAULT_FACT_LIMITS.bytes)
    }
    // The last message's members are all kept, then what fits of the one before; the order, never given again,
    // went long ago.
    const kept = Object.keys(facts)
    expect(kept.slice(-49)).toEqual(Array.from({ length: 49 }, (_, member) => `m399_${member}`))
    expect(kept.slice(0, -49).every((name) => name.startsWith('m398_'))).toBe(true)
    expect(kept).not.toContain('order_id')
  })
})

describe('SerialByKey', () => {
  it('runs the tasks of one key in turn, in the order they came; other keys alongside', async () => {
    const serial = new SerialByKey()
    const events: string[] = []
    const task = (name: string, ms: number) => async (): Promise<string> => {
      events.push(`start ${name}`)
      await new Promise((resolve) => setTimeout(resolve, ms))
      events.push(`end ${name}`)
      return name
    }
    const results = await Promise.all([serial.run('a', task('a1', 20)), serial.run('a', task('a2', 1)), serial.run('b', task('b1', 5))])
    expect(results).toEqual(['a1', 'a2', 'b1'])
    expect(events).toEqual(['start a1', 'start b1', 'end b1', 'end a1', 'start a2', 'end a2'])
    expect(serial.size).toBe(0)
  })

  it('a task that fails fails alone: the next of its key still runs', async () => {
    const serial = new SerialByKey()
    const failing = serial.run('a', async () => { throw new Error('first') })
    const next = serial.run('a', async () => 'second')
    await expect(failing).rejects.toThrow('first')
    expect(await next).toBe('second')
    expect(serial.size).toBe(0)
  })
})
