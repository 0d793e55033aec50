import { readFile } from 'node:fs/promises'
import { setTimeout as delay } from 'node:timers/promises'

/** USER_HZ: the unit of /proc CPU times, 100 on every Linux that Node supports. */
const TICKS_PER_SECOND = 100

interface TreeReading {
  /** CPU ticks of the process and its descendants, living and reaped. */
  ticks: number
  /** Resident memory of the process itself, and of its descendants (the ExifTool children). */
  rssMB: number
  childrenRssMB: number
}

export interface Usage {
  /** CPU of the measured process tree and of this process (the load generator), in % of one core. */
  cpu: number
  loadgen: number
  peakRssMB: number
  peakChildrenRssMB: number
  lastRssMB: number
}

/** One process: its CPU ticks (with its reaped children's), RSS and child pids; undefined once it is gone. */
async function readProcess (pid: number): Promise<{ ticks: number, rssKB: number, children: number[] } | undefined> {
  try {
    // Fields after the command name (which may hold spaces): utime, stime, cutime, cstime are the 12th to 15th.
    const line = await readFile(`/proc/${pid}/stat`, 'utf8')
    const stat = line.slice(line.lastIndexOf(')') + 2).split(' ')
    const ticks = [11, 12, 13, 14].reduce((sum, field) => sum + Number(stat[field]), 0)
    const status = await readFile(`/proc/${pid}/status`, 'utf8')
    const rssKB = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0)
    const children = (await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8')).split(' ').filter(Boolean).map(Number)
    return { ticks, rssKB, children }
  } catch {
    return undefined
  }
}

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

/** Samples a process tree's RSS every `intervalMs` until stopped; CPU from the first reading to the last. */
export async function startSampling (pid: number, intervalMs = 100): Promise<() => Promise<Usage>> {
  const first = await readTree(pid)
  const ownFirst = process.cpuUsage()
  const startedAt = performance.now()
  let last = first
  let peakRssMB = first.rssMB
  let peakChildrenRssMB = first.childrenRssMB
  const sample = async (): Promise<void> => {
    last = await readTree(pid)
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
      peakRssMB,
      peakChildrenRssMB,
      lastRssMB: last.rssMB
    }
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
