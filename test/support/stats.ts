export interface Spread {
  median: number
  min: number
  max: number
}

/** Linear interpolation between the closest ranks. */
export function quantile (values: readonly number[], q: number): number {
  if (values.length === 0) return NaN
  const sorted = [...values].sort((a, b) => a - b)
  const position = (sorted.length - 1) * q
  const lower = Math.floor(position)
  const low = sorted[lower]!
  const high = sorted[Math.min(lower + 1, sorted.length - 1)]!
  return low + (high - low) * (position - lower)
}

export function median (values: readonly number[]): number {
  return quantile(values, 0.5)
}

export function spread (values: readonly number[]): Spread {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values) }
}
