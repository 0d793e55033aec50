/**
 * npm run train: trains the domain pack's model into the model cache (MODEL_CACHE_DIR, or the project's default),
 * so that the next start reads it instead of training. `npm ci` runs it (postinstall), and so does the container build.
 */
import { DEFAULT_DOMAIN_PACK, loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../src/chat/nlu/model-cache.ts'

const pack = process.env['DOMAIN_PACK'] ?? DEFAULT_DOMAIN_PACK
const directory = process.env['MODEL_CACHE_DIR'] ?? DEFAULT_MODEL_CACHE
if (directory === '') {
  process.stderr.write('MODEL_CACHE_DIR is empty: there is no cache to train into\n')
  process.exit(2)
}
const started = performance.now()
const { source, cacheError } = trainedForPack(loadDomainPack(pack), directory, ({ lastTrainingMs }) => {
  const expect = lastTrainingMs === undefined ? 'usually 10–30 s' : `about ${Math.max(1, Math.round(lastTrainingMs / 1000))} s, as the last training here took`
  process.stdout.write(`${pack}: training the chat model into ${directory} (expect ${expect})\n`)
})
if (cacheError !== undefined) {
  process.stderr.write(`the model could not be cached in ${directory}: ${cacheError.message}\n`)
  process.exit(1)
}
process.stdout.write(`${pack}: ${source === 'cache' ? 'already in the cache' : 'trained and cached'} in ${directory} (${Math.round(performance.now() - started)} ms)\n`)
