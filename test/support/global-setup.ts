import type { TestProject } from 'vitest/node'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../../src/chat/nlu/model-cache.ts'
import { startPrivateRedis } from './redis.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** The process id of the run's own Redis; undefined when TEST_REDIS_URL named another. */
    privateRedisPid: number | undefined
  }
}

/**
 * Before the integration test files run (two at a time): the default pack trained into the model cache once, and a
 * Redis of the run's own started (stopped after the last file), unless TEST_REDIS_URL names one. The files' processes
 * inherit TEST_REDIS_URL.
 */
export default async function setup (project: TestProject): Promise<(() => Promise<void>) | undefined> {
  trainedForPack(loadDomainPack(), DEFAULT_MODEL_CACHE)
  if (process.env['TEST_REDIS_URL'] !== undefined) {
    project.provide('privateRedisPid', undefined)
    return undefined
  }
  const redis = await startPrivateRedis()
  process.env['TEST_REDIS_URL'] = redis.url
  project.provide('privateRedisPid', redis.pid)
  return async () => {
    await redis.stop()
    delete process.env['TEST_REDIS_URL']
  }
}
