// Counts the JUMBF boxes of a C2PA manifest store and the CBOR items inside them, and how deep both nest, before
// ExifTool (or c2pa-rs) reads the store: ExifTool's memory grows with the square of CBOR nesting (a 64 KB JPEG of
// nested CBOR arrays grew a child to gigabytes), and its time with every box and item.

import { SequentialReader, type ReadAt } from './binary-reader.ts'
import { boxesAt } from './iso-bmff.ts'
import { MAX_CBOR_DEPTH, MAX_JUMBF_DEPTH, StructureRefusal, type StructureTally } from './structure-limits.ts'

/** Checks the JUMBF boxes in [start, end) of the data behind `readAt` (throws StructureRefusal). */
export async function checkJumbf (readAt: ReadAt, start: number, end: number, tally: StructureTally, depth = 0): Promise<void> {
  for await (const box of boxesAt(readAt, start, end)) {
    tally.jumbfBox()
    if (box.type === 'jumb') {
      if (depth + 1 > MAX_JUMBF_DEPTH) throw new StructureRefusal(`JUMBF boxes nested more than ${MAX_JUMBF_DEPTH} deep`)
      await checkJumbf(readAt, box.start, box.end, tally, depth + 1)
    } else if (box.type === 'cbor') {
      await checkCbor(readAt, box.start, box.end, tally)
    }
  }
}

/** A container whose items are counted until a break byte (0xff) rather than known in advance. */
const INDEFINITE = -1
const BREAK = 0xff

/**
 * Walks the CBOR data items in [start, end), counting them and their nesting, without building any value: strings
 * are skipped, containers are a count on a stack. Malformed CBOR ends the walk (ExifTool reports it itself).
 */
export async function checkCbor (readAt: ReadAt, start: number, end: number, tally: StructureTally): Promise<void> {
  const reader = new SequentialReader(readAt, start, end)
  /** Items still expected by each open container, innermost last. */
  const open: number[] = []
  const completed = (): void => {
    while (open.length > 0) {
      const last = open.length - 1
      if (open[last] === INDEFINITE) return
      open[last]!--
      if (open[last]! > 0) return
      open.pop()
    }
  }
  const push = (items: number): void => {
    if (items === 0) return completed()
    open.push(items)
    if (open.length > MAX_CBOR_DEPTH) throw new StructureRefusal(`CBOR items nested more than ${MAX_CBOR_DEPTH} deep`)
  }
  for (;;) {
    const initial = await reader.byte()
    if (initial === undefined) return
    if (initial === BREAK) {
      if (open.at(-1) !== INDEFINITE) return
      open.pop()
      completed()
      continue
    }
    tally.cborItem()
    const major = initial >> 5
    const info = initial & 0x1f
    let argument: number | undefined
    if (info < 24) argument = info
    else if (info <= 27) argument = await reader.number(1 << (info - 24))
    else if (info === 31 && major >= 2 && major <= 5) argument = INDEFINITE
    if (argument === undefined) return
    switch (major) {
      case 2: case 3:
        // A string of known length is skipped; one of unknown length is a list of such strings, ending in a break.
        if (argument === INDEFINITE) push(INDEFINITE)
        else {
          reader.skip(argument)
          completed()
        }
        break
      case 4: push(argument === INDEFINITE ? INDEFINITE : argument); break
      case 5: push(argument === INDEFINITE ? INDEFINITE : 2 * argument); break
      // A tag wraps the one item that follows it.
      case 6: push(1); break
      default: completed()
    }
  }
}
