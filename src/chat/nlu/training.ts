import type { DomainPack } from '../domain-pack/schema.ts'
import { OUT_OF_SCOPE } from '../intents.ts'
import { exampleKey, IntentModel, type IntentModelOptions, type TrainingExample } from './intent-model.ts'
import type { LearnerOptions } from './logistic-regression.ts'
import { ClassIndex } from './reading.ts'
import { Rejector, type RejectionSample } from './rejection.ts'

/** What understanding needs that is learnt from the pack. */
export interface TrainedUnderstanding {
  model: IntentModel
  rejector: Rejector
}

/** The learner's options (seeds: one model per seed, weights averaged), and how the rejector is fitted. */
export interface TrainingOptions extends LearnerOptions {
  /** Folds of the out-of-fold readings the rejector is fitted on. */
  folds?: number
  isEnglishWord?: (word: string) => boolean
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
  const { folds = DEFAULT_FOLDS, seeds = DEFAULT_SEEDS, ...learner } = options
  const modelOptions: IntentModelOptions = { synonyms: pack.understanding.synonyms, balance: DEFAULT_BALANCE, ...learner }
  const samples: RejectionSample[] = []
  // Folds by each example's key, not its place: an added example leaves every other one in its fold.
  const foldOf = examples.map((example) => exampleKey(example) % folds)
  for (let fold = 0; fold < folds; fold++) {
    const training = examples.filter((_, i) => foldOf[i] !== fold)
    const model = IntentModel.train(training, { ...modelOptions, seeds: [fold + 101] })
    const index = new ClassIndex(model.classes)
    for (const [i, example] of examples.entries()) {
      if (foldOf[i] !== fold) continue
      const words = model.words(example.text)
      samples.push({ signals: index.read(model.score(words), words.length).signals, inScope: !example.label.startsWith(OUT_OF_SCOPE) })
    }
  }
  return {
    model: IntentModel.train(examples, { ...modelOptions, seeds }),
    rejector: Rejector.fit(samples)
  }
}
