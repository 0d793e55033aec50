import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DEFAULT_DOMAIN_PACK } from '../../src/chat/domain-pack/load.ts'
import { loadStories, runStory, storyChat } from '../../src/chat/evaluation/stories.ts'
import { BASE_URL, defaultAssistant } from '../support/chat.ts'

// The domain pack's test stories (domain/stories/, `npm run eval:stories`), each a test: every turn must do what its
// story says. The target is all of them.
const stories = loadStories(join(DEFAULT_DOMAIN_PACK, 'stories'))
/** The stories in which the assistant gave one of the pack's answers (a question asked inside a request). */
const answered = new Set<string>()

describe('the test stories', () => {
  it('are at least 200, in several files', () => {
    expect(stories.length).toBeGreaterThanOrEqual(200)
    expect(new Set(stories.map((story) => story.file)).size).toBeGreaterThan(3)
  })

  it.each(stories.map((story) => [`${story.file}: ${story.story}`, story] as const))('%s', async (_name, story) => {
    const { pack, trained } = defaultAssistant()
    const result = await runStory(story, storyChat(pack, trained, BASE_URL))
    if (result.steps.some((step) => step.answer !== undefined)) answered.add(`${story.file}: ${story.story}`)
    const failures = result.steps.flatMap((step, i) => step.problems.map((problem) => `turn ${i + 1} ${JSON.stringify(step.step.user)}: ${problem} (reply: ${step.reply})`))
    expect(failures).toEqual([])
  })

  // After the stories above (tests in a file run in order): at least 80 of them ask a question the pack answers.
  it('at least 80 of them are answered with one of the pack\'s answers', () => {
    expect(answered.size).toBeGreaterThanOrEqual(80)
  })
})
