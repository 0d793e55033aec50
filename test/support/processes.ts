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
