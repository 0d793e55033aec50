/**
 * Child process of metadata.bench.ts: one way of reading images without HTTP (BENCH_READER), with BENCH_PROCS ExifTool
 * processes, driven by tinybench at a given concurrency.
 *   pool   the service's MetadataExtractor and summary arguments (what POST /v1/metadata runs per image)
 *   read   exiftool-vendored's default read() (every tag, print-converted, parsed into its types)
 *   fresh  a new `exiftool` (perl) process per image, with the service's summary arguments
 *   exifr  exifr in this process: no child process at all, the ceiling of any in-process reader
 *   intake the service's intake alone (src/metadata/intake.ts: sniff, SHA-256, manifest-marker search, TIFF walk,
 *          the scratch file written and removed) on the image's bytes from memory in 64 KB chunks: no HTTP, no
 *          ExifTool; the ceiling of the service per byte
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { unlink } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import exifr from 'exifr'
import { ExifTool } from 'exiftool-vendored'
import { Bench } from 'tinybench'
import { MetadataExtractor } from '../src/metadata/extractor.ts'
import { receiveImage } from '../src/metadata/intake.ts'
import { summaryReadArgs } from '../src/metadata/tags.ts'
import type { CorpusImage } from '../test/support/corpus.ts'
import { serveCommands } from '../test/support/processes.ts'

export type ReaderMode = 'pool' | 'read' | 'fresh' | 'exifr' | 'intake'
export type ReaderImage = Pick<CorpusImage, 'path' | 'format' | 'sized'>
export interface ReaderRun { perSecond: number, p50: number, p99: number, errors: number, firstError?: string }

const mode = process.env['BENCH_READER'] as ReaderMode
const procs = Number(process.env['BENCH_PROCS'])
const require = createRequire(import.meta.url)
const script = createRequire(require.resolve('exiftool-vendored'))('exiftool-vendored.pl') as string
const extractor = mode === 'pool' ? new MetadataExtractor({ procs, taskTimeoutMs: 10_000, maxQueue: 100_000 }) : undefined
const exiftool = mode === 'read' ? new ExifTool({ maxProcs: procs }) : undefined
const scratch = mode === 'intake' ? mkdtempSync(join(tmpdir(), 'bench-intake-')) : undefined
const imageBytes = new Map<string, Buffer>()
let scratchFiles = 0

/** Reads one image this mode's way; the camera make it found. */
async function readMake (image: ReaderImage): Promise<unknown> {
  switch (mode) {
    case 'pool': return (await extractor!.readSummary(image.path, image.format, !image.sized))['IFD0:Make']
    case 'read': return (await exiftool!.read(image.path)).Make
    case 'fresh': return (JSON.parse(await perl(['-json', ...summaryReadArgs(image.format, !image.sized), image.path])) as Array<Record<string, unknown>>)[0]?.['IFD0:Make']
    case 'exifr': return ((await exifr.parse(image.path)) as { Make?: unknown } | undefined)?.Make
    case 'intake': return await intake(image)
  }
}

/** The image through the service's intake, as a 64 KB-chunk upload; its SHA-256. */
async function intake (image: ReaderImage): Promise<string> {
  let bytes = imageBytes.get(image.path)
  if (bytes === undefined) imageBytes.set(image.path, bytes = readFileSync(image.path))
  const chunks = function * (): Generator<Buffer> {
    for (let offset = 0; offset < bytes.length; offset += 65_536) yield bytes.subarray(offset, offset + 65_536)
  }
  const stored = await receiveImage(chunks(), { scratchFile: (extension) => join(scratch!, `${scratchFiles++}.${extension}`), maxBytes: Infinity })
  await unlink(stored.path)
  return stored.sha256
}

function perl (args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('perl', [script, ...args], { stdio: ['ignore', 'pipe', 'ignore'] })
    const out: Buffer[] = []
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    child.once('error', reject)
    child.once('close', (code) => { if (code === 0) resolve(Buffer.concat(out).toString()); else reject(new Error(`exiftool exited with ${code}`)) })
  })
}

/** `concurrency` reads in flight for `seconds`, cycling through the images. */
async function run ({ images, concurrency, seconds }: { images: ReaderImage[], concurrency: number, seconds: number }): Promise<ReaderRun> {
  let next = 0
  let errors = 0
  let firstError: string | undefined
  const bench = new Bench({ concurrency: 'task', threshold: concurrency, iterations: 0, time: seconds * 1000, warmup: false })
  bench.add(mode, async () => {
    await readMake(images[next++ % images.length]!).catch((error: unknown) => { errors++; firstError ??= String(error) })
  })
  const started = performance.now()
  await bench.run()
  const elapsedSeconds = (performance.now() - started) / 1000
  const result = bench.tasks[0]!.result
  if (result.state !== 'completed') throw new Error(`${mode}: tinybench ended ${result.state}`)
  return { perSecond: result.latency.samplesCount / elapsedSeconds, p50: result.latency.p50, p99: result.latency.p99, errors, ...(firstError === undefined ? {} : { firstError }) }
}

serveCommands(0, {
  makes: async ({ images }: { images: ReaderImage[] }) => await Promise.all(images.map(readMake)),
  run
}, async () => {
  await extractor?.end()
  await exiftool?.end()
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true })
})
