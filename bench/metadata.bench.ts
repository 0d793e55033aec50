/**
 * POST /v1/metadata against the ExifTool pool it wraps, side by side: the service over HTTP (multipart, and JSON data
 * URI) and, with the same number of ExifTool processes and no HTTP, the raw pool with the service's summary arguments;
 * on JPEGs also exiftool-vendored's default read(), a fresh exiftool per image, and exifr in-process.
 */
import { randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { Corpus, metadataRequest, postImage, type CorpusImage } from '../test/support/corpus.ts'
import { startSampling, waitQuiet } from '../test/support/proc.ts'
import { forkChild, type Child, type Server } from '../test/support/processes.ts'
import { startService } from '../test/support/servers.ts'
import type { ReaderImage, ReaderMode, ReaderRun } from './metadata.readers.ts'
import { failures, httpSide } from './support/load.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare, log, type Comparison, type Side } from './support/rounds.ts'

/** ExifTool processes on both sides: the service's default, one per core. */
const PROCS = availableParallelism()
const POOL = 'raw ExifTool pool'
const MAKE = 'NIKON'
const INTAKE = 'intake alone, no HTTP, no ExifTool'
const BARE = 'bare upload route + raw pool'

export default async function metadata (options: Options): Promise<PartResult> {
  const corpus = await Corpus.create()
  const children: Server[] = []
  try {
    const small = await corpus.picture('jpeg', 'JPEG 640×480')
    const camera = await corpus.cameraJpeg('JPEG 4000×3000 (12 MP)', 4000, 3000, 20, 85)
    const others = [await corpus.picture('png', 'PNG 640×480'), await corpus.picture('webp', 'WebP 640×480'),
      await corpus.picture('heic', 'HEIC 640×480'), await corpus.picture('tiff', 'TIFF 640×480')]
    const apiKey = `bench-${randomBytes(12).toString('hex')}`
    // As `npm start` runs it, its log lines to /dev/null; no rate limit.
    const service = { ...await startService({ API_KEYS: apiKey, EXIFTOOL_PROCS: String(PROCS), RATE_LIMIT_METADATA_PER_MIN: '0' }, { output: 'discard' }), apiKey }
    children.push(service)
    const readers = {} as Record<ReaderMode, Child>
    for (const mode of ['pool', 'read', 'fresh', 'exifr', 'intake'] as const) {
      readers[mode] = await forkChild(new URL('./metadata.readers.ts', import.meta.url), { BENCH_READER: mode, BENCH_PROCS: String(PROCS) })
      children.push(readers[mode])
    }
    const bare = await forkChild(new URL('./metadata.bare-route.ts', import.meta.url), { BENCH_API_KEY: service.apiKey, BENCH_PROCS: String(PROCS) })
    children.push(bare)
    const folder = options.images === undefined ? [] : await answered(service, await corpus.folder(options.images))

    const http = (kind: 'multipart' | 'data URI', images: CorpusImage[], clients: number, peer: string, limit?: number): Side =>
      httpSide(`service, ${kind === 'data URI' ? 'JSON data URI' : kind}`, {
        server: service,
        connections: clients,
        requests: images.map((image) => metadataRequest(image, kind, service.apiKey)),
        peer,
        ...limit === undefined ? {} : { targets: [{ metric: 'ratio' as const, op: '≥' as const, limit }] }
      })
    const comparisons: Comparison[] = []
    // The issue's targets: multipart ≥ 0.9× the bare upload route, a JSON data URI ≥ 0.8× multipart.
    const group = async (title: string, images: CorpusImage[], clients: number, peers: boolean, intake = false): Promise<void> => {
      // The user's images were checked by `answered` (they need not name a camera).
      if (images !== folder) await checkMakes(service, bare, readers, images, peers)
      const sides = [
        http('multipart', images, clients, BARE, 0.9),
        ...peers ? [http('data URI', images, clients, 'service, multipart', 0.8)] : [],
        bareSide(bare, service.apiKey, images, clients),
        readerSide(POOL, readers.pool, images, clients),
        ...peers
          ? [readerSide('pool, exiftool-vendored\'s read()', readers.read, images, clients, POOL),
              readerSide(`fresh exiftool per image, ${PROCS} at a time`, readers.fresh, images, PROCS, POOL),
              readerSide('exifr, in-process', readers.exifr, images, clients, POOL)]
          : [],
        ...intake ? [readerSide(INTAKE, readers.intake, images, clients, POOL)] : []
      ]
      comparisons.push(await compare(`${title}, ${clients} clients`, 'images/s', sides, options))
    }
    // --quick leaves out the 32-client runs.
    for (const clients of options.quick ? [16] : [16, 32]) await group(small.name, [small], clients, clients === 16)
    for (const clients of options.quick ? [16] : [16, 32]) await group(camera.name, [camera], clients, clients === 16, clients === 16)
    for (const image of others) await group(image.name, [image], 16, false)
    if (folder.length > 0) await group(`${options.images} (${folder.length} images)`, folder, 16, false)

    const kb = (image: CorpusImage): string => `${Math.round(image.bytes.length / 1024)} KB`
    return {
      title: 'Metadata extraction',
      notes: [
        `\`POST /v1/metadata\` against the ExifTool pool it wraps. Both sides have ${PROCS} ExifTool processes (the service's default, ` +
          'one per core). *Clients* are HTTP connections (autocannon) for the service, and reads in flight for the in-process sides, ' +
          'which run in a child process of their own and are timed by tinybench. The raw pool is `MetadataExtractor.readSummary` with ' +
          'the service\'s arguments on a file already on disk: the ceiling of the service, which must also receive the image, write it ' +
          'to its scratch directory, sniff, hash and answer. exifr reads in-process (no child process at all): the ceiling of any ' +
          'in-process reader, which the service does not use because ExifTool reads every format it accepts. On the 12 MP JPEG ' +
          'the raw pool still reads only the head of a file in the page cache, while the service takes every byte off the network, ' +
          'hashes, searches and writes it: there the ratio is the cost of the intake per byte. ' +
          `*${INTAKE}* is that cost by itself: src/metadata/intake.ts (sniff, SHA-256, manifest-marker search, TIFF walk, ` +
          'the scratch file written and removed) on the image from memory in 64 KB chunks, in a child process of its own: the ' +
          'most the service could take in per second if HTTP, multipart parsing and ExifTool cost nothing. ' +
          `*${BARE}* (bench/metadata.bare-route.ts) is the least an upload endpoint over the same pool can be in Fastify: ` +
          'the bearer check, @fastify/multipart streaming the file to a scratch file, the raw pool\'s read, the file removed, ' +
          'the make answered; no sniff, hash, manifest search, limits, error envelope, response schema, request log, ' +
          'headers or metrics. Its ratio to the raw pool is what HTTP, multipart and a file cost by themselves, on the same ' +
          'two cores as the ExifTool processes: the ceiling of any HTTP service in front of this pool.',
        `Images made in code, each with the same camera tags written by ExifTool: ${[small, camera, ...others].map((image) => `${image.name} ${kb(image)}`).join(', ')} ` +
          '(the 12 MP JPEG has grain, as a photo does, to have a camera\'s file size; the HEIC is a real container around dummy coded data).' +
          (folder.length > 0 ? ` Plus the ${folder.length} images of ${options.images} that the service answers with 200, requested in turn.` : '')
      ],
      comparisons
    }
  } finally {
    for (const child of children) await child.stop()
    await corpus.close()
  }
}

/** The user's images the service answers with 200 (others, say without metadata, would count as failed requests). */
async function answered (service: Server & { apiKey: string }, images: CorpusImage[]): Promise<CorpusImage[]> {
  const kept: CorpusImage[] = []
  for (const image of images) {
    const { status } = await postImage(service.url, metadataRequest(image, 'multipart', service.apiKey))
    if (status === 200) kept.push(image)
    else log(`metadata: ${image.name} left out: the service answers ${status}`)
  }
  return kept
}

/**
 * The bare upload route (metadata.bare-route.ts) on the same images, against the raw pool: what any HTTP upload
 * endpoint over this pool costs, however little it does. Told each image's format and whether it is sized, as the
 * service's sniff would find them.
 */
function bareSide (bare: Child, apiKey: string, images: CorpusImage[], clients: number): Side {
  return httpSide(BARE, {
    server: bare,
    connections: clients,
    requests: images.map((image) => bareRequest(image, apiKey)),
    peer: POOL
  })
}

function bareRequest (image: CorpusImage, apiKey: string): ReturnType<typeof metadataRequest> {
  const request = metadataRequest(image, 'multipart', apiKey)
  return { ...request, path: `${request.path}?format=${image.format}&sized=${image.sized ? 1 : 0}` }
}

/** One checked request or read per image and side first: a run of fast errors would otherwise look like a fine result. */
async function checkMakes (service: Server & { apiKey: string }, bare: Child, readers: Record<ReaderMode, Child>, images: CorpusImage[], peers: boolean): Promise<void> {
  const modes: ReaderMode[] = peers ? ['pool', 'read', 'fresh', 'exifr'] : ['pool']
  for (const image of images) {
    const kinds = peers ? ['multipart', 'data URI'] as const : ['multipart'] as const
    const answers = await Promise.all(kinds.map((kind) => postImage(service.url, metadataRequest(image, kind, service.apiKey))))
    for (const answer of answers) if (answer.status !== 200 || answer.make !== MAKE) throw new Error(`${image.name}: the service answered ${answer.status}, make ${String(answer.make)}`)
    const bareAnswer = await postImage(bare.url, bareRequest(image, service.apiKey))
    if (bareAnswer.status !== 200 || bareAnswer.make !== MAKE) throw new Error(`${image.name}: the bare route answered ${bareAnswer.status}, make ${String(bareAnswer.make)}`)
    for (const mode of modes) {
      const [make] = await readers[mode].call<unknown[]>('makes', { images: [readerImage(image)] })
      if (make !== MAKE) throw new Error(`${image.name}: ${mode} read make ${String(make)}`)
    }
  }
}

function readerImage ({ path, format, sized }: CorpusImage): ReaderImage {
  return { path, format, sized }
}

/** A side read in a reader child: images per second, latency from tinybench, the child's CPU with its ExifTool processes'. */
function readerSide (name: string, reader: Child, images: CorpusImage[], concurrency: number, peer?: string): Side {
  return {
    name,
    ...peer === undefined ? {} : { peer },
    run: async (seconds) => {
      const stop = await startSampling(reader.pid)
      const result = await reader.call<ReaderRun>('run', { images: images.map(readerImage), concurrency, seconds })
      const usage = await stop()
      await waitQuiet(reader.pid)
      if (result.errors > 0) failures.push(`${name}: ${result.errors} reads failed (${result.firstError})`)
      return { value: result.perSecond, extras: { p50Ms: result.p50, p99Ms: result.p99, cpu: usage.cpu } }
    }
  }
}
