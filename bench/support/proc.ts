/**
 * What Linux /proc tells about a process beyond the sampler's tree (sampler.ts): its own CPU apart from its
 * children's, its children by name, its open file descriptors; and the whole machine's CPU.
 */
import { readdir, readFile } from 'node:fs/promises'

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

/** /proc/<pid>/stat; undefined once the process is gone. */
export async function readStat (pid: number): Promise<ProcessStat | undefined> {
  try {
    // "pid (command) state ppid …": the command may hold spaces and parentheses; utime to cstime are fields 14 to 17.
    const text = await readFile(`/proc/${pid}/stat`, 'utf8')
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
  } catch {
    return undefined
  }
}

/** The live children of `pid` (zombies left out), whichever of its threads started them. */
export async function childProcesses (pid: number): Promise<ProcessStat[]> {
  const children: ProcessStat[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readStat(Number(entry))
    if (stat !== undefined && stat.parent === pid && stat.state !== 'Z') children.push(stat)
  }
  return children
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
