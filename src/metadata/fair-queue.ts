/** The queue's bounds: how many may run at once, and how much of that and of the waiting room one client may hold. */
export interface FairQueueLimits {
  /** Entries running at once, all clients together. */
  slots: number
  /** Entries waiting, all clients together; beyond it `enqueue` refuses. */
  maxWaiting: number
  /** The part of `slots` and of `maxWaiting` one client may hold (0 < share ≤ 1; at least one of each). */
  share: number
}

/** One entry's place in the queue. */
export interface Admission {
  /** Settles when the entry may run: at once when a slot is free and its client is within its share. */
  readonly started: Promise<void>
  /** True while it holds a slot. */
  readonly running: boolean
  /** Leaves the queue (an entry still waiting never starts) or gives its slot back. Only the first call counts. */
  leave: () => void
}

interface Entry extends Admission {
  readonly client: Client
  /** Arrival order. */
  readonly sequence: number
  start: () => void
  left: boolean
  running: boolean
}

interface Client {
  readonly id: string
  running: number
  readonly waiting: Entry[]
}

/**
 * A queue that shares a few slots fairly between clients. No client runs more than its share of the slots at once
 * or keeps more than its share of the waiting room, however much it sends; a free slot goes to the waiting client
 * running the fewest entries (among those, to the entry that came first), so one client's flood waits behind its
 * own entries rather than in front of everyone else's. Ours, rather than a library's: the pools we know
 * (p-queue, piscina's, batch-cluster's own) are one FIFO with no notion of whose entry it is.
 */
export class FairQueue {
  readonly #slots: number
  readonly #maxWaiting: number
  readonly #slotsPerClient: number
  readonly #waitingPerClient: number
  readonly #clients = new Map<string, Client>()
  #running = 0
  #waiting = 0
  #sequence = 0

  constructor (limits: FairQueueLimits) {
    this.#slots = limits.slots
    this.#maxWaiting = limits.maxWaiting
    this.#slotsPerClient = Math.max(1, Math.floor(limits.slots * limits.share))
    this.#waitingPerClient = Math.max(1, Math.floor(limits.maxWaiting * limits.share))
  }

  /** Entries running now. */
  get running (): number {
    return this.#running
  }

  /** Entries waiting for a slot. */
  get waiting (): number {
    return this.#waiting
  }

  /** The most one client may run at once. */
  get slotsPerClient (): number {
    return this.#slotsPerClient
  }

  /** A place for `clientId`'s entry; undefined when the waiting room, or the client's share of it, is full. */
  enqueue (clientId: string): Admission | undefined {
    const client = this.#client(clientId)
    const mustWait = this.#running >= this.#slots || client.running >= this.#slotsPerClient
    if (mustWait && (this.#waiting >= this.#maxWaiting || client.waiting.length >= this.#waitingPerClient)) {
      this.#forget(client)
      return undefined
    }
    const { promise: started, resolve } = Promise.withResolvers<void>()
    const entry: Entry = {
      client,
      sequence: ++this.#sequence,
      started,
      running: false,
      left: false,
      start: () => {
        entry.running = true
        client.running++
        this.#running++
        resolve()
      },
      leave: () => { this.#leave(entry) }
    }
    client.waiting.push(entry)
    this.#waiting++
    this.#dispatch()
    return entry
  }

  #leave (entry: Entry): void {
    if (entry.left) return
    entry.left = true
    const { client } = entry
    if (entry.running) {
      entry.running = false
      client.running--
      this.#running--
    } else {
      client.waiting.splice(client.waiting.indexOf(entry), 1)
      this.#waiting--
    }
    this.#forget(client)
    this.#dispatch()
  }

  /** Starts waiting entries while there are free slots and clients within their share. */
  #dispatch (): void {
    while (this.#running < this.#slots) {
      let next: Client | undefined
      for (const client of this.#clients.values()) {
        if (client.waiting.length === 0 || client.running >= this.#slotsPerClient) continue
        if (next === undefined || client.running < next.running ||
          (client.running === next.running && client.waiting[0]!.sequence < next.waiting[0]!.sequence)) next = client
      }
      if (next === undefined) return
      const entry = next.waiting.shift()!
      this.#waiting--
      entry.start()
    }
  }

  #client (id: string): Client {
    let client = this.#clients.get(id)
    if (client === undefined) {
      client = { id, running: 0, waiting: [] }
      this.#clients.set(id, client)
    }
    return client
  }

  /** A client with nothing running or waiting is dropped: the map holds only active clients. */
  #forget (client: Client): void {
    if (client.running === 0 && client.waiting.length === 0) this.#clients.delete(client.id)
  }
}
