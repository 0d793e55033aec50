/**
 * Soak run: mixed chat and metadata traffic at a constant share of the measured capacity, for minutes, watching the
 * server process for growth (issue "Hardening", part 4).
 *
 *   npm run soak                          # 10 minutes, conversations in the Redis on 127.0.0.1:6379 (REDIS_URL overrides)
 *   npm run soak -- --minutes 0.5         # a quick check (fractions allowed)
 *   npm run soak -- --memory-store        # conversations in memory instead of Redis
 *   npm run soak -- --capacity 400        # skip the probe: take 400 req/s as the capacity
 *
 * 1. The server runs as `npm start` runs it (`node src/server.ts`, test/support/servers.ts startService) with a
 *    generated API key, rate limits off, the service's other defaults (EXIFTOOL_PROCS = CPU count, overload refusal
 *    at 1 s event-loop delay, request logging on, its lines to /dev/null), conversations
 *    in Redis under a unique REDIS_KEY_PREFIX (SCANned and deleted at the end) or in memory, scratch uploads under a
 *    private temporary directory removed at the end.
 * 2. Capacity probe: PROBE_WARMUP_SECONDS (discarded) then PROBE_SECONDS of the same mix, closed loop with
 *    PROBE_CONCURRENCY requests always in flight; capacity = valid answers per second.
 * 3. Soak: open loop at TARGET_FRACTION of that capacity for --minutes: requests are started on a timer at the target
 *    rate whatever the answers do (no coordinated omission), at most IN_FLIGHT_CAP in flight. Anything but the
 *    expected 2xx with the expected body counts as an error: HTTP errors by status and code, network errors, a
 *    timeout (REQUEST_TIMEOUT_MS), and a request the cap kept from being sent at its time.
 * 4. Every SAMPLE_SECONDS: the server's RSS (/proc/<pid>/status VmRSS), open fds (/proc/<pid>/fd), child processes
 *    (the ExifTool pool: /proc/<n>/stat whose parent is the server), upload files in its scratch directory, CPU of
 *    the server, its ExifTool children, this load generator (process.cpuUsage) and the machine (/proc/stat); and per
 *    interval the achieved rate, p50/p99/max latency, errors and the pacing lag.
 * 5. At the end: a table per minute, per request kind, the errors, a summary with verdicts (exit code 1 when one
 *    fails), and the figures as JSON in bench/results/soak-<ISO time>.json.
 *
 * The load generator is this process: node:http with a keep-alive agent (scripts/soak/client.ts). Latency is
 * measured from the moment a request is handed to node:http; the pacing lag (start time minus scheduled time) is
 * reported apart. The generator shares the machine's cores with the server: its own CPU is reported per interval and
 * in the summary. File descriptors for the verdict are counted at rest (no client connection open: the agent
 * destroyed, 2 s later) before and after the soak; those sampled under load include the generator's keep-alive
 * connections.
 *
 * Where things are, in scripts/soak/: the knobs (settings.ts), the customers' messages (conversations.ts), the images
 * (images.ts), the mix and the answers it expects (traffic.ts), the two phases (phases.ts), what is recorded
 * (recorder.ts, server-state.ts), the figures and verdicts (summary.ts) and what is printed (report.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as delay } from 'node:timers/promises'
import { withinTime } from '../test/support/processes.ts'
import { startService } from '../test/support/servers.ts'
import { ms, percent, round } from './soak/format.ts'
import { makeImages } from './soak/images.ts'
import { probe, soak, type ProbeResult } from './soak/phases.ts'
import { countKeys, deleteKeys, redisClient, redisUsedMemory } from './soak/redis.ts'
import { printInterval, printIntervalHeader, printReport } from './soak/report.ts'
import { publicSample, sample, type SoakServer } from './soak/server-state.ts'
import {
  CONVERSATION_TTL_SECONDS, DEFAULT_MINUTES, IN_FLIGHT_CAP, MAX_MESSAGES, MAX_OPEN_CONVERSATIONS, MIN_MESSAGES,
  OTHER_CPU_WARNING_PERCENT, PROBE_CONCURRENCY, PROBE_SECONDS, PROBE_WARMUP_SECONDS, REQUEST_TIMEOUT_MS,
  SAMPLE_SECONDS, TARGET_FRACTION, WEIGHTS
} from './soak/settings.ts'
import { intervalFigures, minuteRows, summarise } from './soak/summary.ts'
import { Traffic } from './soak/traffic.ts'

interface Options { minutes: number, memoryStore: boolean, capacity: number | undefined }

function parseOptions (argv: string[]): Options {
  const options: Options = { minutes: DEFAULT_MINUTES, memoryStore: false, capacity: undefined }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    const value = (): number => {
      const text = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i]
      const number = Number(text)
      if (text === undefined || text === '' || !Number.isFinite(number) || number <= 0) throw new Error(`${arg.split('=')[0]!} needs a positive number`)
      return number
    }
    if (arg === '--memory-store') options.memoryStore = true
    else if (arg === '--minutes' || arg.startsWith('--minutes=')) options.minutes = value()
    else if (arg === '--capacity' || arg.startsWith('--capacity=')) options.capacity = value()
    else throw new Error(`unknown argument ${arg} (--minutes <n>, --memory-store, --capacity <req/s>)`)
  }
  return options
}

const cleanups: Array<() => Promise<void> | void> = []
let cleaning: Promise<void> | undefined

/** Runs every clean-up step once, newest first, whatever fails. */
function cleanUp (): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step()
      } catch (error) {
        console.error('soak: clean-up step failed:', error)
      }
    }
  })()
  return cleaning
}

async function main (): Promise<void> {
  const options = parseOptions(process.argv.slice(2))
  const durationS = Math.round(options.minutes * 60)
  if (durationS < SAMPLE_SECONDS) throw new Error(`--minutes must give at least ${SAMPLE_SECONDS} s`)
  const redisUrl = options.memoryStore ? undefined : (process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379')
  const redisKeyPrefix = `chat-metadata-api-soak:${randomUUID()}:`
  const apiKey = `soak-${randomBytes(24).toString('base64url')}`
  const startedAt = new Date()
  const loadStart = loadavg()[0]!

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`soak: ${signal}: cleaning up`)
      cleanUp().finally(() => process.exit(130))
    })
  }
  // Whatever hangs, the run ends and cleans up: the planned work plus generous slack.
  const deadline = setTimeout(() => {
    console.error('soak: over its time budget; stopping')
    cleanUp().finally(() => process.exit(1))
  }, (durationS + PROBE_WARMUP_SECONDS + PROBE_SECONDS + 300) * 1000)
  deadline.unref()

  const dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-soak-'))
  const removeDir = (): void => { rmSync(dir, { recursive: true, force: true }) }
  // On exit too: a signal may end the run before the clean-up steps (test/support/processes.ts exits at once).
  process.once('exit', removeDir)
  cleanups.push(removeDir)
  const scratchRoot = join(dir, 'server')
  mkdirSync(scratchRoot)
  log(`Node ${process.version}, ${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), load ${loadStart.toFixed(2)}; ` +
    `conversations in ${redisUrl === undefined ? 'memory' : `Redis ${redisUrl} under ${redisKeyPrefix}`}`)

  const images = await makeImages(dir)
  log(`images: ${[...images.small, images.camera].map((img) => `${img.name} ${(img.bytes.length / 1024).toFixed(0)} KiB`).join(', ')}`)

  const redis = redisUrl === undefined ? undefined : await redisClient(redisUrl)
  if (redis !== undefined) {
    cleanups.push(async () => {
      const deleted = await deleteKeys(redis, redisKeyPrefix)
      log(`redis: deleted ${deleted} keys under ${redisKeyPrefix}`)
      redis.disconnect()
    })
  }
  const redisMemoryStart = redis === undefined ? undefined : await redisUsedMemory(redis)

  const service = await withinTime(startService({
    API_KEYS: apiKey,
    EXIFTOOL_PROCS: String(availableParallelism()),
    RATE_LIMIT_CHAT_PER_MIN: '0',
    RATE_LIMIT_METADATA_PER_MIN: '0',
    TMPDIR: scratchRoot,
    CONVERSATION_TTL_SECONDS: String(CONVERSATION_TTL_SECONDS),
    ...(redisUrl === undefined ? {} : { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisKeyPrefix })
  }, { output: 'discard' }), 60_000, 'the server was not ready within 60 s')
  cleanups.push(() => service.stop())
  const server: SoakServer = { pid: service.pid, port: service.port, scratchRoot }
  const atReady = await sample(server, performance.now(), undefined)
  log(`server pid ${server.pid} on port ${server.port}: RSS ${atReady.rssMB.toFixed(1)} MB, ${atReady.fds} fds, ${atReady.children} children at start`)

  const traffic = new Traffic(apiKey, images)
  let probeResult: ProbeResult | undefined
  let capacity: number
  if (options.capacity === undefined) {
    log(`capacity probe: ${PROBE_WARMUP_SECONDS} s warm-up, then ${PROBE_SECONDS} s of the mix, ${PROBE_CONCURRENCY} requests in flight`)
    probeResult = await probe(server, traffic)
    capacity = probeResult.capacity
    log(`capacity: ${capacity.toFixed(1)} valid answers/s (${probeResult.completed} completed, p50 ${ms(probeResult.p50Ms)} ms, p99 ${ms(probeResult.p99Ms)} ms, ` +
      `errors ${JSON.stringify(probeResult.errors)}; CPU in % of one core: server ${percent(probeResult.serverCpuPercent)}, ExifTool ${percent(probeResult.exiftoolCpuPercent)}, ` +
      `load generator ${percent(probeResult.generatorCpuPercent)}, other processes ${percent(probeResult.otherCpuPercent)})`)
    if (probeResult.otherCpuPercent > OTHER_CPU_WARNING_PERCENT) log('WARNING: other processes were busy during the probe: the capacity is skewed')
    if (capacity <= 0) throw new Error('the probe got no valid answer')
  } else {
    capacity = options.capacity
    log(`capacity given: ${capacity} req/s (no probe)`)
  }
  const rate = TARGET_FRACTION * capacity
  await delay(2000)

  log(`soak: ${rate.toFixed(1)} req/s (${(TARGET_FRACTION * 100).toFixed(0)}% of ${capacity.toFixed(1)}) for ${durationS} s, open loop, at most ${IN_FLIGHT_CAP} in flight`)
  printIntervalHeader()
  const run = await soak(server, traffic, rate, durationS, printInterval)
  const redisKeysAtEnd = redis === undefined ? undefined : await countKeys(redis, redisKeyPrefix)
  const redisMemoryEnd = redis === undefined ? undefined : await redisUsedMemory(redis)

  const summary = summarise({ run, rate, capacity, traffic })
  printReport(run, summary, traffic)

  const result = {
    soak: 'chat-metadata-api',
    startedAt: startedAt.toISOString(),
    node: process.version,
    cpus: availableParallelism(),
    loadAverage: { start: loadStart, end: loadavg()[0] },
    store: redisUrl === undefined ? 'memory' : 'redis',
    settings: {
      weights: WEIGHTS,
      targetFraction: TARGET_FRACTION,
      probe: { warmupSeconds: PROBE_WARMUP_SECONDS, seconds: PROBE_SECONDS, concurrency: PROBE_CONCURRENCY },
      inFlightCap: IN_FLIGHT_CAP,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      sampleSeconds: SAMPLE_SECONDS,
      messagesPerConversation: [MIN_MESSAGES, MAX_MESSAGES],
      maxOpenConversations: MAX_OPEN_CONVERSATIONS,
      loadGenerator: 'node:http keep-alive agent, open loop paced by a 5 ms timer (this process)'
    },
    images: [...images.small, images.camera].map((img) => ({ name: img.name, bytes: img.bytes.length })),
    server: { atReady: publicSample(atReady), restStart: publicSample(run.restStart), restEnd: publicSample(run.restEnd) },
    probe: probeResult ?? null,
    ...summary,
    conversations: traffic.stats,
    redis: redis === undefined ? null : { keyPrefix: redisKeyPrefix, keysAtEnd: redisKeysAtEnd, usedMemoryStartMB: redisMemoryStart, usedMemoryEndMB: redisMemoryEnd },
    intervals: run.recorder.intervals.map((interval) => intervalFigures(interval)),
    minutes: minuteRows(run.recorder.intervals)
  }
  const resultsDir = new URL('../bench/results/', import.meta.url)
  mkdirSync(resultsDir, { recursive: true })
  const file = new URL(`soak-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`, resultsDir)
  await writeFile(file, JSON.stringify(result, (_key, value: unknown) => typeof value === 'number' && !Number.isInteger(value) ? round(value) : value, 2) + '\n')
  console.log(`\nfigures: ${file.pathname}`)

  await cleanUp()
  clearTimeout(deadline)
  if (!summary.verdicts.every((verdict) => verdict.pass)) process.exitCode = 1
}

function log (message: string): void {
  console.log(`soak: ${message}`)
}

try {
  await main()
} catch (error) {
  console.error('soak: failed:', error)
  process.exitCode = 1
  await cleanUp()
}
