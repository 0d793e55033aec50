/**
 * Child process of scripts/fuzz.ts (forked by scripts/fuzz/server.ts): the real app and nothing else of the fuzzer.
 * buildApp + loadConfig with the fuzzer's API key, the metadata rate limit off, scratch under FUZZ_TEMP_ROOT, request
 * log lines in FUZZ_LOG_FILE (to quote for failing cases); answers the fuzzer's commands over the fork's channel.
 */
import { createWriteStream } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { buildApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { serveCommands } from '../../test/support/processes.ts'
import type { ServerState } from './server.ts'

const MB = 1024 * 1024

function requiredEnv (name: string): string {
  const value = process.env[name]
  if (value === undefined || value === '') throw new Error(`${name} is not set`)
  return value
}

const tempRoot = requiredEnv('FUZZ_TEMP_ROOT')
const log = createWriteStream(requiredEnv('FUZZ_LOG_FILE'))
const config = loadConfig({ API_KEYS: requiredEnv('FUZZ_API_KEY'), TMPDIR: tempRoot, RATE_LIMIT_METADATA_PER_MIN: '0' })
const app = await buildApp(config, { logStream: { write (line: string) { log.write(line) } } })
await app.listen({ host: '127.0.0.1', port: 0 })

let closing: Promise<void> | undefined
/** Closes the app (its ExifTool pool ended, its scratch directory removed), then the log; once. */
function close (): Promise<void> {
  closing ??= app.close().then(() => new Promise<void>((resolve) => { log.end(resolve) }))
  return closing
}

serveCommands((app.server.address() as { port: number }).port, {
  state: async (): Promise<ServerState> => {
    // At rest: keep-alive connections the load generator left open closed, garbage collected (--expose-gc).
    app.server.closeIdleConnections()
    ;(globalThis as { gc?: () => void }).gc?.()
    let scratchFiles = 0
    for (const entry of await readdir(tempRoot, { withFileTypes: true })) {
      if (entry.isDirectory()) scratchFiles += (await readdir(join(tempRoot, entry.name))).length
    }
    const memory = process.memoryUsage()
    return { pids: app.metadataExtractor.pids, procs: config.exiftool.procs, scratchFiles, heapUsedMB: memory.heapUsed / MB, externalMB: memory.external / MB }
  },
  // Anything left under the root once the app has closed is a leak: the entries' count.
  close: async () => {
    await close()
    return (await readdir(tempRoot)).length
  }
}, close)
