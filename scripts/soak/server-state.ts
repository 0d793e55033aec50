/** The server's state as /proc shows it: memory, descriptors, children, CPU apart from its ExifTool children's. */
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { childProcesses, machineCpu, openFds, readStat, readTree, TICKS_PER_SECOND } from '../../test/support/proc.ts'

export interface SoakServer {
  pid: number
  port: number
  /** Its TMPDIR: the upload files under it are counted. */
  scratchRoot: string
}

export interface Sample {
  atS: number
  rssMB: number
  fds: number
  children: number
  childNames: string[]
  scratchFiles: number
  /** CPU used since the previous sample, % of one core. */
  serverCpuPercent: number
  exiftoolCpuPercent: number
  /** Busy share of the whole machine since the previous sample, % (all cores). */
  machineCpuPercent: number
  /** The same in cores, % of one core: server + ExifTool + generator + anything else running. */
  machineBusyCorePercent: number
  /** Raw counters for the next delta. */
  counters: CpuCounters
}

interface CpuCounters { at: number, serverTicks: number, childTicks: number, machineBusy: number, machineTotal: number }

/** A reading at `performance.now()`, its time counted from `t0`; CPU figures are NaN without a `previous` one. */
export async function sample (server: SoakServer, t0: number, previous: CpuCounters | undefined): Promise<Sample> {
  const at = performance.now()
  const { pid } = server
  // The tree's ticks are the server's and its children's, those alive now and those it has reaped.
  const tree = await readTree(pid)
  const fds = await openFds(pid)
  const serverTicks = (await readStat(pid))?.ticks ?? 0
  const childTicks = tree.ticks - serverTicks
  const children = await childProcesses(pid)
  const machine = await machineCpu()
  const counters: CpuCounters = { at, serverTicks, childTicks, machineBusy: machine.busy, machineTotal: machine.total }
  const elapsedS = previous === undefined ? 0 : (at - previous.at) / 1000
  const percent = (ticks: number): number => elapsedS > 0 ? 100 * ticks / TICKS_PER_SECOND / elapsedS : NaN
  return {
    atS: (at - t0) / 1000,
    rssMB: tree.rssMB,
    fds,
    children: children.length,
    childNames: [...new Set(children.map((child) => child.command))],
    scratchFiles: await countFiles(server.scratchRoot),
    serverCpuPercent: previous === undefined ? NaN : percent(serverTicks - previous.serverTicks),
    exiftoolCpuPercent: previous === undefined ? NaN : percent(childTicks - previous.childTicks),
    machineCpuPercent: previous === undefined || machine.total === previous.machineTotal
      ? NaN
      : 100 * (machine.busy - previous.machineBusy) / (machine.total - previous.machineTotal),
    machineBusyCorePercent: previous === undefined ? NaN : percent(machine.busy - previous.machineBusy),
    counters
  }
}

/** A sample as the results file shows it. */
export function publicSample (reading: Sample): Omit<Sample, 'counters'> {
  const { counters: _counters, ...rest } = reading
  return rest
}

async function countFiles (dir: string): Promise<number> {
  let count = 0
  try {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      count += entry.isDirectory() ? await countFiles(join(dir, entry.name)) : 1
    }
  } catch {}
  return count
}
