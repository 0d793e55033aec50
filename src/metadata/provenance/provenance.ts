import { toIsoDateTime } from '../capture-time.ts'
import type { RawTagValues } from '../tags.ts'
import type { ContentCredentials } from './content-credentials.ts'

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

/**
 * ExifTool arguments for the provenance tags, read with the summary. `-struct` keeps each History event whole (flat
 * lists would lose which software and time belong to which action when one is missing).
 */
export const PROVENANCE_READ_ARGS = ['-struct', '-IFD0:Software', '-XMP-xmp:CreatorTool', '-XMP-xmpMM:History',
  '-XMP-iptcExt:DigitalSourceType']

/** Groups that are the C2PA manifest store itself: summarised under content_credentials, never dumped as tags. */
export const MANIFEST_STORE_GROUPS = new Set(['JUMBF', 'CBOR'])

/** The provenance of an image from its tags, its digest and its validated manifest (null when it has none). */
export function provenanceFrom (tags: RawTagValues, sha256: string, contentCredentials: ContentCredentials | null): Provenance {
  return {
    sha256,
    software: text(tags['IFD0:Software']) ?? text(tags['XMP-xmp:CreatorTool']),
    history: historyFrom(tags['XMP-xmpMM:History']),
    digital_source_type: text(tags['XMP-iptcExt:DigitalSourceType']),
    content_credentials: contentCredentials
  }
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
