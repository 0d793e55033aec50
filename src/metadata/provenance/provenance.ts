import { toIsoDateTime } from '../capture-time.ts'
import {
  CLAIM_GENERATOR_INFO_TAGS,
  CLAIM_GENERATOR_TAGS,
  DIGITAL_SOURCE_TYPE_TAG,
  HISTORY_TAG,
  SOFTWARE_TAGS,
  type RawTagValues
} from '../read-args.ts'
import { claimGeneratorFromStore, type ContentCredentials } from './content-credentials.ts'

/** Where an image says it came from: what made or edited it, what it declares, and its C2PA manifest. */
export interface Provenance {
  /** Hex SHA-256 of the bytes received, the identity forensics work with. */
  sha256: string
  software: string | null
  history: HistoryEntry[]
  digital_source_type: string | null
  content_credentials: ContentCredentials | null
}

/** One XMP Media Management History (xmpMM:History) event. */
export interface HistoryEntry {
  action: string | null
  software: string | null
  /** ISO 8601, with the offset the file recorded; null when absent or not a real date. */
  when: string | null
}

/** The provenance of an image from its tags, its digest and its validated manifest (null when it has none). */
export function provenanceFrom (tags: RawTagValues, sha256: string, contentCredentials: ContentCredentials | null): Provenance {
  return {
    sha256,
    software: firstText(tags, SOFTWARE_TAGS),
    history: historyFrom(tags[HISTORY_TAG]),
    digital_source_type: text(tags[DIGITAL_SOURCE_TYPE_TAG]),
    content_credentials: contentCredentials === null || !claimGeneratorFromStore(contentCredentials)
      ? contentCredentials
      : { ...contentCredentials, claim_generator: claimGeneratorFrom(tags) }
  }
}

/**
 * The claim generator as ExifTool reads it from the manifest store, for a manifest the validator refused (a
 * pre-release manifest) or did not read (a file above its size limit). With several manifests in the store the
 * active one, the last, is the one ExifTool's answer keeps.
 */
function claimGeneratorFrom (tags: RawTagValues): string | null {
  const generator = firstText(tags, CLAIM_GENERATOR_TAGS)
  if (generator !== null) return generator
  const name = text(tags[CLAIM_GENERATOR_INFO_TAGS.name])
  const version = text(tags[CLAIM_GENERATOR_INFO_TAGS.version])
  return name === null ? null : version === null ? name : `${name}/${version}`
}

function firstText (tags: RawTagValues, names: readonly string[]): string | null {
  for (const name of names) {
    const value = text(tags[name])
    if (value !== null) return value
  }
  return null
}

function historyFrom (value: unknown): HistoryEntry[] {
  // One event is a struct, several a list of them.
  const events = Array.isArray(value) ? value : value === undefined ? [] : [value]
  return events.flatMap((event) => {
    if (typeof event !== 'object' || event === null) return []
    const fields = event as Record<string, unknown>
    const when = text(fields['When'])
    return [{
      action: text(fields['Action']),
      software: text(fields['SoftwareAgent']),
      when: when === null ? null : toIsoDateTime(when)
    }]
  })
}

function text (value: unknown): string | null {
  if (typeof value === 'number') return String(value)
  if (typeof value !== 'string') return null
  const trimmed = value.trim()
  return trimmed.length > 0 ? trimmed : null
}
