/** Start-up: from spawning the server to /health/ready answering 200 (ExifTool pool up, trained model read from the cache). */
import { mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { NODE_FLAGS, startService } from '../test/support/servers.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare, type Side, type Target } from './support/rounds.ts'

const NODE = `node ${[...NODE_FLAGS, 'src/server.ts'].join(' ')} (without npm)`

export default async function startup (options: Options): Promise<PartResult> {
  const compileCache = await mkdtemp(join(tmpdir(), 'bench-compile-cache-'))
  // The service's defaults (one ExifTool process per core) but for the key and the log level.
  const env = { API_KEYS: 'bench-start-up-key', LOG_LEVEL: 'warn', EXIFTOOL_PROCS: String(availableParallelism()) }
  const side = (name: string, how: 'npm' | 'node', targets: Target[] = [], extraEnv: Record<string, string> = {}, peer?: string): Side => ({
    name,
    targets,
    ...peer === undefined ? {} : { peer },
    run: async () => {
      const server = await startService({ ...env, ...extraEnv }, { how, output: 'discard' })
      await server.stop()
      return { value: server.readyMs / 1000 }
    }
  })
  const comparison = await compare('From start to /health/ready', 's', [
    side('npm start', 'npm', [{ metric: 'value', op: '≤', limit: 1.5 }]),
    side(NODE, 'node'),
    side('the same, NODE_COMPILE_CACHE set', 'node', [], { NODE_COMPILE_CACHE: compileCache }, NODE)
  ], { rounds: options.quick ? 2 : 5, seconds: 0, warmupSeconds: 1 }).finally(async () => { await rm(compileCache, { recursive: true, force: true }) })
  return {
    title: 'Start-up',
    notes: ['The production entry on a free port, its defaults but for the key and LOG_LEVEL=warn, timed from the spawn until ' +
      '`GET /health/ready` answers 200 (polled every 20 ms): modules loaded, the trained model read from the model cache (warmed ' +
      'by one untimed start of each), the ExifTool pool answering. `npm start` is timed with npm\'s own start; the second row without it; ' +
      'the third as the second with Node\'s module compile cache in a directory of its own (NODE_COMPILE_CACHE, filled by the ' +
      'untimed start), which the service leaves off by default: it holds about 30 MB more memory (docs/configuration.md).'],
    comparisons: [comparison]
  }
}
