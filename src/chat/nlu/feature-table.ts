/**
 * Feature hash → row of the weight matrix, as an open-addressing table: no allocation per look-up, one memory access
 * per probe.
 */
export class FeatureTable {
  readonly size: number
  /** Slot s holds its key at 2s and its row at 2s + 1 (-1: empty). */
  readonly #slots: Int32Array
  readonly #mask: number

  private constructor (size: number, slots: Int32Array) {
    this.size = size
    this.#slots = slots
    this.#mask = slots.length / 2 - 1
  }

  static from (index: ReadonlyMap<number, number>): FeatureTable {
    const keys = new Uint32Array(index.size)
    const rows = new Int32Array(index.size)
    let i = 0
    for (const [key, row] of index) {
      keys[i] = key
      rows[i++] = row
    }
    return FeatureTable.fromArrays(keys, rows)
  }

  static fromArrays (keys: Uint32Array, rows: Int32Array): FeatureTable {
    let capacity = 16
    while (capacity < keys.length * 2) capacity *= 2
    const slots = new Int32Array(capacity * 2)
    for (let s = 1; s < slots.length; s += 2) slots[s] = -1
    const mask = capacity - 1
    for (let i = 0; i < keys.length; i++) {
      let slot = keys[i]! & mask
      while (slots[2 * slot + 1]! >= 0) slot = (slot + 1) & mask
      slots[2 * slot] = keys[i]! | 0
      slots[2 * slot + 1] = rows[i]!
    }
    return new FeatureTable(keys.length, slots)
  }

  /** The row of `key`, or -1. */
  get (key: number): number {
    const signed = key | 0
    let slot = key & this.#mask
    for (;;) {
      const row = this.#slots[2 * slot + 1]!
      if (row < 0 || this.#slots[2 * slot] === signed) return row
      slot = (slot + 1) & this.#mask
    }
  }

  keys (): Uint32Array {
    return Uint32Array.from(this.#occupied(), (slot) => this.#slots[2 * slot]! >>> 0)
  }

  rows (): Int32Array {
    return Int32Array.from(this.#occupied(), (slot) => this.#slots[2 * slot + 1]!)
  }

  #occupied (): number[] {
    const occupied: number[] = []
    for (let slot = 0; slot <= this.#mask; slot++) if (this.#slots[2 * slot + 1]! >= 0) occupied.push(slot)
    return occupied
  }
}
