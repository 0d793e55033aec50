/** mulberry32: 32 bits of state, good enough spread for picking mutations, and the same stream on every machine. */
export class Rng {
  #state: number

  constructor (seed: number) {
    this.#state = seed >>> 0
  }

  /** A float in [0, 1). */
  next (): number {
    this.#state = (this.#state + 0x6d2b79f5) | 0
    let value = Math.imul(this.#state ^ (this.#state >>> 15), 1 | this.#state)
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }

  /** An integer in [0, n). */
  int (n: number): number {
    return Math.floor(this.next() * n)
  }

  /** An integer in [low, high], both included. */
  range (low: number, high: number): number {
    return low + this.int(high - low + 1)
  }

  chance (probability: number): boolean {
    return this.next() < probability
  }

  pick<T> (items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from nothing')
    return items[this.int(items.length)] as T
  }

  bytes (length: number): Buffer {
    const out = Buffer.alloc(length)
    for (let i = 0; i < length; i++) out[i] = this.int(256)
    return out
  }
}
