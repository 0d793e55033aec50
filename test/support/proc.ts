/**
 * What Linux /proc tells about processes, for the tests, the bench and the scripts alike: a process's CPU, memory,
 * children and open descriptors, a process tree's RSS sampled over a run, and the whole machine's CPU.
 */
import { readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'

/** USER_HZ: the unit of /proc CPU times, 100 on every Linux that Node supports. */
export const TICKS_PER_SECOND = 100

export interface ProcessStat {
  pid: number
  command: string
  /** R, S, D, … or Z: exited, not yet reaped by its parent. */
  state: string
  parent: number
  /** CPU ticks of the process itself (utime + stime), and of the children it has reaped (cutime + cstime). */
  ticks: number
  reapedTicks: number
}

/** "pid (command) state ppid …": the command may hold spaces and parentheses; utime to cstime are fields 14 to 17. */
function parseStat (pid: number, text: string): ProcessStat {
  const close = text.lastIndexOf(')')
  const fields = text.slice(close + 2).split(' ')
  return {
    pid,
    command: text.slice(text.indexOf('(') + 1, close),
    state: fields[0] ?? '',
    parent: Number(fields[1]),
    ticks: Number(fields[11]) + Number(fields[12]),
    reapedTicks: Number(fields[13]) + Number(fields[14])
  }
}

/** /proc/<pid>/stat; undefined once the process is gone. */
export async function readStat (pid: number): Promise<ProcessStat | undefined> {
  try {
    return parseStat(pid, await readFile(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

/** The live children of `pid` (zombies left out), whichever of its threads started them, with their names. */
export async function childProcesses (pid: number): Promise<ProcessStat[]> {
  const children: ProcessStat[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readStat(Number(entry))
    if (stat !== undefined && stat.parent === pid && stat.state !== 'Z') children.push(stat)
  }
  return children
}

/** The processes `pid`'s main thread started (Node starts its children there); none once it is gone. */
export function childrenOf (pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** A process's resident memory now, in bytes. */
export function residentBytes (pid: number): number {
  return 1024 * Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1])
}

export async function openFds (pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length
}

/** CPU ticks of every core since boot: busy, and in all (the rest idle or waiting for I/O). */
export async function machineCpu (): Promise<{ busy: number, total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const total = values.reduce((a, b) => a + b, 0)
  const idle = (values[3] ?? 0) + (values[4] ?? 0)
  return { busy: total - idle, total }
}

export interface TreeReading {
  /** CPU ticks of the process and its descendants, living and reaped. */
  ticks: number
  /** Resident memory of the process itself, and of its descendants together (the ExifTool children). */
  rssMB: number
  childrenRssMB: number
}

/** One process: its CPU ticks with its reaped children's, its RSS and its children; undefined once it is gone. */
async function readProcess (pid: number): Promise<{ ticks: number, rssKB: number, children: number[] } | undefined> {
  const stat = await readStat(pid)
  if (stat === undefined) return undefined
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const rssKB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0)
    return { ticks: stat.ticks + stat.reapedTicks, rssKB, children: childrenOf(pid) }
  } catch {
    return undefined
  }
}

/** A process and its descendants: their CPU ticks, its own RSS and theirs. */
export async function readTree (pid: number): Promise<TreeReading> {
  const root = await readProcess(pid)
  const reading = { ticks: root?.ticks ?? 0, rssMB: (root?.rssKB ?? 0) / 1024, childrenRssMB: 0 }
  const pending = [...root?.children ?? []]
  for (let child = pending.pop(); child !== undefined; child = pending.pop()) {
    const info = await readProcess(child)
    if (info === undefined) continue
    reading.ticks += info.ticks
    reading.childrenRssMB += info.rssKB / 1024
    pending.push(...info.children)
  }
  return reading
}

export interface Usage {
  /** CPU of the measured process tree and of this process (the load generator), in % of one core. */
  cpu: number
  loadgen: number
  /** RSS of the process itself: at the first reading, its highest, its last; and its descendants' highest. */
  firstRssMB: number
  peakRssMB: number
  lastRssMB: number
  peakChildrenRssMB: number
}

/** Samples a process tree's RSS every `intervalMs` until stopped; CPU from the first reading to the last. */
export async function startSampling (pid: number, intervalMs = 100): Promise<() => Promise<Usage>> {
  const first = await readTree(pid)
  const ownFirst = process.cpuUsage()
  const startedAt = performance.now()
  let last = first
  let peakRssMB = first.rssMB
  let peakChildrenRssMB = first.childrenRssMB
  const sample = async (): Promise<void> => {
    const reading = await readTree(pid)
    // A process gone by the last sample reads as nothing: its last live reading stands.
    if (reading.rssMB === 0) return
    last = reading
    peakRssMB = Math.max(peakRssMB, last.rssMB)
    peakChildrenRssMB = Math.max(peakChildrenRssMB, last.childrenRssMB)
  }
  const timer = setInterval(() => { sample().catch(() => {}) }, intervalMs)
  return async () => {
    clearInterval(timer)
    await sample()
    const seconds = (performance.now() - startedAt) / 1000
    const own = process.cpuUsage(ownFirst)
    return {
      cpu: (100 * (last.ticks - first.ticks)) / TICKS_PER_SECOND / seconds,
      loadgen: (100 * (own.user + own.system)) / 1e6 / seconds,
      firstRssMB: first.rssMB,
      peakRssMB,
      lastRssMB: last.rssMB,
      peakChildrenRssMB
    }
  }
}

/** What `work` returns, with the process's RSS before it and the highest RSS seen while it ran (sampled every 10 ms). */
export async function watchingMemory<T> (pid: number, work: () => Promise<T>): Promise<{ result: T, before: number, peak: number }> {
  const stop = await startSampling(pid, 10)
  let usage: Usage | undefined
  try {
    const result = await work()
    usage = await stop()
    return { result, before: usage.firstRssMB * 1024 * 1024, peak: usage.peakRssMB * 1024 * 1024 }
  } finally {
    if (usage === undefined) await stop()
  }
}

/**
 * Waits until the tree is idle (under `percent` of a core over 200 ms), at most `maxMs`: requests cut off at the end
 * of a run are still being worked on, and would otherwise be charged to whatever runs next.
 */
export async function waitQuiet (pid: number, percent = 10, maxMs = 5000): Promise<void> {
  const deadline = performance.now() + maxMs
  let before = await readTree(pid)
  while (performance.now() < deadline) {
    await delay(200)
    const now = await readTree(pid)
    if ((now.ticks - before.ticks) / TICKS_PER_SECOND / 0.2 * 100 < percent) return
    before = now
  }
}
