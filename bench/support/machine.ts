import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os'
import { promisify } from 'node:util'
import { ExifTool } from 'exiftool-vendored'

export interface Machine {
  cpu: string
  cores: number
  ramGB: number
  os: string
  node: string
  exiftool: string
  exiftoolVendored: string
  autocannon: string
  commit: string
  /** Files changed in the checkout but not committed (other work in progress is measured with it). */
  uncommitted: number
  loadAverage: number
}

const ROOT = new URL('../../', import.meta.url)
const run = promisify(execFile)

async function version (pkg: string): Promise<string> {
  const path = createRequire(import.meta.url).resolve(`${pkg}/package.json`)
  return (JSON.parse(await readFile(path, 'utf8')) as { version: string }).version
}

async function git (...args: string[]): Promise<string> {
  return (await run('git', args, { cwd: ROOT }).catch(() => ({ stdout: '' }))).stdout.trim()
}

export async function describeMachine (): Promise<Machine> {
  const exiftool = new ExifTool({ maxProcs: 1 })
  try {
    return {
      cpu: cpus()[0]?.model.trim() ?? 'unknown',
      cores: availableParallelism(),
      ramGB: Math.round(totalmem() / 1024 ** 3),
      os: `Linux ${release()}`,
      node: process.version,
      exiftool: await exiftool.version(),
      exiftoolVendored: await version('exiftool-vendored'),
      autocannon: await version('autocannon'),
      commit: await git('rev-parse', '--short', 'HEAD'),
      uncommitted: (await git('--no-optional-locks', 'status', '--porcelain')).split('\n').filter(Boolean).length,
      loadAverage: loadavg()[0]!
    }
  } finally {
    await exiftool.end()
  }
}
