// Big- and little-endian integers as bytes, for the builders of test files. Values wrap to their width, as in a
// field of a file (a mutation may write -1 or 2^32).

export function be16 (value: number): Buffer {
  const out = Buffer.alloc(2)
  out.writeUInt16BE(value & 0xffff)
  return out
}

export function be32 (value: number): Buffer {
  const out = Buffer.alloc(4)
  out.writeUInt32BE(value >>> 0)
  return out
}

export function le16 (value: number): Buffer {
  const out = Buffer.alloc(2)
  out.writeUInt16LE(value & 0xffff)
  return out
}

/** One or more 32-bit little-endian integers, one after another. */
export function le32 (...values: number[]): Buffer {
  const out = Buffer.alloc(values.length * 4)
  values.forEach((value, i) => out.writeUInt32LE(value >>> 0, i * 4))
  return out
}
