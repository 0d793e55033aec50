/**
 * The type of the JUMBF box that holds a C2PA manifest store ("c2pa" + ISO/IEC 19566-5's suffix). Every way C2PA
 * embeds a manifest (JPEG APP11, PNG caBX, WebP and RIFF chunks, GIF extensions, TIFF and DNG tag 0xCD41, the ISO
 * BMFF uuid box, JPEG XL's jumb box) carries this box whole at the start of the store, so finding these 16 bytes
 * anywhere in a file says it may hold a manifest, and not finding them says it holds none embedded.
 */
export const MANIFEST_STORE_TYPE = Buffer.from('6332706100110010800000aa00389b71', 'hex')

/**
 * The marker's first four bytes ('c2pa'), searched for instead of all sixteen: Node looks for a pattern this short by
 * memchr on its first byte, several times faster than its Boyer-Moore-Horspool search for the whole marker, and in
 * image data the four bytes are rare enough that checking the rest at each one costs nothing.
 */
const MARKER_PREFIX = MANIFEST_STORE_TYPE.subarray(0, 4)
/** How much of a marker can lie on one side of the seam between two chunks. */
const OVERLAP = MANIFEST_STORE_TYPE.length - 1

/**
 * Looks for the manifest-store marker in bytes seen one chunk at a time (as an upload streams to disk), so the
 * validator only runs for files that may hold a manifest, without reading any file twice.
 */
export class ManifestStoreMarkerSearch {
  #found = false
  /**
   * The end of the previous chunk (`#tailLength` bytes), where a marker split across chunks begins, followed while a
   * chunk is searched by that chunk's start: one buffer for the whole upload rather than two small ones per chunk.
   */
  readonly #seam = Buffer.alloc(2 * OVERLAP)
  #tailLength = 0

  get found (): boolean {
    return this.#found
  }

  update (chunk: Buffer): void {
    if (this.#found) return
    const seam = this.#seam
    const tail = this.#tailLength
    const start = Math.min(OVERLAP, chunk.length)
    chunk.copy(seam, tail, 0, start)
    if ((tail > 0 && holdsMarker(seam.subarray(0, tail + start))) || holdsMarker(chunk)) {
      this.#found = true
      return
    }
    if (chunk.length >= OVERLAP) {
      chunk.copy(seam, 0, chunk.length - OVERLAP)
      this.#tailLength = OVERLAP
    } else {
      // A chunk shorter than the marker leaves part of the previous tail in play.
      const kept = Math.min(tail + chunk.length, OVERLAP)
      seam.copyWithin(0, tail + chunk.length - kept, tail + chunk.length)
      this.#tailLength = kept
    }
  }
}

/** Whether bytes already in memory carry the marker. */
export function mayHoldManifestStore (bytes: Buffer): boolean {
  return holdsMarker(bytes)
}

/** Whether the whole marker lies within `bytes`. */
function holdsMarker (bytes: Buffer): boolean {
  const last = bytes.length - MANIFEST_STORE_TYPE.length
  for (let at = bytes.indexOf(MARKER_PREFIX); at >= 0 && at <= last; at = bytes.indexOf(MARKER_PREFIX, at + 1)) {
    if (bytes.compare(MANIFEST_STORE_TYPE, 0, MANIFEST_STORE_TYPE.length, at, at + MANIFEST_STORE_TYPE.length) === 0) return true
  }
  return false
}
