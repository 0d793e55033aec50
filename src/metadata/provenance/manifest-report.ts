/**
 * What the C2PA validator (c2pa-rs, through @contentauth/c2pa-wasm) says about an asset's active manifest: only the
 * parts the API reports, as plain data that crosses from the validator's worker thread.
 */
export interface ManifestReport {
  /** The claim generator as recorded (claims v1); null when the claim records only generator info (claims v2). */
  claimGenerator: string | null
  claimGeneratorInfo: Array<{ name: string, version: string | null }>
  title: string | null
  actions: Array<{ action: string, digitalSourceType: string | null }>
  ingredientCount: number
  /** From the signing certificate; null when the signature could not be read. */
  signer: { issuer: string | null, commonName: string | null } | null
  /** The time-stamp authority's time, ISO 8601; null without a valid time-stamp. */
  signedAt: string | null
  /** c2pa-rs's verdict: Invalid, Valid (the bytes match, the signer is not trusted) or Trusted. */
  validationState: string
  failureCodes: string[]
  successCodes: string[]
}

/** The labels of the C2PA actions assertions (v1 and v2). */
const ACTIONS_LABEL = /^c2pa\.actions(\.v\d+)?$/

/**
 * Reads a ManifestReport from c2pa-rs's active manifest (`Reader.activeManifest()`) and its manifest-store JSON
 * (`Reader.json()`, for the validation results). Anything not in the expected shape counts as absent: the
 * manifest came from an uploaded file.
 */
export function manifestReportFrom (manifest: unknown, store: unknown): ManifestReport {
  const active = record(manifest)
  const results = record(record(record(store)['validation_results'])['activeManifest'])
  const signature = record(active['signature_info'])
  const hasSignature = Object.keys(signature).length > 0
  return {
    claimGenerator: text(active['claim_generator']),
    claimGeneratorInfo: list(active['claim_generator_info']).flatMap((entry) => {
      const name = text(record(entry)['name'])
      return name === null ? [] : [{ name, version: text(record(entry)['version']) }]
    }),
    title: text(active['title']),
    actions: list(active['assertions'])
      .filter((assertion) => ACTIONS_LABEL.test(text(record(assertion)['label']) ?? ''))
      .flatMap((assertion) => list(record(record(assertion)['data'])['actions']))
      .flatMap((entry) => {
        const action = text(record(entry)['action'])
        return action === null ? [] : [{ action, digitalSourceType: text(record(entry)['digitalSourceType']) }]
      }),
    ingredientCount: list(active['ingredients']).length,
    signer: hasSignature ? { issuer: text(signature['issuer']), commonName: text(signature['common_name']) } : null,
    signedAt: text(signature['time']),
    validationState: text(record(store)['validation_state']) ?? 'Invalid',
    // validation_status: the older form of the same failures, when a validator leaves validation_results out.
    failureCodes: codes(results['failure'] ?? record(store)['validation_status']),
    successCodes: codes(results['success'])
  }
}

function codes (entries: unknown): string[] {
  return [...new Set(list(entries).map((entry) => text(record(entry)['code'])).filter((code) => code !== null))]
}

function record (value: unknown): Record<string, unknown> {
  if (value instanceof Map) return Object.fromEntries(value) as Record<string, unknown>
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {}
}

function list (value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

function text (value: unknown): string | null {
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  return trimmed.length > 0 ? trimmed : null
}
