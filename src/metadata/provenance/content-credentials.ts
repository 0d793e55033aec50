import type { ManifestReport } from './manifest-report.ts'

/** The file's C2PA manifest (Content Credentials), as the API reports it: the active manifest only. */
export interface ContentCredentials {
  claim_generator: string | null
  title: string | null
  actions: string[]
  digital_source_types: string[]
  ai_generated: boolean
  ingredients: number
  signer: { issuer: string | null, common_name: string | null } | null
  signed_at: string | null
  /**
   * valid: the claim's signature and its hard-binding hashes match the bytes received; not_checked: the validator did
   * not read the file (not_checked_reason says why).
   */
  integrity: 'valid' | 'invalid' | 'not_checked'
  /** Why integrity is not_checked; only then present. */
  not_checked_reason?: string
  /** The signing certificate chains to a configured trust anchor (C2PA_TRUST_ANCHORS), and is in good standing. */
  trusted: boolean
  /** The C2PA failure codes of the active manifest, e.g. assertion.dataHash.mismatch; empty when none failed. */
  validation_codes: string[]
}

/** IPTC digital source types that declare generative AI; C2PA names these for "AI-generated" disclosure. */
const AI_SOURCE_TYPES = new Set(['trainedAlgorithmicMedia', 'compositeWithTrainedAlgorithmicMedia'])
const IPTC_SOURCE_TYPE = /^https?:\/\/cv\.iptc\.org\/newscodes\/digitalsourcetype\/([A-Za-z]+)$/

/**
 * Failures about who signed and when (trust, expiry, revocation, the time-stamp): they decide `trusted`, not whether
 * the bytes are the ones signed. signingCredential.invalid is the exception: the signature itself is unusable.
 */
const TRUST_FAILURES = /^(signingCredential|timeStamp)\./

/** What the validator's report means for the API. */
export function contentCredentialsFrom (report: ManifestReport): ContentCredentials {
  const sourceTypes = [...new Set(report.actions.flatMap((action) => action.digitalSourceType ?? []))]
  const generator = report.claimGeneratorInfo[0]
  const integrityFailures = report.failureCodes.filter((code) => !TRUST_FAILURES.test(code) || code === 'signingCredential.invalid')
  return {
    claim_generator: report.claimGenerator ??
      (generator === undefined ? null : generator.version === null ? generator.name : `${generator.name}/${generator.version}`),
    title: report.title,
    actions: report.actions.map((action) => action.action),
    digital_source_types: sourceTypes,
    ai_generated: sourceTypes.some((type) => AI_SOURCE_TYPES.has(IPTC_SOURCE_TYPE.exec(type)?.[1] ?? '')),
    ingredients: report.ingredientCount,
    signer: report.signer === null ? null : { issuer: report.signer.issuer, common_name: report.signer.commonName },
    signed_at: report.signedAt,
    // A verdict of Invalid with no failure named is not taken as valid.
    integrity: integrityFailures.length === 0 && (report.validationState !== 'Invalid' || report.failureCodes.length > 0)
      ? 'valid'
      : 'invalid',
    trusted: report.successCodes.includes('signingCredential.trusted') &&
      !report.failureCodes.some((code) => code.startsWith('signingCredential.')),
    validation_codes: report.failureCodes
  }
}

/**
 * c2pa-rs's own status code for a manifest written before C2PA 1.0 (a claim in JSON, old-style hashes), which it
 * refuses to validate.
 */
const PRERELEASE_CODE = 'com.adobe.prerelease'

/**
 * A manifest the validator could not read at all (malformed JUMBF, a pre-release manifest, or a container c2pa-rs
 * does not support): it exists, so it is not reported as absent, but nothing in it can be relied on. `reason` is the
 * validator's error.
 */
export function unreadableContentCredentials (reason = ''): ContentCredentials {
  return {
    ...emptyContentCredentials(),
    integrity: 'invalid',
    validation_codes: [reason.includes('PrereleaseError') ? PRERELEASE_CODE : 'general.error']
  }
}

/** A manifest the validator was not asked to read (`reason` says why, for the client). */
export function uncheckedContentCredentials (reason: string): ContentCredentials {
  return { ...emptyContentCredentials(), integrity: 'not_checked', not_checked_reason: reason }
}

function emptyContentCredentials (): ContentCredentials {
  return {
    claim_generator: null,
    title: null,
    actions: [],
    digital_source_types: [],
    ai_generated: false,
    ingredients: 0,
    signer: null,
    signed_at: null,
    integrity: 'invalid',
    trusted: false,
    validation_codes: []
  }
}

/**
 * Whether the claim generator is to be taken from ExifTool's reading of the store: the validator did not read the
 * manifest (too large), or refused it as pre-release. A manifest it could not parse keeps no claim generator: its
 * bytes are damaged, and so may be ExifTool's reading of them.
 */
export function claimGeneratorFromStore (credentials: ContentCredentials): boolean {
  return credentials.claim_generator === null &&
    (credentials.integrity === 'not_checked' || credentials.validation_codes.includes(PRERELEASE_CODE))
}
