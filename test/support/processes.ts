import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'

export interface ProcessResult {
  exitCode: number | null
  stdout: string
  stderr: string
}

/** Runs a command to its end (killed after `timeoutMs`), collecting its output. */
export async function runProcess (
  command: string,
  args: string[],
  options: { cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number }
): Promise<ProcessResult> {
  const child = spawn(command, args, { cwd: options.cwd, env: options.env, timeout: options.timeoutMs })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', resolve)
  })
  return { exitCode, stdout, stderr }
}

/** Polls a condition, bounded (at most `tries` checks, `intervalMs` apart); throws if it never holds. */
export async function until (condition: () => boolean | Promise<boolean>, tries = 400, intervalMs = 10): Promise<void> {
  for (let attempt = 0; attempt < tries; attempt++) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, intervalMs))
  }
  throw new Error(`condition never held in ${tries * intervalMs} ms`)
}

/** Whether a process of this id exists (signal 0 checks without signalling). */
export function isAlive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The processes `pid` started, from /proc (Linux); none once it is gone. */
export function childrenOf (pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** A process's resident memory now, in bytes, from /proc (Linux). */
export function residentBytes (pid: number): number {
  return 1024 * Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1])
}

/** What `work` returns, with the process's RSS before it and the highest RSS seen while it ran (sampled every 10 ms). */
export async function watchingMemory<T> (pid: number, work: () => Promise<T>): Promise<{ result: T, before: number, peak: number }> {
  const before = residentBytes(pid)
  let peak = before
  const sampler = setInterval(() => {
    // The process may be gone by the last sample.
    try { peak = Math.max(peak, residentBytes(pid)) } catch {}
  }, 10)
  try {
    return { result: await work(), before, peak }
  } finally {
    clearInterval(sampler)
  }
}
