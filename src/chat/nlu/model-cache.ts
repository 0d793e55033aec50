import { createHash, randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { findPackageJSON } from 'node:module'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { DomainPack } from '../domain-pack/schema.ts'
import { loadEnglishWords } from './english.ts'
import { IntentModel } from './intent-model.ts'
import { Rejector } from './rejection.ts'
import { trainingExamples, trainUnderstanding, type TrainedUnderstanding, type TrainingOptions } from './training.ts'

/** The project's default: beside the other build caches, out of the repository. */
export const DEFAULT_MODEL_CACHE = new URL('../../../node_modules/.cache/chat-metadata-api', import.meta.url).pathname

const MODEL_FILE = /^[\w-]{32}\.model$/
/** How long the last training into the cache took, so that the next one can say what to expect. */
const LAST_TRAINING_FILE = 'last-training.json'
/** Models kept in the cache: a few packs (or versions of one) at once. */
const KEPT_MODELS = 4

/**
 * A module's static imports, type-only ones left out: `import … from '…'`, `export … from '…'`, `import '…'`. Read
 * from the project's own source, so the statements are at the start of a line.
 */
const IMPORT = /^(?:import|export)(\s+type\b)?[\w\s{},*$]*?\bfrom\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm

export interface CachedTraining {
  trained: TrainedUnderstanding
  /** Where it came from: read from the cache, or trained now (and written to the cache, if it could be). */
  source: 'cache' | 'trained'
  /** Why the cache could not be written, when it could not; the model works all the same. */
  cacheError?: Error
}

/** Told before a training starts (it takes long enough to be worth saying). */
export type OnTraining = (expected: { lastTrainingMs?: number }) => void

/**
 * The trained understanding of a pack, from the on-disk cache when the same examples, synonyms, options and training
 * code trained it before, else trained now and cached (written atomically, so processes starting together can share
 * a cache). `directory` undefined: no cache.
 */
export function cachedTraining (pack: DomainPack, directory: string | undefined, options: TrainingOptions & { englishWords: string }, onTraining?: OnTraining): CachedTraining {
  if (directory === undefined) {
    onTraining?.({})
    return { trained: trainUnderstanding(pack, options), source: 'trained' }
  }
  const file = join(directory, `${cacheKey(pack, options)}.model`)
  const cached = read(file, options.isEnglishWord)
  if (cached !== undefined) return { trained: cached, source: 'cache' }
  onTraining?.(lastTraining(directory))
  const started = performance.now()
  const trained = trainUnderstanding(pack, options)
  const trainingMs = Math.round(performance.now() - started)
  try {
    write(file, trained)
    writeFileSync(join(directory, LAST_TRAINING_FILE), JSON.stringify({ ms: trainingMs }))
    return { trained, source: 'trained' }
  } catch (error) {
    return { trained, source: 'trained', cacheError: error as Error }
  }
}

function cacheKey (pack: DomainPack, options: TrainingOptions & { englishWords: string }): string {
  const hash = createHash('sha256')
  // Every option, so that no two trainings share a file; the spelling guard is a function, named by englishWords.
  const { isEnglishWord: _guard, ...keyed } = options
  hash.update(JSON.stringify([trainingExamples(pack), pack.understanding.synonyms, keyed]))
  for (const { name, source } of trainingCode()) hash.update(`${name}\n${source}\n`)
  return hash.digest('base64url').slice(0, 32)
}

/**
 * The code that decides what a cached model is, found by following the imports of this module (which trains, writes
 * and reads models): each of our modules (path from the project's root, and source) and each package it reaches
 * (name, and version). A change to any of it trains again; nothing needs listing by hand.
 */
export function trainingCode (): Array<{ name: string, source: string }> {
  const root = fileURLToPath(new URL('../../../', import.meta.url))
  const modules = new Map<string, string>()
  const packages = new Map<string, string>()
  const visit = (url: URL): void => {
    const path = fileURLToPath(url)
    if (modules.has(path)) return
    const source = readFileSync(path, 'utf8')
    modules.set(path, source)
    for (const [, typeOnly, from, bare] of source.matchAll(IMPORT)) {
      const specifier = from ?? bare!
      if (typeOnly !== undefined || specifier.startsWith('node:')) continue
      if (specifier.startsWith('.')) {
        visit(new URL(specifier, url))
      } else {
        const manifest = findPackageJSON(specifier, url)
        if (manifest === undefined) throw new Error(`${path}: cannot find the package ${specifier}`)
        const { name, version } = JSON.parse(readFileSync(manifest, 'utf8')) as { name: string, version: string }
        packages.set(name, version)
      }
    }
  }
  visit(new URL(import.meta.url))
  return [
    ...[...modules].map(([path, source]) => ({ name: relative(root, path), source })),
    ...[...packages].map(([name, version]) => ({ name, source: version }))
  ].sort((a, b) => a.name < b.name ? -1 : 1)
}

function lastTraining (directory: string): { lastTrainingMs?: number } {
  try {
    const { ms } = JSON.parse(readFileSync(join(directory, LAST_TRAINING_FILE), 'utf8')) as { ms: unknown }
    return typeof ms === 'number' && ms > 0 ? { lastTrainingMs: ms } : {}
  } catch {
    return {}
  }
}

function read (file: string, isEnglishWord: TrainingOptions['isEnglishWord']): TrainedUnderstanding | undefined {
  let bytes: Buffer
  try {
    bytes = readFileSync(file)
  } catch {
    return undefined
  }
  try {
    const headerLength = bytes.readUInt32LE(0)
    const rejector = new Rejector(JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8')) as number[])
    const model = IntentModel.fromBytes(bytes.subarray(4 + headerLength), isEnglishWord === undefined ? {} : { isEnglishWord })
    return { model, rejector }
  } catch {
    // A damaged or foreign file: train again and replace it.
    return undefined
  }
}

function write (file: string, trained: TrainedUnderstanding): void {
  const header = Buffer.from(JSON.stringify(trained.rejector.toJSON()), 'utf8')
  const length = Buffer.alloc(4)
  length.writeUInt32LE(header.length)
  mkdirSync(join(file, '..'), { recursive: true })
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`
  try {
    writeFileSync(temporary, Buffer.concat([length, header, trained.model.toBytes()]))
    renameSync(temporary, file)
  } finally {
    rmSync(temporary, { force: true })
  }
  forgetOldModels(join(file, '..'))
}

/** Every change to a pack or to the training code leaves a model behind: the few most recent are kept. */
function forgetOldModels (directory: string): void {
  const models = readdirSync(directory).filter((name) => MODEL_FILE.test(name))
    .map((name) => ({ path: join(directory, name), modified: statSync(join(directory, name)).mtimeMs }))
    .sort((a, b) => b.modified - a.modified)
  for (const old of models.slice(KEPT_MODELS)) rmSync(old.path, { force: true })
}

/** The trained understanding of a pack as the service uses it: English-guarded spelling, default seeds and folds. */
export function trainedForPack (pack: DomainPack, directory: string | undefined, onTraining?: OnTraining): CachedTraining {
  const english = loadEnglishWords()
  return cachedTraining(pack, directory, { isEnglishWord: english.has, englishWords: english.name }, onTraining)
}
