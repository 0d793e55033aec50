import { setTimeout as delay } from 'node:timers/promises'

/**
 * `promise`, or an Error(`message`) once `ms` have passed: for a child that may hang before it is ready or while it
 * answers a command (bench/support/processes.ts waits as long as the child lives).
 */
export async function withinTime<T> (promise: Promise<T>, ms: number, message: string): Promise<T> {
  const timeout = new AbortController()
  try {
    return await Promise.race([
      promise,
      delay(ms, undefined, { signal: timeout.signal }).then(() => { throw new Error(message) })
    ])
  } finally {
    timeout.abort()
  }
}
