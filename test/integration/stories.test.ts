import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DEFAULT_DOMAIN_PACK } from '../../src/chat/domain-pack/load.ts'
import { loadStories, runStory, storyChat } from '../../src/chat/evaluation/stories.ts'
import { BASE_URL, defaultAssistant } from '../support/chat.ts'

// The domain pack's test stories (domain/stories/, `npm run eval:stories`), each a test: every turn must do what its
// story says. The target is all of them.
const stories = loadStories(join(DEFAULT_DOMAIN_PACK, 'stories'))

describe('the test stories', () => {
  it('are at least 60, in several files', () => {
    expect(stories.length).toBeGreaterThanOrEqual(60)
    expect(new Set(stories.map((story) => story.file)).size).toBeGreaterThan(3)
  })

  it.each(stories.map((story) => [`${story.file}: ${story.story}`, story] as const))('%s', async (_name, story) => {
    const { pack, trained } = defaultAssistant()
    const result = await runStory(story, storyChat(pack, trained, BASE_URL))
    const failures = result.steps.flatMap((step, i) => step.problems.map((problem) => `turn ${i + 1} ${JSON.stringify(step.step.user)}: ${problem} (reply: ${step.reply})`))
    expect(failures).toEqual([])
  })
})
