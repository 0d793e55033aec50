/**
 * npm run eval:stories [-- <file.yaml | directory | name>]: plays test stories through the chat service, turn by
 * turn, and reports each turn that did not do what its story says, then the pass rate. Without an argument, the
 * domain pack's stories (`<pack>/stories/*.yaml`); with a YAML file or a directory of them, those (a blind set of
 * conversations written elsewhere, say); with any other word, the pack's stories whose name or file contains it.
 * The pack's stories are its tests: exits 1 unless every one passes. A file or directory given is a measurement (a
 * blind set is not expected to pass whole): its report, and exit 0.
 */
import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { DEFAULT_DOMAIN_PACK, loadDomainPack } from '../src/chat/domain-pack/load.ts'
import { loadStories, loadStoryFile, runStory, storyChat } from '../src/chat/evaluation/stories.ts'
import { DEFAULT_MODEL_CACHE, trainedForPack } from '../src/chat/nlu/model-cache.ts'

const directory = process.env['DOMAIN_PACK'] ?? DEFAULT_DOMAIN_PACK
const argument = process.argv[2]
const pack = loadDomainPack(directory)
const { trained } = trainedForPack(pack, DEFAULT_MODEL_CACHE)
const measuring = argument !== undefined && existsSync(argument)
const stories = measuring
  ? statSync(argument).isDirectory() ? loadStories(argument) : loadStoryFile(argument)
  : loadStories(join(directory, 'stories')).filter((story) => argument === undefined || story.story.includes(argument) || story.file === argument)

const chat = storyChat(pack, trained, 'https://shop.example.com')
let passed = 0
let turns = 0
let failedTurns = 0
let answered = 0
for (const story of stories) {
  const result = await runStory(story, chat)
  turns += result.steps.length
  if (result.steps.some((step) => step.answer !== undefined)) answered++
  if (result.passed) {
    passed++
    continue
  }
  process.stdout.write(`✗ ${story.file}: ${story.story}\n`)
  for (const step of result.steps) {
    failedTurns += step.problems.length > 0 ? 1 : 0
    const mark = step.problems.length === 0 ? '  ' : '✗ '
    process.stdout.write(`   ${mark}${JSON.stringify(step.step.user)} → ${step.intent}${step.answer === undefined ? '' : ` (${step.answer})`} [${step.links.join(', ')}]${step.handoff ? ' handoff' : ''}\n`)
    if (step.problems.length > 0) process.stdout.write(`       ${step.problems.join('; ')}\n       reply: ${step.reply}\n`)
  }
}
process.stdout.write(`\nstories ${passed}/${stories.length} passed (${((passed / Math.max(1, stories.length)) * 100).toFixed(1)}%), turns ${turns - failedTurns}/${turns}; ${answered} stories got one of the pack's answers\n`)
if (!measuring && passed < stories.length) process.exitCode = 1
