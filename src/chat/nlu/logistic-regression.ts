/**
 * The learner: multinomial logistic regression over sparse binary features, by stochastic gradient descent with
 * AdaGrad step sizes. It knows rows of feature indexes and class indexes, nothing of words or intents.
 */

/** One training example as the learner sees it. */
export interface Row {
  /** The example's features, as rows of the weight matrix (a feature twice: twice). */
  indexes: Int32Array
  label: number
  /**
   * The example's own key (a hash of its text and label): the order of the examples in each pass is by their keys,
   * so that adding or removing one example leaves the others in the same order and moves the model only by its own
   * updates. A shuffled index order would reorder every example and retrain a different model for one added line.
   */
  key: number
}

export interface LearnerOptions {
  /** Passes over the examples. */
  epochs?: number
  /** L2 penalty per update. */
  l2?: number
  /**
   * How far examples are reweighed so that every class counts the same: 0 not at all, 1 fully (an example of a class
   * with twice the mean count counts half), 0.5 halfway (by the square root).
   */
  balance?: number
  /** Weights smaller than this (in absolute value) are dropped after training. */
  prune?: number
  /**
   * Seeds of the example order (mixed with each example's key): one model is trained per seed and their weights
   * averaged, so that the model does not depend on the luck of one order. The same seeds always train the same model.
   */
  seeds?: readonly number[]
}

export interface LinearModel {
  /** Features × classes, row by row; pruned weights are 0. */
  weights: Float32Array
  bias: Float32Array
}

/** Weights smaller than this are dropped after training: they hardly move a score, and most of a row is such. */
const PRUNE = 0.01
/** A class whose gradient is smaller than this for an example is not updated for it. */
const MIN_GRADIENT = 1e-3
const RATE = 0.5

/** Trains one model per seed on `rows`, averages their weights and prunes the small ones. */
export function trainLogisticRegression (rows: readonly Row[], features: number, classes: number, options: LearnerOptions = {}): LinearModel {
  // A class with many examples (out_of_scope has thousands) would otherwise pull every doubtful message to itself.
  const counts = new Float64Array(classes)
  for (const row of rows) counts[row.label]!++
  const present = counts.filter((count) => count > 0).length
  const mean = rows.length / present
  const balance = options.balance ?? 0
  const exampleWeights = Float64Array.from(rows, (row) => (mean / counts[row.label]!) ** balance)
  const weights = new Float32Array(features * classes)
  const bias = new Float32Array(classes)
  const seeds = options.seeds ?? [1]
  for (const seed of seeds) {
    const fitted = fit(rows, exampleWeights, features, classes, options, seed)
    for (let i = 0; i < weights.length; i++) weights[i]! += fitted.weights[i]! / seeds.length
    for (let c = 0; c < bias.length; c++) bias[c]! += fitted.bias[c]! / seeds.length
  }
  const prune = options.prune ?? PRUNE
  for (let i = 0; i < weights.length; i++) if (Math.abs(weights[i]!) < prune) weights[i] = 0
  return { weights, bias }
}

/** One seed's model. Each example's feature sum is scaled by 1/√(its features), as the scorer scales it. */
function fit (rows: readonly Row[], exampleWeights: Float64Array, features: number, classes: number, options: LearnerOptions, seed: number): LinearModel {
  if (rows.length > INDEX_SPACE) throw new RangeError(`At most ${INDEX_SPACE} training examples, not ${rows.length}`)
  const epochs = options.epochs ?? 7
  const l2 = options.l2 ?? 1e-5
  const weights = new Float32Array(features * classes)
  const bias = new Float32Array(classes)
  const squared = new Float32Array(weights.length).fill(1e-8)
  const biasSquared = new Float32Array(classes).fill(1e-8)
  // Each pass's order, as rank × 2^20 + index in one number: a typed array sorts it natively, ties by index.
  const order = new Float64Array(rows.length)
  const scores = new Float64Array(classes)
  const gradients = new Float64Array(classes)
  const activeClasses = new Int32Array(classes)
  for (let epoch = 0; epoch < epochs; epoch++) {
    for (let i = 0; i < rows.length; i++) order[i] = mix(rows[i]!.key, seed, epoch) * INDEX_SPACE + i
    order.sort()
    for (const packed of order) {
      const i = packed % INDEX_SPACE
      const { indexes, label } = rows[i]!
      const weight = exampleWeights[i]!
      const scale = indexes.length === 0 ? 0 : 1 / Math.sqrt(indexes.length)
      scores.set(bias)
      for (const index of indexes) {
        const row = index * classes
        for (let c = 0; c < classes; c++) scores[c]! += weights[row + c]! * scale
      }
      softmaxInPlace(scores)
      // Classes the example already rules out would move the weights too little to matter; skipping them is most
      // of the speed of training.
      let active = 0
      for (let c = 0; c < classes; c++) {
        const gradient = (scores[c]! - (c === label ? 1 : 0)) * weight
        biasSquared[c]! += gradient * gradient
        bias[c]! -= RATE * gradient / Math.sqrt(biasSquared[c]!)
        if (gradient <= -MIN_GRADIENT || gradient >= MIN_GRADIENT) {
          activeClasses[active] = c
          gradients[active] = gradient * scale
          active++
        }
      }
      for (const index of indexes) {
        const row = index * classes
        for (let a = 0; a < active; a++) {
          const at = row + activeClasses[a]!
          const g = gradients[a]! + l2 * weights[at]!
          squared[at]! += g * g
          weights[at]! -= RATE * g / Math.sqrt(squared[at]!)
        }
      }
    }
  }
  return { weights, bias }
}

export function softmaxInPlace (scores: Float64Array): void {
  let max = -Infinity
  for (let c = 0; c < scores.length; c++) if (scores[c]! > max) max = scores[c]!
  let sum = 0
  for (let c = 0; c < scores.length; c++) {
    scores[c] = Math.exp(scores[c]! - max)
    sum += scores[c]!
  }
  for (let c = 0; c < scores.length; c++) scores[c]! /= sum
}

/** Room for an example's index beside its 32-bit rank in one double (2^52 is exact): a million examples. */
const INDEX_SPACE = 2 ** 20

/** An example's place in one pass: its key, the seed and the pass mixed into 32 well-spread bits. */
function mix (key: number, seed: number, epoch: number): number {
  let h = Math.imul(key ^ Math.imul(seed, 0x9e3779b1) ^ Math.imul(epoch + 1, 0x85ebca6b), 0xcc9e2d51)
  h = Math.imul(h ^ (h >>> 15), 0x2c1b3c6d)
  h = Math.imul(h ^ (h >>> 12), 0x297a2d39)
  return (h ^ (h >>> 15)) >>> 0
}
