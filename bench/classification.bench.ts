/**
 * Understanding per message (what a chat request starts with), timed as `npm run eval` times it
 * (scripts/classification-timing.ts: each message alone, after warming up), over the project's held-out messages:
 * the intent model alone, and with the answer selector, the slots and the clauses of a message of several requests.
 */
import { readdirSync } from 'node:fs'
import { loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { readLabelledMessages } from '../src/chat/evaluation/intents.ts'
import { evaluationChat } from '../src/chat/evaluation/stories.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../src/chat/nlu/model-cache.ts'
import { Understander } from '../src/chat/nlu/understand.ts'
import { timeClassification } from '../test/support/classification-timing.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare } from './support/rounds.ts'

export default async function classification (options: Options): Promise<PartResult> {
  const pack = loadDomainPack()
  const { trained } = trainedForPack(pack, DEFAULT_MODEL_CACHE)
  const understander = new Understander(trained, pack.understanding)
  const chat = evaluationChat(pack, trained)
  const fixtures = new URL('../test/fixtures/', import.meta.url)
  // Messages labelled with intents; answers-*.csv holds questions labelled with answers (`npm run eval` reads both).
  const messages = readdirSync(fixtures).filter((file) => file.includes('heldout') && !file.startsWith('answers-'))
    .flatMap((file) => readLabelledMessages(new URL(file, fixtures).pathname).map((message) => message.utterance))
  const today = new Date().toISOString().slice(0, 10)
  const comparison = await compare('Understanding one message', 'µs', [{
    name: `${messages.length} held-out messages, each timed alone`,
    targets: [{ metric: 'value', op: '≤', limit: 10 }],
    run: async () => {
      const timing = timeClassification((message) => understander.understand(message, today), messages, 2)
      return { value: timing.median, extras: { p99Us: timing.p99 } }
    }
  }, {
    name: 'the same with the answer selector, slots and clauses (intent + answer)',
    targets: [{ metric: 'value', op: '≤', limit: 30 }],
    run: async () => {
      const timing = timeClassification((message) => chat.read(message, today), messages, 2)
      return { value: timing.median, extras: { p99Us: timing.p99 } }
    }
  }], { rounds: Math.max(3, options.rounds), seconds: 0, warmupSeconds: 0 })
  return {
    title: 'Intent classification',
    notes: ['The default domain pack\'s model read from the model cache, in the bench process; each message of test/fixtures/*heldout* ' +
      'timed alone after 10,000 warm-up calls (scripts/classification-timing.ts, as `npm run eval` reports it), two passes per round. ' +
      'The second row is `ChatService.read`: the intent model, the answer selector (BM25 over the pack\'s answers), the slots and cues, ' +
      'and each clause of a message that may make several requests.'],
    comparisons: [comparison]
  }
}
