import { Redis } from 'ioredis'

/** The real Redis the tests use; each suite keeps its keys under its own prefix. */
export const REDIS_URL = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379'

/** Removes every key under the given prefixes, so that a run leaves nothing behind. */
export async function deleteKeys (...prefixes: string[]): Promise<void> {
  const client = new Redis(REDIS_URL)
  try {
    for (const prefix of prefixes) {
      const keys = await client.keys(`${prefix}*`)
      if (keys.length > 0) await client.del(...keys)
    }
  } finally {
    client.disconnect()
  }
}
