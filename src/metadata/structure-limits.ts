// How much structure the service lets ExifTool (and c2pa-rs) read in one file. ExifTool's cost grows with the number
// of directory entries, boxes and CBOR items it visits, and faster than that with nesting: a 64 KB JPEG of nested
// CBOR grew a child to gigabytes, nested XMP took tens of seconds. Each limit sits well above what cameras, phones
// and editors write and well below where ExifTool slows down; docs/metadata-limits.md has the measurements. Counts
// are per file, over every block of that kind in it.

/** Entries in one TIFF directory: real IFD0s, Exif IFDs and maker notes have a few dozen to a few hundred. */
export const MAX_DIRECTORY_ENTRIES = 1000
/** TIFF directories visited (IFD chain, SubIFDs, Exif, GPS, Interop, maker notes): real files have fewer than twenty. */
export const MAX_DIRECTORIES = 64
/**
 * Entries over all of a file's TIFF directories, maker notes included. The richest raw files (Olympus and Pentax
 * maker notes, DNGs with camera profiles) hold about a thousand; a `?full=true` read of ExifTool costs roughly a
 * tenth of a millisecond per entry.
 */
export const MAX_TOTAL_ENTRIES = 5000
/** XML element nesting in one XMP packet: Lightroom's masks and Photoshop's pantry nest about twenty deep. */
export const MAX_XMP_DEPTH = 64
/**
 * Decompressed XMP in one compressed PNG text chunk: ExifTool inflates it whole, so a small chunk could otherwise
 * become gigabytes in its memory. Photoshop's largest packets (long DocumentAncestors lists) are a few megabytes.
 */
export const MAX_INFLATED_XMP_BYTES = 64 * 1024 * 1024
/** JUMBF superbox nesting: a C2PA store nests four deep (store, manifest, assertion store, assertion). */
export const MAX_JUMBF_DEPTH = 16
/** JUMBF boxes in a file: a manifest with a hundred assertions has about three hundred. */
export const MAX_JUMBF_BOXES = 2000
/** CBOR nesting: C2PA's claims, actions and identity assertions nest about ten deep. */
export const MAX_CBOR_DEPTH = 64
/** CBOR data items in a file: ExifTool makes a tag of each; a manifest store with many ingredients has a few thousand. */
export const MAX_CBOR_ITEMS = 10_000
/** CIFF heap nesting (Canon CRW, and the CIFF block of early PowerShot JPEGs): real files nest three deep. */
export const MAX_CIFF_DEPTH = 16
/** CIFF records in a file: a CRW has about a hundred. */
export const MAX_CIFF_RECORDS = 2000
/**
 * ISO BMFF boxes visited (HEIF, AVIF, CR3, the JPEG XL container): a 48-megapixel phone HEIC's grid of tiles and
 * its auxiliary images come to a few hundred.
 */
export const MAX_BOXES = 2000
/** ISO BMFF box nesting: a CR3's sample descriptions nest eight deep. */
export const MAX_BOX_DEPTH = 32

/** A structure beyond the limits: the message says what, for the client (IMAGE_TOO_COMPLEX). */
export class StructureRefusal extends Error {}

/** What one file has used of the limits that are counted per file; throws StructureRefusal past one. */
export class StructureTally {
  #directories = 0
  #entries = 0
  #jumbfBoxes = 0
  #cborItems = 0
  #ciffRecords = 0
  #boxes = 0

  directory (entries: number): void {
    if (++this.#directories > MAX_DIRECTORIES) throw new StructureRefusal(`more than ${MAX_DIRECTORIES} TIFF directories`)
    if (entries > MAX_DIRECTORY_ENTRIES) throw new StructureRefusal(`a TIFF directory of ${entries} entries (at most ${MAX_DIRECTORY_ENTRIES})`)
    this.#entries += entries
  }

  /**
   * Called once a TIFF walk is done. The total is checked last so that a file past several limits is refused for the
   * one that says most about it (too many directories, a directory too large); the walk is bounded by those anyway.
   */
  directoriesDone (): void {
    if (this.#entries > MAX_TOTAL_ENTRIES) throw new StructureRefusal(`more than ${MAX_TOTAL_ENTRIES} TIFF directory entries in all`)
  }

  jumbfBox (): void {
    if (++this.#jumbfBoxes > MAX_JUMBF_BOXES) throw new StructureRefusal(`more than ${MAX_JUMBF_BOXES} JUMBF boxes`)
  }

  cborItem (): void {
    if (++this.#cborItems > MAX_CBOR_ITEMS) throw new StructureRefusal(`more than ${MAX_CBOR_ITEMS} CBOR items`)
  }

  ciffRecords (count: number): void {
    this.#ciffRecords += count
    if (this.#ciffRecords > MAX_CIFF_RECORDS) throw new StructureRefusal(`more than ${MAX_CIFF_RECORDS} CIFF records`)
  }

  box (): void {
    if (++this.#boxes > MAX_BOXES) throw new StructureRefusal(`more than ${MAX_BOXES} ISO BMFF boxes`)
  }
}
