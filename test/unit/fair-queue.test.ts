import { describe, expect, it } from 'vitest'
import { FairQueue, type Admission } from '../../src/metadata/fair-queue.ts'

// The ExifTool pool's admission queue on its own: which entry runs when, who is refused. No processes: entries are
// started and left by hand.

/** Which of `admissions` have started, after the queue's promises have settled. */
async function started (admissions: Record<string, Admission>): Promise<string[]> {
  await new Promise((resolve) => setImmediate(resolve))
  return Object.entries(admissions).filter(([, admission]) => admission.running).map(([name]) => name)
}

function enqueue (queue: FairQueue, clientId: string): Admission {
  const admission = queue.enqueue(clientId)
  if (admission === undefined) throw new Error(`${clientId} refused`)
  return admission
}

describe('the fair queue', () => {
  it('runs at most its slots at once, and starts the next entry when one leaves', async () => {
    const queue = new FairQueue({ slots: 2, maxWaiting: 8, share: 1 })
    const entries = { a: enqueue(queue, 'k'), b: enqueue(queue, 'k'), c: enqueue(queue, 'k') }
    expect(await started(entries)).toEqual(['a', 'b'])
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 2, waiting: 1 })
    entries.a.leave()
    expect(await started(entries)).toEqual(['b', 'c'])
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 2, waiting: 0 })
  })

  it('lets one client run no more than its share of the slots, even when the others are free', async () => {
    const queue = new FairQueue({ slots: 4, maxWaiting: 8, share: 0.5 })
    expect(queue.slotsPerClient).toBe(2)
    const entries = { a1: enqueue(queue, 'a'), a2: enqueue(queue, 'a'), a3: enqueue(queue, 'a') }
    expect(await started(entries)).toEqual(['a1', 'a2'])
    expect(queue.running).toBe(2)
  })

  it('gives every client at least one slot, whatever the share', async () => {
    const queue = new FairQueue({ slots: 1, maxWaiting: 8, share: 0.1 })
    expect(queue.slotsPerClient).toBe(1)
    const only = enqueue(queue, 'a')
    expect(await started({ only })).toEqual(['only'])
  })

  it('starts another client at once while one client floods the queue with entries', async () => {
    const queue = new FairQueue({ slots: 2, maxWaiting: 16, share: 0.5 })
    const flood = Array.from({ length: 6 }, () => enqueue(queue, 'flood'))
    const other = enqueue(queue, 'other')
    expect(other.running).toBe(true)
    expect(flood.filter((admission) => admission.running)).toHaveLength(1)
  })

  it('hands a free slot to the client running the fewest entries, then to the entry that came first', async () => {
    const queue = new FairQueue({ slots: 2, maxWaiting: 16, share: 1 })
    const entries = {
      a1: enqueue(queue, 'a'),
      a2: enqueue(queue, 'a'),
      a3: enqueue(queue, 'a'),
      a4: enqueue(queue, 'a'),
      b1: enqueue(queue, 'b'),
      c1: enqueue(queue, 'c')
    }
    expect(await started(entries)).toEqual(['a1', 'a2'])
    // a runs two, b and c none: b's entry, the earlier of theirs, goes first, though a's came before it.
    entries.a1.leave()
    expect(await started(entries)).toEqual(['a2', 'b1'])
    // a and c run none, b one: a3 came before c1.
    entries.a2.leave()
    expect(await started(entries)).toEqual(['a3', 'b1'])
    // a runs one, c none.
    entries.b1.leave()
    expect(await started(entries)).toEqual(['a3', 'c1'])
  })

  it('refuses an entry when the waiting room is full, or the client holds its share of it', () => {
    const queue = new FairQueue({ slots: 1, maxWaiting: 4, share: 0.5 })
    enqueue(queue, 'a')
    enqueue(queue, 'a')
    enqueue(queue, 'a')
    // a waits with two entries: its share of the four places.
    expect(queue.enqueue('a')).toBeUndefined()
    enqueue(queue, 'b')
    enqueue(queue, 'b')
    expect(queue.waiting).toBe(4)
    expect(queue.enqueue('c')).toBeUndefined()
  })

  it('withdraws a waiting entry that leaves: it never starts, and the next one takes its turn', async () => {
    const queue = new FairQueue({ slots: 1, maxWaiting: 4, share: 1 })
    const entries = { a: enqueue(queue, 'k'), b: enqueue(queue, 'k'), c: enqueue(queue, 'k') }
    entries.b.leave()
    expect(queue.waiting).toBe(1)
    entries.a.leave()
    expect(await started(entries)).toEqual(['c'])
    // Leaving twice gives back one slot, not two.
    entries.a.leave()
    entries.b.leave()
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 1, waiting: 0 })
    entries.c.leave()
    expect({ running: queue.running, waiting: queue.waiting }).toEqual({ running: 0, waiting: 0 })
  })
})
