import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { workerData } from 'node:worker_threads'
import initC2pa, { WasmReader } from '@contentauth/c2pa-wasm'
import { manifestReportFrom, type ManifestReport } from './manifest-report.ts'

/**
 * Runs in a worker thread (piscina): c2pa-rs, compiled to WebAssembly, validates one file's manifest. Hashing a
 * large file and parsing an untrusted manifest happen here, off the event loop, where a timeout can end the thread.
 */

export interface VerifyTask {
  path: string
  /** The media type c2pa-rs reads the file as. */
  mediaType: string
}

/** absent: no manifest in the file; unreadable: a manifest the validator could not parse. */
export type VerifyResult =
  | { kind: 'absent' }
  | { kind: 'unreadable', reason: string }
  | { kind: 'report', report: ManifestReport }

const { settings } = workerData as { settings: string }

await initC2pa({ module_or_path: await readFile(fileURLToPath(import.meta.resolve('@contentauth/c2pa-wasm/c2pa.wasm'))) })

export default async function verify (task: VerifyTask): Promise<VerifyResult> {
  const bytes = await readFile(task.path)
  let reader: WasmReader
  try {
    reader = await WasmReader.fromBytes(task.mediaType, bytes, settings)
  } catch (error) {
    const reason = String((error as Error)?.message ?? error)
    return reason.includes('JumbfNotFound') ? { kind: 'absent' } : { kind: 'unreadable', reason }
  }
  try {
    return { kind: 'report', report: manifestReportFrom(reader.activeManifest(), JSON.parse(reader.json())) }
  } catch (error) {
    return { kind: 'unreadable', reason: String((error as Error)?.message ?? error) }
  } finally {
    reader.free()
  }
}
