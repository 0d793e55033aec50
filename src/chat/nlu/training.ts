import type { DomainPack } from '../domain-pack/schema.ts'
import { IntentModel } from './intent-model.ts'

/** The intent model of a domain pack, trained from its examples and synonyms. */
export function trainIntentModel (pack: DomainPack): IntentModel {
  const examples = Object.entries(pack.intents).flatMap(([intent, definition]) =>
    definition.examples.map((text) => ({ text, intent })))
  return IntentModel.train(examples, { synonyms: pack.understanding.synonyms })
}
