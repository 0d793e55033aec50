import type { DomainPack } from '../domain-pack/schema.ts'
import { OUT_OF_SCOPE } from '../intents.ts'
import { IntentModel, type IntentModelOptions, type TrainingExample } from './intent-model.ts'
import { ClassIndex } from './reading.ts'
import { Rejector, type RejectionSample } from './rejection.ts'

/** What understanding needs that is learnt from the pack. */
export interface TrainedUnderstanding {
  model: IntentModel
  rejector: Rejector
}

export interface TrainingOptions {
  /** One model per seed, weights averaged (IntentModelOptions.seeds). */
  seeds?: readonly number[]
  /** Folds of the out-of-fold readings the rejector is fitted on. */
  folds?: number
  isEnglishWord?: (word: string) => boolean
  /** IntentModelOptions.balance and .epochs. */
  balance?: number
  epochs?: number
}

export const DEFAULT_SEEDS = [1, 2, 3] as const
export const DEFAULT_FOLDS = 5
export const DEFAULT_BALANCE = 0

/** The pack's examples as the model's classes: each intent, and each situation as `intent/situation`. */
export function trainingExamples (pack: DomainPack): TrainingExample[] {
  return Object.entries(pack.intents).flatMap(([intent, definition]) => [
    ...definition.examples.map((text) => ({ text, label: intent })),
    ...Object.entries(definition.situations ?? {}).flatMap(([situation, examples]) =>
      examples.map((text) => ({ text, label: `${intent}/${situation}` })))
  ])
}

/**
 * Trains the intent model (seeds averaged) and fits the rejector on out-of-fold readings: each fold's examples are
 * read by a model trained without them, as new messages will be.
 */
export function trainUnderstanding (pack: DomainPack, options: TrainingOptions = {}): TrainedUnderstanding {
  const examples = trainingExamples(pack)
  const modelOptions: IntentModelOptions = {
    synonyms: pack.understanding.synonyms,
    balance: options.balance ?? DEFAULT_BALANCE,
    ...(options.epochs === undefined ? {} : { epochs: options.epochs }),
    ...(options.isEnglishWord === undefined ? {} : { isEnglishWord: options.isEnglishWord })
  }
  const folds = options.folds ?? DEFAULT_FOLDS
  const samples: RejectionSample[] = []
  for (let fold = 0; fold < folds; fold++) {
    const training = examples.filter((_, i) => i % folds !== fold)
    const model = IntentModel.train(training, { ...modelOptions, seeds: [fold + 101] })
    const index = new ClassIndex(model.classes)
    for (let i = fold; i < examples.length; i += folds) {
      const example = examples[i]!
      const words = model.words(example.text)
      samples.push({ signals: index.read(model.score(words), words.length).signals, inScope: !example.label.startsWith(OUT_OF_SCOPE) })
    }
  }
  return {
    model: IntentModel.train(examples, { ...modelOptions, seeds: options.seeds ?? DEFAULT_SEEDS }),
    rejector: Rejector.fit(samples)
  }
}
