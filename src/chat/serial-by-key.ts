/**
 * Runs tasks of one key one after another, in the order they came, and tasks of different keys alongside: the
 * messages of one conversation are applied in turn within this process. Written here rather than taken from a
 * library: it is a promise chain per key, dropped when its last task ends, and the mutex libraries either have no
 * keys or bring timers and options this does not need.
 */
export class SerialByKey {
  readonly #tails = new Map<string, Promise<void>>()

  async run<T> (key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key)
    const result = previous === undefined ? task() : previous.then(task)
    const tail = result.then(() => {}, () => {})
    this.#tails.set(key, tail)
    try {
      return await result
    } finally {
      // The last in line removes the chain: a key holds nothing once its tasks are done.
      if (this.#tails.get(key) === tail) this.#tails.delete(key)
    }
  }

  /** Keys with a task running or waiting (for tests: nothing is kept once they end). */
  get size (): number {
    return this.#tails.size
  }
}
