import type { EntitySpan } from './entities.ts'
import { FeatureTable } from './feature-table.ts'
import { FeatureExtractor } from './features.ts'
import { trainLogisticRegression, type LearnerOptions, type Row } from './logistic-regression.ts'
import { decodeModel, encodeModel } from './model-file.ts'
import { Scorer, type ModelScore } from './scorer.ts'
import { WordReader, type Synonyms } from './word-reader.ts'

export type { ModelScore } from './scorer.ts'
export type { Synonyms } from './word-reader.ts'

export interface TrainingExample {
  text: string
  /** The class: an intent, or `intent/situation`. */
  label: string
}

export interface IntentModelOptions extends LearnerOptions {
  /** Domain words and phrases mapped to the one word the model learns ("money back" → "refund"). */
  synonyms?: Synonyms
  /** Correctly spelt English words: never "corrected" into a word of the corpus. */
  isEnglishWord?: (word: string) => boolean
}

/**
 * The embedded intent classifier, Rasa's pipeline in small: the word reader (word-reader.ts: normalisation, spelling,
 * synonyms), the featurizer (features.ts: hashed stems, character 4-grams, word pairs), the learner
 * (logistic-regression.ts) and the scorer (scorer.ts). Trains from the domain pack's examples in seconds; classifies a
 * message in microseconds.
 */
export class IntentModel {
  /** The classes, sorted: intents and `intent/situation`s. */
  readonly classes: readonly string[]
  readonly #reader: WordReader
  readonly #table: FeatureTable
  readonly #weights: Float32Array
  readonly #bias: Float32Array
  readonly #scorer: Scorer

  private constructor (classes: readonly string[], reader: WordReader, table: FeatureTable, weights: Float32Array, bias: Float32Array) {
    this.classes = classes
    this.#reader = reader
    this.#table = table
    this.#weights = weights
    this.#bias = bias
    this.#scorer = new Scorer(table, weights, bias)
  }

  static train (examples: readonly TrainingExample[], options: IntentModelOptions = {}): IntentModel {
    const classes = [...new Set(examples.map((example) => example.label))].sort()
    const reader = WordReader.fromCorpus(examples.map((example) => example.text), options.synonyms, options.isEnglishWord)
    const extractor = new FeatureExtractor()
    const featureIndex = new Map<number, number>()
    const rows: Row[] = examples.map((example) => {
      const hashes = extractor.features(reader.words(example.text))
      const indexes = new Int32Array(hashes.length)
      for (let i = 0; i < hashes.length; i++) {
        let index = featureIndex.get(hashes[i]!)
        if (index === undefined) {
          index = featureIndex.size
          featureIndex.set(hashes[i]!, index)
        }
        indexes[i] = index
      }
      return { indexes, label: classes.indexOf(example.label), key: exampleKey(example) }
    })
    const { weights, bias } = trainLogisticRegression(rows, featureIndex.size, classes.length, options)
    return new IntentModel(classes, reader, FeatureTable.from(featureIndex), weights, bias)
  }

  /** The words the model reads in a text: normalised, spelling corrected, synonyms mapped. */
  words (text: string, spans?: readonly EntitySpan[]): string[] {
    return this.#reader.words(text, spans)
  }

  /** The words the model reads in a text whose tokens (wordsOf, text.ts) the caller has already read. */
  wordsOfTokens (tokens: readonly string[]): string[] {
    return this.#reader.wordsOfTokens(tokens)
  }

  /** Class probabilities for words from `words()`. */
  score (words: readonly string[]): ModelScore {
    return this.#scorer.score(words)
  }

  /** The model as bytes, for the on-disk cache; `fromBytes` restores it exactly. */
  toBytes (): Uint8Array {
    return encodeModel({
      classes: this.classes,
      vocabulary: this.#reader.vocabulary,
      synonyms: this.#reader.synonyms,
      keys: this.#table.keys(),
      rows: this.#table.rows(),
      weights: this.#weights,
      bias: this.#bias
    })
  }

  static fromBytes (bytes: Uint8Array, options: Pick<IntentModelOptions, 'isEnglishWord'> = {}): IntentModel {
    const model = decodeModel(bytes)
    const reader = new WordReader(model.vocabulary, model.synonyms, options.isEnglishWord)
    return new IntentModel(model.classes, reader, FeatureTable.fromArrays(model.keys, model.rows), model.weights, model.bias)
  }
}

/** FNV-1a over the label and the text: the same example always has the same key (Row.key). */
export function exampleKey (example: TrainingExample): number {
  let h = 0x811c9dc5
  for (const text of [example.label, '\n', example.text]) {
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  }
  return h >>> 0
}
