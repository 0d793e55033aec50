/** Start-up: from spawning the server to /health/ready answering 200 (ExifTool pool up, trained model read from the cache). */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { NODE_FLAGS } from '../test/support/servers.ts'
import type { Options } from './support/options.ts'
import { spawnServer } from './support/processes.ts'
import type { PartResult } from './support/report.ts'
import { compare, type Side, type Target } from './support/rounds.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const NODE = `node ${[...NODE_FLAGS, 'src/server.ts'].join(' ')} (without npm)`

export default async function startup (options: Options): Promise<PartResult> {
  const compileCache = await mkdtemp(join(tmpdir(), 'bench-compile-cache-'))
  const env = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', API_KEYS: 'bench-start-up-key', LOG_LEVEL: 'warn' }
  const side = (name: string, command: string, args: string[], targets: Target[] = [], extraEnv: Record<string, string> = {}, peer?: string): Side => ({
    name,
    targets,
    ...peer === undefined ? {} : { peer },
    run: async () => {
      const server = await spawnServer(command, args, { cwd: ROOT, env: { ...env, ...extraEnv } })
      await server.stop()
      return { value: server.readyMs / 1000 }
    }
  })
  const comparison = await compare('From start to /health/ready', 's', [
    side('npm start', 'npm', ['start'], [{ metric: 'value', op: '≤', limit: 1.5 }]),
    side(NODE, process.execPath, [...NODE_FLAGS, 'src/server.ts']),
    side('the same, NODE_COMPILE_CACHE set', process.execPath, [...NODE_FLAGS, 'src/server.ts'], [], { NODE_COMPILE_CACHE: compileCache }, NODE)
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
