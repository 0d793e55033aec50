/**
 * The server's memory under large images: peak RSS while clients send 20 MB images (JSON data URIs, which the server
 * must hold whole; multipart, which it streams to disk), and RSS after a quiet spell, against the RSS it idled at.
 */
import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { setTimeout as delay } from 'node:timers/promises'
import { Corpus, metadataRequest, postImage, type CorpusImage } from '../test/support/corpus.ts'
import { readTree } from '../test/support/proc.ts'
import { startService } from '../test/support/servers.ts'
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
    // docs/deployment.md's budget for the processes of one replica, its scratch files apart.
    const budget: Target[] = [{ metric: 'value', op: '≤', limit: PROCESSES_BUDGET_MB }]
    const comparison = await compare('Server RSS under 20 MB images', 'MB peak RSS with ExifTool', [
      side('data URI', 8, budget),
      side('multipart', 32, budget)
    ], { rounds: options.quick ? 1 : 2, seconds: options.memorySeconds, warmupSeconds: 0 })
    return {
      title: 'Memory',
      notes: ['Each round starts a fresh service (RSS seldom shrinks, so runs sharing a process would inherit each other\'s growth), ' +
        `waits ${SETTLE_MS / 1000} s (*idle RSS*: the service started and at rest, nothing asked of it yet), ` +
        `sends one checked request, then takes ${options.memorySeconds} s of load from the clients, each sending ` +
        `the same ${image.bytes.length.toLocaleString('en')}-byte 6000×4000 camera JPEG over and over; RSS sampled every 50 ms (*peak*), ` +
        `and read again after ${options.idleSeconds} s without requests (*after*: what V8 and the C library keep of the burst, ` +
        'nothing forced). RSS is the Node ' +
        'process\'s and its ExifTool children\'s together (their peaks added: the most the two could hold at once), ' +
        `against the ${PROCESSES_BUDGET_MB} MB docs/deployment.md budgets for them; each apart in its own column.`],
      comparisons: [comparison]
    }
  } finally {
    await corpus.close()
  }
}

const PROCESSES_BUDGET_MB = 512

/** Start-up's own work (the model read, schemas compiled, ExifTool started) over: the idle RSS is where it rests. */
const SETTLE_MS = 2000

async function measure (image: CorpusImage, kind: 'data URI' | 'multipart', clients: number, options: Options): Promise<{ value: number, extras: Record<string, number> }> {
  const apiKey = `bench-${randomBytes(12).toString('hex')}`
  // One client: no rate limit, and its key may use the whole ExifTool pool.
  const service = await startService({ API_KEYS: apiKey, EXIFTOOL_PROCS: String(availableParallelism()), EXIFTOOL_KEY_SHARE: '1', RATE_LIMIT_METADATA_PER_MIN: '0' }, { output: 'discard' })
  try {
    await delay(SETTLE_MS)
    const idle = await readTree(service.pid)
    const request = metadataRequest(image, kind, apiKey)
    const check = await postImage(service.url, request)
    if (check.status !== 200) throw new Error(`${kind}: the service answered ${check.status}`)
    const name = `memory, ${clients} × ${kind}`
    const { requestsPerSecond, usage } = await load(name, { server: service, connections: clients, requests: [request], timeoutSeconds: 60, sampleMs: 50 }, options.memorySeconds)
    await delay(options.idleSeconds * 1000)
    const after = await readTree(service.pid)
    return {
      value: usage.peakRssMB + usage.peakChildrenRssMB,
      extras: { peakMB: usage.peakRssMB, idleMB: idle.rssMB, afterMB: after.rssMB, afterRatio: after.rssMB / idle.rssMB, rps: requestsPerSecond, exiftoolMB: usage.peakChildrenRssMB, cpu: usage.cpu, loadgen: usage.loadgen }
    }
  } finally {
    await service.stop()
  }
}
