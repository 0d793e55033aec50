import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkDomainPack, loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import type { DomainPack } from '../../src/chat/domain-pack/schema.ts'
import { cachedTraining, trainingCode } from '../../src/chat/nlu/model-cache.ts'
import { IntentModel } from '../../src/chat/nlu/intent-model.ts'
import { Understander } from '../../src/chat/nlu/understand.ts'

// A small pack (the default pack's replies, a few examples per intent) keeps each training under a second.
let small: DomainPack
let dir: string
const english = { isEnglishWord: (word: string) => word === 'tyre', englishWords: 'test-list' }
const MESSAGES = ['where is my parcel', 'I want my money back', 'cancel order A-1', 'what is the weather', 'hi', 'asdf qwer']

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-models-'))
  const pack = structuredClone(loadDomainPack())
  for (const intent of Object.values(pack.intents)) {
    intent.examples = intent.examples.slice(0, 40)
    if (intent.situations !== undefined) for (const name of Object.keys(intent.situations)) intent.situations[name] = intent.situations[name]!.slice(0, 5)
  }
  small = checkDomainPack(pack)
})

afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

/** The model files in a cache (beside them, the cache notes how long its last training took). */
async function models (cache: string): Promise<string[]> {
  return (await readdir(cache)).filter((name) => name.endsWith('.model'))
}

function readings (understander: Understander): unknown[] {
  return MESSAGES.map((message) => understander.understand(message, '2026-11-20'))
}

describe('the model cache', () => {
  it('trains once, then reads the same model back', async () => {
    const cache = join(dir, 'one')
    const first = cachedTraining(small, cache, english)
    expect(first.source).toBe('trained')
    expect(await models(cache)).toHaveLength(1)
    const second = cachedTraining(small, cache, english)
    expect(second.source).toBe('cache')
    expect(readings(new Understander(second.trained, small.understanding))).toEqual(readings(new Understander(first.trained, small.understanding)))
  })

  it('trains again when the examples change, keeping the other model', async () => {
    const cache = join(dir, 'two')
    cachedTraining(small, cache, english)
    const changed = structuredClone(small)
    changed.intents.review.examples.push('five stars for the kettle')
    expect(cachedTraining(changed, cache, english).source).toBe('trained')
    expect(await models(cache)).toHaveLength(2)
    expect(cachedTraining(changed, cache, { ...english, englishWords: 'another-list' }).source).toBe('trained')
  })

  it('trains again when any training option changes', async () => {
    const cache = join(dir, 'options')
    cachedTraining(small, cache, english)
    for (const option of [{ seeds: [4] }, { folds: 3 }, { balance: 0.5 }, { epochs: 3 }]) {
      expect(cachedTraining(small, cache, { ...english, ...option }).source).toBe('trained')
    }
    expect(cachedTraining(small, cache, { ...english, epochs: 3 }).source).toBe('cache')
  })

  it('is keyed by the training code found from its imports: every module and package that trains or reads a model', () => {
    const code = new Map(trainingCode().map(({ name, source }) => [name, source]))
    for (const module of ['training.ts', 'intent-model.ts', 'word-reader.ts', 'features.ts', 'logistic-regression.ts', 'scorer.ts', 'model-file.ts', 'rejection.ts', 'spelling.ts', 'text.ts', 'entities.ts']) {
      expect(code.get(`src/chat/nlu/${module}`)).toContain('export ')
    }
    expect(code.get('src/chat/intents.ts')).toContain('out_of_scope')
    expect(code.get('stemmer')).toMatch(/^\d+\.\d+\.\d+/)
    expect(code.get('chrono-node')).toMatch(/^\d+\.\d+\.\d+/)
    // Understanding at run time (understand.ts) does not decide what a trained model is.
    expect(code.has('src/chat/nlu/understand.ts')).toBe(false)
  })

  it('keeps the four most recent models and forgets older ones', async () => {
    const cache = join(dir, 'many')
    for (let i = 0; i < 6; i++) {
      const changed = structuredClone(small)
      changed.intents.review.examples.push(`review number ${i}`)
      cachedTraining(changed, cache, english)
    }
    expect(await models(cache)).toHaveLength(4)
  })

  it('says before a training that it starts, and how long the last one here took; nothing when the model is cached', async () => {
    const cache = join(dir, 'notice')
    const notices: Array<{ lastTrainingMs?: number }> = []
    cachedTraining(small, cache, english, (expected) => notices.push(expected))
    expect(notices).toEqual([{}])
    cachedTraining(small, cache, english, (expected) => notices.push(expected))
    expect(notices).toHaveLength(1)
    const changed = structuredClone(small)
    changed.intents.review.examples.push('the notice test')
    cachedTraining(changed, cache, english, (expected) => notices.push(expected))
    expect(notices[1]?.lastTrainingMs).toBeGreaterThan(0)
    cachedTraining(small, undefined, english, (expected) => notices.push(expected))
    expect(notices[2]).toEqual({})
  }, 120_000)

  it('replaces a damaged file', async () => {
    const cache = join(dir, 'three')
    cachedTraining(small, cache, english)
    const [file] = await models(cache)
    await writeFile(join(cache, file!), 'not a model')
    expect(cachedTraining(small, cache, english).source).toBe('trained')
    expect(cachedTraining(small, cache, english).source).toBe('cache')
  })

  it('still answers when the cache cannot be written, and says why', async () => {
    const readOnly = join(dir, 'read-only')
    await writeFile(readOnly, 'a file where the directory should be')
    const result = cachedTraining(small, join(readOnly, 'models'), english)
    expect(result.source).toBe('trained')
    expect(result.cacheError?.message).toMatch(/ENOTDIR|EEXIST/)
    expect(new Understander(result.trained, small.understanding).understand('where is my parcel').intent).toBe('track_order')
  })

  it('a model survives the round trip through bytes', () => {
    const { trained } = cachedTraining(small, undefined, english)
    const restored = IntentModel.fromBytes(trained.model.toBytes(), english)
    for (const message of MESSAGES) {
      const words = trained.model.words(message)
      expect(restored.words(message)).toEqual(words)
      expect(restored.score(words)).toEqual(trained.model.score(words))
    }
  })

  it('a message scores the same whatever the word cache holds, when it fills up and past its size', () => {
    const { trained } = cachedTraining(small, undefined, english)
    const fresh = (): IntentModel => IntentModel.fromBytes(trained.model.toBytes(), english)
    const madeUp = (count: number, prefix: string): string[] => Array.from({ length: count }, (_, i) => `${prefix}${i.toString(36)}`)
    const message = trained.model.words('hi, I want my money back for order A-1 and where is my parcel')
    const long = [...madeUp(25_000, 'zq'), ...message]
    const expected = { message: fresh().score(message), long: fresh().score(long) }
    // The word cache holds 20,000 words: this one is 5 short of full when the message comes, then gets a message
    // longer than it holds.
    const model = fresh()
    model.score(madeUp(19_995, 'xk'))
    expect(model.score(message)).toEqual(expected.message)
    expect(model.score(long)).toEqual(expected.long)
    expect(model.score(message)).toEqual(expected.message)
  })
})
