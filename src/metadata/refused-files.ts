import { LRUCache } from 'lru-cache'

/**
 * Files ExifTool could not read within its bounds, by SHA-256, with why: a resend is refused at once with the same
 * reason, without spending ExifTool on it again (such a file fails the same way every time). Bounded in count and
 * age: a flood of distinct hostile files pushes out the oldest, and a file is given another chance after `ttlMs`
 * (an ExifTool upgrade may read it).
 */
export class RefusedFiles {
  /** Undefined when nothing is to be remembered (a TTL of 0). */
  readonly #reasons: LRUCache<string, string> | undefined

  constructor (options: { max: number, ttlMs: number }) {
    this.#reasons = options.ttlMs > 0 ? new LRUCache({ max: options.max, ttl: options.ttlMs }) : undefined
  }

  /** Why the file with this digest was refused, if it was within the last `ttlMs`. */
  reasonFor (sha256: string): string | undefined {
    return this.#reasons?.get(sha256)
  }

  remember (sha256: string, reason: string): void {
    this.#reasons?.set(sha256, reason)
  }
}
