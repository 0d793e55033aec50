import { describe, expect, it } from 'vitest'
import { MANIFEST_STORE_TYPE, ManifestStoreMarkerSearch, mayHoldManifestStore } from '../../src/metadata/provenance/manifest-store-marker.ts'

function search (chunks: Buffer[]): boolean {
  const marker = new ManifestStoreMarkerSearch()
  for (const chunk of chunks) marker.update(chunk)
  return marker.found
}

describe('the manifest-store marker search', () => {
  const before = Buffer.alloc(1000, 0x11)
  const after = Buffer.alloc(1000, 0x22)
  const file = Buffer.concat([before, MANIFEST_STORE_TYPE, after])

  it('finds the marker wherever the chunks split it', () => {
    for (let cut = before.length - 1; cut <= before.length + MANIFEST_STORE_TYPE.length + 1; cut++) {
      expect(search([file.subarray(0, cut), file.subarray(cut)])).toBe(true)
    }
  })

  it('finds it when it arrives a byte at a time', () => {
    expect(search([...file.subarray(before.length - 20, before.length + 40)].map((byte) => Buffer.from([byte])))).toBe(true)
  })

  it('does not find a marker that is not there, or only part of one', () => {
    expect(search([before, after])).toBe(false)
    expect(search([before, MANIFEST_STORE_TYPE.subarray(0, 15), after])).toBe(false)
    expect(search([MANIFEST_STORE_TYPE.subarray(1), before])).toBe(false)
    expect(mayHoldManifestStore(Buffer.concat([before, MANIFEST_STORE_TYPE.subarray(0, 15)]))).toBe(false)
  })

  it('agrees with the search over bytes in memory', () => {
    expect(mayHoldManifestStore(file)).toBe(true)
    expect(mayHoldManifestStore(before)).toBe(false)
  })
})
