/**
 * The intent model's file format: a JSON header (classes, the reader's vocabulary and synonyms) and typed arrays (the
 * feature table, the weights as compressed sparse rows, the bias) in one buffer, 8-byte aligned, so that reading one
 * back is a parse and a few copies, not a training.
 */
import type { Synonyms } from './word-reader.ts'

/** Bumped whenever features or the byte layout change: a cached model of another format is trained again. */
const MODEL_FORMAT = 4

/** What a trained intent model is made of. */
export interface ModelData {
  classes: readonly string[]
  vocabulary: ReadonlyMap<string, number>
  synonyms: Synonyms
  /** The feature table: each feature's hash and its row of the weights. */
  keys: Uint32Array
  rows: Int32Array
  /** Features × classes, dense; mostly zeros. */
  weights: Float32Array
  bias: Float32Array
}

export function encodeModel (model: ModelData): Uint8Array {
  const sparse = SparseWeights.of(model.weights, model.classes.length)
  const header = JSON.stringify({
    format: MODEL_FORMAT,
    classes: model.classes,
    vocabulary: [...model.vocabulary],
    synonyms: model.synonyms,
    features: model.keys.length,
    weights: sparse.values.length
  })
  const { starts, columns, values } = sparse
  return packBytes(header, [model.keys, model.rows, starts, columns, values, model.bias])
}

export function decodeModel (bytes: Uint8Array): ModelData {
  const { header, arrays } = unpackBytes(bytes)
  const data = JSON.parse(header) as { format: number, classes: string[], vocabulary: Array<[string, number]>, synonyms: Synonyms, features: number, weights: number }
  if (data.format !== MODEL_FORMAT) throw new Error(`model format ${data.format}, expected ${MODEL_FORMAT}`)
  const [keys, rows, starts, columns, values, bias] = arrays as [Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array, Uint8Array]
  const weights = new SparseWeights(
    new Int32Array(starts.buffer, starts.byteOffset, data.features + 1),
    new Uint8Array(columns.buffer, columns.byteOffset, data.weights),
    new Float32Array(values.buffer, values.byteOffset, data.weights)
  )
  return {
    classes: data.classes,
    vocabulary: new Map(data.vocabulary),
    synonyms: data.synonyms,
    keys: new Uint32Array(keys.buffer, keys.byteOffset, data.features),
    rows: new Int32Array(rows.buffer, rows.byteOffset, data.features),
    weights: weights.toDense(data.classes.length),
    // A copy: a view would keep the whole file's buffer in memory.
    bias: new Float32Array(bias.buffer, bias.byteOffset, data.classes.length).slice()
  }
}

/**
 * The weight matrix by rows (features), keeping only each row's weights that are not 0 (compressed sparse rows): the
 * model's form on disk. In memory the model keeps it dense: adding a row whole, zeros included, measured faster than
 * following its columns.
 */
class SparseWeights {
  /** Row r's weights are at starts[r] to starts[r + 1] - 1. */
  readonly starts: Int32Array
  /** The class of each kept weight. */
  readonly columns: Uint8Array
  readonly values: Float32Array

  constructor (starts: Int32Array, columns: Uint8Array, values: Float32Array) {
    this.starts = starts
    this.columns = columns
    this.values = values
  }

  static of (dense: Float32Array, classes: number): SparseWeights {
    if (classes > 256) throw new Error('at most 256 classes')
    const rows = dense.length / classes
    const starts = new Int32Array(rows + 1)
    let kept = 0
    for (let i = 0; i < dense.length; i++) if (dense[i] !== 0) kept++
    const columns = new Uint8Array(kept)
    const values = new Float32Array(kept)
    let at = 0
    for (let row = 0; row < rows; row++) {
      starts[row] = at
      for (let c = 0; c < classes; c++) {
        const weight = dense[row * classes + c]!
        if (weight !== 0) {
          columns[at] = c
          values[at++] = weight
        }
      }
    }
    starts[rows] = at
    return new SparseWeights(starts, columns, values)
  }

  toDense (classes: number): Float32Array {
    const rows = this.starts.length - 1
    const dense = new Float32Array(rows * classes)
    for (let row = 0; row < rows; row++) {
      for (let k = this.starts[row]!; k < this.starts[row + 1]!; k++) dense[row * classes + this.columns[k]!] = this.values[k]!
    }
    return dense
  }
}

const align = (n: number): number => Math.ceil(n / 8) * 8

/** A JSON header and typed arrays in one buffer: [header length][header][each array's byte length and bytes, 8-aligned]. */
function packBytes (header: string, arrays: ReadonlyArray<ArrayBufferView>): Uint8Array {
  const headerBytes = Buffer.from(header, 'utf8')
  let size = align(4 + headerBytes.length)
  for (const array of arrays) size += 8 + align(array.byteLength)
  const bytes = new Uint8Array(size)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, headerBytes.length, true)
  bytes.set(headerBytes, 4)
  let at = align(4 + headerBytes.length)
  for (const array of arrays) {
    view.setUint32(at, array.byteLength, true)
    bytes.set(new Uint8Array(array.buffer, array.byteOffset, array.byteLength), at + 8)
    at += 8 + align(array.byteLength)
  }
  return bytes
}

function unpackBytes (bytes: Uint8Array): { header: string, arrays: Uint8Array[] } {
  // A copy that starts at offset 0 (a Buffer's slice() would share its pool), so that every array starts at an
  // offset its element size divides.
  const copy = new Uint8Array(bytes.byteLength)
  copy.set(bytes)
  const buffer = copy.buffer
  const view = new DataView(buffer)
  const headerLength = view.getUint32(0, true)
  const header = Buffer.from(buffer, 4, headerLength).toString('utf8')
  const arrays: Uint8Array[] = []
  for (let at = align(4 + headerLength); at < buffer.byteLength;) {
    const length = view.getUint32(at, true)
    arrays.push(new Uint8Array(buffer, at + 8, length))
    at += 8 + align(length)
  }
  return { header, arrays }
}
