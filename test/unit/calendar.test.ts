import { describe, expect, it } from 'vitest'
import { isoTimestamp } from '../../src/chat/calendar.ts'

describe('isoTimestamp', () => {
  it('writes what toISOString writes, within the years 0–9999 and beyond', () => {
    const edges = [0, -1, 1, 999, 1_000, 86_399_999, 253_402_300_799_999, 253_402_300_800_000, -62_167_219_200_000, -62_167_219_200_001, 8.64e15, -8.64e15]
    // Instants spread evenly from year 0 to 9999, odd milliseconds and all (no randomness: a failure comes back).
    const spread = Array.from({ length: 20_000 }, (_, index) => -62_167_219_200_000 + index * 15_778_476_123)
    for (const ms of [...edges, ...spread]) expect(isoTimestamp(new Date(ms)), String(ms)).toBe(new Date(ms).toISOString())
  })

  it('refuses an invalid date as toISOString does', () => {
    expect(() => isoTimestamp(new Date(Number.NaN))).toThrow(RangeError)
  })
})
