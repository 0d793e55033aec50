/**
 * What provenance costs a plain camera JPEG (no manifest): the service as it is against itself before provenance
 * (BENCH_BASELINE, by default the parent of the commit that added it, checked out in a temporary git worktree sharing
 * this checkout's node_modules), both started as production starts them with one ExifTool process each, side by side.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Corpus, metadataRequest, postImage, type CorpusImage } from '../test/support/corpus.ts'
import type { Server } from '../test/support/processes.ts'
import { startService } from '../test/support/servers.ts'
import { median, quantile } from '../test/support/stats.ts'
import { failures } from './support/load.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare, type Side } from './support/rounds.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const KEY = 'bench-provenance-key'
const run = promisify(execFile)

async function baselineRevision (): Promise<string> {
  const configured = process.env['BENCH_BASELINE']
  if (configured !== undefined) return configured
  const { stdout } = await run('git', ['log', '--format=%h', '-1', '--grep', '^Provenance in every metadata answer'], { cwd: ROOT })
  if (stdout.trim() === '') throw new Error('the commit that added provenance is not in this history; set BENCH_BASELINE')
  return `${stdout.trim()}^`
}

/** Multipart uploads one at a time for `seconds`: the median and p90 of their times. */
function uploads (name: string, server: Server, image: CorpusImage, peer?: string): Side {
  const request = metadataRequest(image, 'multipart', KEY)
  return {
    name,
    ...peer === undefined ? {} : { peer, targets: [{ metric: 'ratio', op: '≤', limit: 1.2 }] },
    run: async (seconds) => {
      const times: number[] = []
      for (const end = performance.now() + seconds * 1000; performance.now() < end;) {
        const started = performance.now()
        const { status } = await postImage(server.url, request)
        times.push(performance.now() - started)
        if (status !== 200) failures.push(`${name}: HTTP ${status}`)
      }
      return { value: median(times), extras: { p90Ms: quantile(times, 0.9) } }
    }
  }
}

export default async function provenance (options: Options): Promise<PartResult> {
  const revision = await baselineRevision()
  const dir = await mkdtemp(join(tmpdir(), 'bench-provenance-'))
  const worktree = join(dir, 'baseline')
  await run('git', ['worktree', 'add', '--detach', worktree, revision], { cwd: ROOT })
  const corpus = await Corpus.create()
  const servers: Server[] = []
  try {
    await symlink(join(ROOT, 'node_modules'), join(worktree, 'node_modules'))
    const image = await corpus.cameraJpeg('JPEG 4000×3000', 4000, 3000, 20, 85)
    const env = { API_KEYS: KEY, EXIFTOOL_PROCS: '1', RATE_LIMIT_METADATA_PER_MIN: '0', LOG_LEVEL: 'warn' }
    const before = await startService(env, { cwd: worktree, output: 'discard' })
    servers.push(before)
    const now = await startService(env, { output: 'discard' })
    servers.push(now)
    const baseline = `before provenance (${revision})`
    const comparison = await compare('12 MP JPEG uploads, one at a time', 'ms', [
      uploads(baseline, before, image),
      uploads('with provenance', now, image, baseline)
    ], { ...options, seconds: 2 * options.seconds })
    return {
      title: 'Provenance',
      notes: [`What provenance (hash, manifest search, four more tags) costs a plain ${(image.bytes.length / 1e6).toFixed(1)} MB ` +
        `4000×3000 camera JPEG without a manifest: this checkout against ${revision}, the commit before provenance, in a temporary git ` +
        'worktree; both run as `node src/server.ts` with one ExifTool process, requests one at a time. Validating a manifest, when ' +
        'there is one, comes on top (in a worker thread).'],
      comparisons: [comparison]
    }
  } finally {
    for (const server of servers) await server.stop()
    await corpus.close()
    await run('git', ['worktree', 'remove', '--force', worktree], { cwd: ROOT }).catch(() => {})
    await rm(dir, { recursive: true, force: true })
  }
}
