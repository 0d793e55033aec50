import { describe, expect, it } from 'vitest'
import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import { IntentModel, type TrainingExample } from '../../src/chat/nlu/intent-model.ts'
import { trainingExamples } from '../../src/chat/nlu/training.ts'

// A few examples per class keeps each training well under a second.
const examples: TrainingExample[] = Object.values(Object.groupBy(trainingExamples(loadDomainPack()), (example) => example.label))
  .flatMap((group) => group!.slice(0, 30))
const MESSAGES = ['where is my parcel', 'I want my money back', 'cancel order A-1 please', 'is there a fee to cancel', 'how do i reset my password', 'what is the weather']

/** The largest change of any class's probability for any of the messages, from one model to the other. */
function largestChange (one: IntentModel, other: IntentModel): number {
  let largest = 0
  for (const message of MESSAGES) {
    const a = one.score(one.words(message)).probabilities
    const b = other.score(other.words(message)).probabilities
    for (let c = 0; c < a.length; c++) largest = Math.max(largest, Math.abs(a[c]! - b[c]!))
  }
  return largest
}

describe('the intent model', () => {
  it('moves only a little when one example is added, wherever it is added', () => {
    const model = IntentModel.train(examples, { seeds: [1] })
    // One more greeting, first in the list: every other example moves one place down.
    const added = IntentModel.train([{ text: 'hiya, good evening to you', label: 'greeting' }, ...examples], { seeds: [1] })
    expect(added.classes).toEqual(model.classes)
    expect(largestChange(model, added)).toBeLessThan(0.02)
  })

  it('trains the same model from the same examples in any order', () => {
    const model = IntentModel.train(examples, { seeds: [1] })
    const reversed = IntentModel.train(examples.toReversed(), { seeds: [1] })
    expect(largestChange(model, reversed)).toBeLessThan(1e-6)
  })

  it('trains another model from other seeds', () => {
    const model = IntentModel.train(examples, { seeds: [1] })
    expect(largestChange(model, IntentModel.train(examples, { seeds: [2] }))).toBeGreaterThan(0.02)
  })
})
