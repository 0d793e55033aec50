/**
 * Calibrated rejection: whether a message is one the support desk serves, from several signals of the intent model's
 * reading rather than one probability threshold. The rejector is a small logistic regression over those signals,
 * fitted on the model's readings of examples it was not trained on (out-of-fold), support requests against the
 * pack's out-of-scope examples.
 */

/** What the intent model's reading of one message says about whether it is in scope. */
export interface RejectionSignals {
  /** Probability of out_of_scope. */
  outOfScope: number
  /** Probability of the best support or courtesy intent. */
  best: number
  /** `best` minus the next intent's probability. */
  margin: number
  /** Share of the message's words the model saw in training (0–1). */
  coverage: number
  /** Words in the message. */
  words: number
}

export interface RejectionSample {
  signals: RejectionSignals
  inScope: boolean
}

const FEATURES = 7

/** The rejector's features of `signals`, written into `into` (a new array unless one is given to reuse). */
function features (signals: RejectionSignals, into = new Float64Array(FEATURES)): Float64Array {
  const { outOfScope, best, margin, coverage, words } = signals
  const length = Math.log1p(words)
  into[0] = 1
  into[1] = logit(outOfScope)
  into[2] = logit(best)
  into[3] = margin
  into[4] = coverage
  into[5] = length
  into[6] = coverage * length
  return into
}

export class Rejector {
  readonly #weights: Float64Array
  /** The features of the message being judged: reused, since allocating them cost more than the rest. */
  readonly #features = new Float64Array(FEATURES)

  constructor (weights: ArrayLike<number>) {
    if (weights.length !== FEATURES) throw new Error(`a rejector has ${FEATURES} weights, not ${weights.length}`)
    this.#weights = Float64Array.from(weights)
  }

  /**
   * Logistic regression by gradient descent, with both classes weighing the same in total (so that 0.5 is the
   * point where missing a request and answering an off-topic message cost the same) and a light L2 penalty.
   */
  static fit (samples: readonly RejectionSample[], iterations = 400): Rejector {
    const rows = samples.map((sample) => ({ x: features(sample.signals), y: sample.inScope ? 1 : 0 }))
    const positives = rows.filter((row) => row.y === 1).length
    const negatives = rows.length - positives
    if (positives === 0 || negatives === 0) throw new Error('the rejector needs in-scope and out-of-scope examples')
    const classWeight = [rows.length / (2 * negatives), rows.length / (2 * positives)] as const
    const weights = new Float64Array(FEATURES)
    const gradient = new Float64Array(FEATURES)
    const squared = new Float64Array(FEATURES).fill(1e-8)
    const l2 = 1e-3
    for (let iteration = 0; iteration < iterations; iteration++) {
      gradient.fill(0)
      for (const { x, y } of rows) {
        const error = (sigmoid(dot(weights, x)) - y) * classWeight[y]!
        for (let f = 0; f < FEATURES; f++) gradient[f]! += error * x[f]! / rows.length
      }
      for (let f = 1; f < FEATURES; f++) gradient[f]! += l2 * weights[f]!
      // AdaGrad: the signals differ in scale, and a per-weight step size needs no tuning.
      for (let f = 0; f < FEATURES; f++) {
        squared[f]! += gradient[f]! * gradient[f]!
        weights[f]! -= 0.5 * gradient[f]! / Math.sqrt(squared[f]!)
      }
    }
    return new Rejector(weights)
  }

  /** The calibrated probability that the message is one the desk serves. */
  inScopeProbability (signals: RejectionSignals): number {
    return sigmoid(dot(this.#weights, features(signals, this.#features)))
  }

  toJSON (): number[] {
    return [...this.#weights]
  }
}

function dot (a: Float64Array, b: Float64Array): number {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!
  return sum
}

function sigmoid (value: number): number {
  return 1 / (1 + Math.exp(-value))
}

function logit (probability: number): number {
  const p = Math.min(1 - 1e-6, Math.max(1e-6, probability))
  return Math.log(p / (1 - p))
}
