import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { IdleCollector } from '../src/idle-collection.ts'

declare module 'fastify' {
  interface FastifyInstance {
    idleCollector: IdleCollector | undefined
  }
}

export interface IdleCollectionOptions {
  /** Event-loop idle time after which memory a burst left is given back; 0: never. */
  afterMs: number
  /** Growth of resident memory since the last collection that is worth the next one (MiB). */
  growthMb: number
}

/**
 * Gives back the memory a burst of requests left behind once the process falls quiet (src/idle-collection.ts), from
 * the moment it listens until it closes. It needs V8's `gc` function, which Node exposes with `--expose-gc`: the start
 * command passes it (package.json, Dockerfile); started without it, the service says so once and leaves memory to V8.
 */
async function idleCollection (fastify: FastifyInstance, options: IdleCollectionOptions): Promise<void> {
  const gc = globalThis.gc
  if (options.afterMs === 0 || gc === undefined) {
    if (options.afterMs > 0) fastify.log.info('Node runs without --expose-gc: memory freed by a burst of requests is returned when V8 decides to')
    fastify.decorate('idleCollector', undefined)
    return
  }
  const collector = new IdleCollector({
    quietMs: options.afterMs,
    growthBytes: options.growthMb * 2 ** 20,
    collect: () => { gc({ type: 'major', execution: 'sync', flavor: 'last-resort' }) },
    onCollected: ({ rssBytes, pauseMs }) => {
      fastify.log.info({ rssMB: Math.round(rssBytes / 2 ** 20), pauseMs: Math.round(pauseMs) }, 'idle: memory-reducing garbage collection')
    }
  })
  fastify.decorate('idleCollector', collector)
  fastify.addHook('onListen', async () => { collector.start() })
  fastify.addHook('onClose', async () => { collector.stop() })
}

export default fp(idleCollection, { name: 'idle-collection', fastify: '5.x' })
