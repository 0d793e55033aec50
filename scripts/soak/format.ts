/** How the soak writes its figures: milliseconds, megabytes and percentages in its tables and its results file. */

export function ms (value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '–'
}

export function mb (value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '–'
}

export function percent (value: number | undefined): string {
  return value !== undefined && Number.isFinite(value) ? value.toFixed(0) : '–'
}

export function signedPercent (share: number): string {
  return `${share >= 0 ? '+' : ''}${(share * 100).toFixed(1)}%`
}

export function round (value: number): number {
  return Math.round(value * 100) / 100
}

export function formatRow (cells: string[], widths: number[]): string {
  return '  ' + cells.map((cell, column) => column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)).join('  ')
}

export function table (headers: string[], rows: string[][]): string[] {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)))
  return [formatRow(headers, widths), '  ' + widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map((row) => formatRow(row, widths))]
}
