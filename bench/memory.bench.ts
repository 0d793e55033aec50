/**
 * The server's memory under large images: peak RSS while clients send 20 MB images (JSON data URIs, which the server
 * must hold whole; multipart, which it streams to disk), and RSS after a quiet spell, against the RSS it idled at.
 */
import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'
import { Corpus, metadataRequest, postImage, type CorpusImage } from '../test/support/corpus.ts'
import { readTree } from '../test/support/proc.ts'
import { idleCollections, startService } from '../test/support/servers.ts'
import { load } from './support/load.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare, type Side, type Target } from './support/rounds.ts'

export default async function memory (options: Options): Promise<PartResult> {
  const corpus = await Corpus.create()
  try {
    const image = await corpus.cameraJpeg('JPEG 6000×4000', 6000, 4000, 40, 95)
    const megabytes = (image.bytes.length / 1e6).toFixed(1)
    const side = (kind: 'data URI' | 'multipart', clients: number, targets: Target[]): Side => ({
      name: `${clients} clients × ${megabytes} MB ${kind === 'data URI' ? 'JSON data URI' : kind}`,
      targets,
      run: async () => await measure(image, kind, clients, options)
    })
    const comparison = await compare('Server RSS under 20 MB images', 'MB peak RSS', [
      side('data URI', 8, [{ metric: 'value', op: '≤', limit: 300 }, { metric: 'afterRatio', op: '≤', limit: 1.2 }]),
      side('multipart', 32, [{ metric: 'value', op: '≤', limit: 250 }])
    ], { rounds: options.quick ? 1 : 2, seconds: options.memorySeconds, warmupSeconds: 0 })
    return {
      title: 'Memory',
      notes: ['Each round starts a fresh service (RSS seldom shrinks, so runs sharing a process would inherit each other\'s growth), ' +
        'waits for its first idle collection (*idle RSS*: the service started and at rest, nothing asked of it yet), ' +
        `sends one checked request, then takes ${options.memorySeconds} s of load from the clients, each sending ` +
        `the same ${image.bytes.length.toLocaleString('en')}-byte 6000×4000 camera JPEG over and over; RSS sampled every 50 ms (*peak*), ` +
        `and read again after ${options.idleSeconds} s without requests (*after*: the service's own idle collection has run, nothing ` +
        'forced). RSS is the Node ' +
        'process\'s own; its ExifTool children are shown apart (their peak, together).'],
      comparisons: [comparison]
    }
  } finally {
    await corpus.close()
  }
}

/**
 * Waits for the service's first idle collection (IDLE_GC_AFTER_MS after start-up, which it gives back what building
 * the app left) and half a second more: the idle RSS it compares with is where the service rests. Asked twice a
 * second: a scrape keeps the loop busy for a few milliseconds, and the service counts only a loop under 5% as quiet.
 */
async function settled (url: string): Promise<void> {
  for (const started = performance.now(); performance.now() - started < 10_000; await delay(500)) {
    if (await idleCollections(url) >= 1) break
  }
  await delay(500)
}

async function measure (image: CorpusImage, kind: 'data URI' | 'multipart', clients: number, options: Options): Promise<{ value: number, extras: Record<string, number> }> {
  const apiKey = `bench-${randomBytes(12).toString('hex')}`
  const service = await startService({ API_KEYS: apiKey, EXIFTOOL_PROCS: String(availableParallelism()), RATE_LIMIT_METADATA_PER_MIN: '0' }, { output: 'discard' })
  try {
    await settled(service.url)
    const idle = await readTree(service.pid)
    const request = metadataRequest(image, kind, apiKey)
    const check = await postImage(service.url, request)
    if (check.status !== 200) throw new Error(`${kind}: the service answered ${check.status}`)
    const name = `memory, ${clients} × ${kind}`
    const { requestsPerSecond, usage } = await load(name, { server: service, connections: clients, requests: [request], timeoutSeconds: 60, sampleMs: 50 }, options.memorySeconds)
    await delay(options.idleSeconds * 1000)
    const after = await readTree(service.pid)
    return {
      value: usage.peakRssMB,
      extras: { idleMB: idle.rssMB, afterMB: after.rssMB, afterRatio: after.rssMB / idle.rssMB, rps: requestsPerSecond, exiftoolMB: usage.peakChildrenRssMB, cpu: usage.cpu, loadgen: usage.loadgen }
    }
  } finally {
    await service.stop()
  }
}
