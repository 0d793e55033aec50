/**
 * Intent classification per message (the understanding a chat request starts with), timed as `npm run eval` times
 * it (scripts/classification-timing.ts: each message alone, after warming up), over the project's held-out messages.
 */
import { readdirSync } from 'node:fs'
import { loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { readLabelledMessages } from '../src/chat/evaluation/intents.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../src/chat/nlu/model-cache.ts'
import { Understander } from '../src/chat/nlu/understand.ts'
import { timeClassification } from '../test/support/classification-timing.ts'
import type { Options } from './support/options.ts'
import type { PartResult } from './support/report.ts'
import { compare } from './support/rounds.ts'

export default async function classification (options: Options): Promise<PartResult> {
  const pack = loadDomainPack()
  const understander = new Understander(trainedForPack(pack, DEFAULT_MODEL_CACHE).trained, pack.understanding)
  const fixtures = new URL('../test/fixtures/', import.meta.url)
  const messages = readdirSync(fixtures).filter((file) => file.includes('heldout'))
    .flatMap((file) => readLabelledMessages(new URL(file, fixtures).pathname).map((message) => message.utterance))
  const today = new Date().toISOString().slice(0, 10)
  const comparison = await compare('Understanding one message', 'µs', [{
    name: `${messages.length} held-out messages, each timed alone`,
    targets: [{ metric: 'value', op: '≤', limit: 10 }],
    run: async () => {
      const timing = timeClassification((message) => understander.understand(message, today), messages, 2)
      return { value: timing.median, extras: { p99Us: timing.p99 } }
    }
  }], { rounds: Math.max(3, options.rounds), seconds: 0, warmupSeconds: 0 })
  return {
    title: 'Intent classification',
    notes: ['The default domain pack\'s model read from the model cache, in the bench process; each message of test/fixtures/*heldout* ' +
      'timed alone after 10,000 warm-up calls (scripts/classification-timing.ts, as `npm run eval` reports it), two passes per round.'],
    comparisons: [comparison]
  }
}
