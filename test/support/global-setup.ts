import { loadDomainPack } from '../../src/chat/domain-pack/load.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../../src/chat/nlu/model-cache.ts'

/** Trains the default pack into the model cache once, before the test files (two at a time) need it. */
export default function setup (): void {
  trainedForPack(loadDomainPack(), DEFAULT_MODEL_CACHE)
}
