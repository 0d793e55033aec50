/**
 * The type of the JUMBF box that holds a C2PA manifest store ("c2pa" + ISO/IEC 19566-5's suffix). Every way C2PA
 * embeds a manifest (JPEG APP11, PNG caBX, WebP and RIFF chunks, GIF extensions, TIFF and DNG tag 0xCD41, the ISO
 * BMFF uuid box, JPEG XL's jumb box) carries this box whole at the start of the store, so finding these 16 bytes
 * anywhere in a file says it may hold a manifest, and not finding them says it holds none embedded.
 */
export const MANIFEST_STORE_TYPE = Buffer.from('6332706100110010800000aa00389b71', 'hex')

/**
 * Looks for the manifest-store marker in bytes seen one chunk at a time (as an upload streams to disk), so the
 * validator only runs for files that may hold a manifest, without reading any file twice.
 */
export class ManifestStoreMarkerSearch {
  #found = false
  /** The end of the previous chunk, where a marker split across chunks begins. */
  #tail = Buffer.alloc(0)

  get found (): boolean {
    return this.#found
  }

  update (chunk: Buffer): void {
    if (this.#found) return
    const overlap = MANIFEST_STORE_TYPE.length - 1
    if (this.#tail.length > 0) {
      const seam = Buffer.concat([this.#tail, chunk.subarray(0, overlap)])
      if (seam.includes(MANIFEST_STORE_TYPE)) {
        this.#found = true
        return
      }
    }
    if (chunk.includes(MANIFEST_STORE_TYPE)) {
      this.#found = true
      return
    }
    // A chunk shorter than the marker leaves part of the previous tail in play.
    const recent = chunk.length >= overlap ? chunk : Buffer.concat([this.#tail, chunk])
    this.#tail = Buffer.from(recent.subarray(Math.max(0, recent.length - overlap)))
  }
}

/** Whether bytes already in memory carry the marker. */
export function mayHoldManifestStore (bytes: Buffer): boolean {
  return bytes.includes(MANIFEST_STORE_TYPE)
}
