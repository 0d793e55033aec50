/** The soak's view of Redis: its keys under the run's prefix (counted, then deleted) and the memory Redis uses. */
import type { Redis } from 'ioredis'

const MB = 1024 * 1024

export async function redisClient (url: string): Promise<Redis> {
  const ioredis = await import('ioredis')
  const client = new ioredis.Redis(url, { maxRetriesPerRequest: 2, lazyConnect: true })
  await client.connect()
  return client
}

export async function redisUsedMemory (client: Redis): Promise<number | undefined> {
  const info = await client.info('memory')
  const bytes = /^used_memory:(\d+)/m.exec(info)?.[1]
  return bytes === undefined ? undefined : Number(bytes) / MB
}

async function scanKeys (client: Redis, prefix: string, each: (keys: string[]) => Promise<void>): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
    cursor = next
    if (keys.length > 0) await each(keys)
  } while (cursor !== '0')
}

export async function countKeys (client: Redis, prefix: string): Promise<number> {
  let count = 0
  await scanKeys(client, prefix, async (keys) => { count += keys.length })
  return count
}

export async function deleteKeys (client: Redis, prefix: string): Promise<number> {
  let deleted = 0
  await scanKeys(client, prefix, async (keys) => { deleted += await client.del(...keys) })
  return deleted
}
