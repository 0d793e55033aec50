import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { load as parseYaml } from 'js-yaml'
import { ChatService } from '../chat-service.ts'
import { MemoryConversationStore } from '../conversation-store.ts'
import type { DomainPack } from '../domain-pack/schema.ts'
import { INTENTS } from '../intents.ts'
import type { TrainedUnderstanding } from '../nlu/training.ts'

/**
 * Test stories, Rasa-style: conversations written for the pack, with what each turn must do — the intent answered,
 * the links offered, the order and purchase date remembered, whether a person takes over, words the reply must (not)
 * contain. `npm run eval:stories` runs them; so does the test suite.
 */

const Fact = Type.Union([Type.String(), Type.Number(), Type.Boolean()])

const StoryStep = Type.Object({
  user: Type.String({ minLength: 1 }),
  context: Type.Optional(Type.Record(Type.String(), Fact)),
  intent: Type.Union(INTENTS.map((name) => Type.Literal(name))),
  /** The names of the pack's links the reply offers, in order; `[]` for none. Unchecked when absent. */
  links: Type.Optional(Type.Array(Type.String())),
  /** Whether a person takes over; false when absent. */
  handoff: Type.Optional(Type.Boolean()),
  /** The id of the pack's answer the reply gives (null: the request's own reply). Unchecked when absent. */
  answer: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /** The order number the conversation remembers after the turn (null: none). */
  order: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /** The purchase date the conversation remembers after the turn (null: none). */
  purchase_date: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /** Text the reply contains (case-insensitive). */
  reply: Type.Optional(Type.Array(Type.String())),
  /** Text the reply must not contain (case-insensitive). */
  not_reply: Type.Optional(Type.Array(Type.String()))
}, { additionalProperties: false })
export type StoryStep = Static<typeof StoryStep>

const Story = Type.Object({
  story: Type.String({ minLength: 1 }),
  /** Today, UTC, while the story runs (YYYY-MM-DD); the file's, else 2026-11-20. */
  today: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })),
  steps: Type.Array(StoryStep, { minItems: 1 })
}, { additionalProperties: false })
export type Story = Static<typeof Story> & { file: string }

const StoryFile = Type.Object({
  today: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' })),
  stories: Type.Array(Story, { minItems: 1 })
}, { additionalProperties: false })

const DEFAULT_TODAY = '2026-11-20'

/** Every story in the `*.yaml` files of `directory`, checked against the format above. */
export function loadStories (directory: string): Story[] {
  const files = readdirSync(directory).filter((file) => /\.ya?ml$/.test(file)).sort()
  return files.flatMap((file) => loadStoryFile(join(directory, file), file))
}

/** The stories of one file in the format above (a set of conversations written elsewhere, say); `name` labels them. */
export function loadStoryFile (path: string, name: string = basename(path)): Story[] {
  const data: unknown = parseYaml(readFileSync(path, 'utf8'))
  const errors = [...Value.Errors(StoryFile, data)].slice(0, 3).map((error) => `${error.path} ${error.message}`)
  if (errors.length > 0) throw new Error(`Stories ${name} are invalid: ${errors.join('; ')}`)
  const parsed = data as Static<typeof StoryFile>
  return parsed.stories.map((story) => ({ ...story, today: story.today ?? parsed.today ?? DEFAULT_TODAY, file: name }))
}

export interface StepResult {
  step: StoryStep
  reply: string
  intent: string
  /** The answer the reply gave, if it gave one. */
  answer?: string
  links: string[]
  handoff: boolean
  /** What differed from the story; empty when the step passed. */
  problems: string[]
}

export interface StoryResult {
  story: Story
  steps: StepResult[]
  passed: boolean
}

/** Where a story's conversation is held: a chat service whose clock reads `today`, and its transcript. */
export type StoryChat = (today: string) => ChatService

/**
 * Chat services for stories: conversations in memory, noon of the story's day (UTC), and the first usable template
 * of each reply, so that a story's reply checks are exact.
 */
export function storyChat (pack: DomainPack, trained: TrainedUnderstanding, baseUrl: string): StoryChat {
  return (today) => new ChatService({
    pack,
    trained,
    store: new MemoryConversationStore({ ttlMs: 3_600_000, maxConversations: 10, maxBytes: 16 * 1024 * 1024 }),
    baseUrl,
    historyLimit: 50,
    now: () => new Date(`${today}T12:00:00Z`),
    random: () => 0
  })
}

/**
 * A chat service for reading single messages (`ChatService.read`) and first questions, as `npm run eval` and the
 * classification bench time and score them: one conversation in memory, the default base URL.
 */
export function evaluationChat (pack: DomainPack, trained: TrainedUnderstanding): ChatService {
  return new ChatService({
    pack,
    trained,
    store: new MemoryConversationStore({ ttlMs: 60_000, maxConversations: 1, maxBytes: 1024 * 1024 }),
    baseUrl: 'https://shop.example.com',
    historyLimit: 2
  })
}

/** Plays a story against a fresh chat service and compares every turn with what the story expects. */
export async function runStory (story: Story, chatFor: StoryChat): Promise<StoryResult> {
  const chat = chatFor(story.today ?? DEFAULT_TODAY)
  const owner = 'story'
  const userId = 'story-customer'
  let conversationId: string | undefined
  const steps: StepResult[] = []
  for (const step of story.steps) {
    const sent = await chat.send({ owner, userId, message: step.user, ...(step.context === undefined ? {} : { context: step.context }), ...(conversationId === undefined ? {} : { conversationId }) })
    conversationId = sent.conversationId
    const { facts } = await chat.transcript(conversationId, owner, userId)
    const links = sent.links.map((link) => link.name)
    const problems: string[] = []
    if (sent.intent !== step.intent) problems.push(`intent ${sent.intent}, expected ${step.intent}`)
    if (step.links !== undefined && links.join(',') !== step.links.join(',')) problems.push(`links [${links.join(', ')}], expected [${step.links.join(', ')}]`)
    if (sent.handoff !== (step.handoff ?? false)) problems.push(`handoff ${String(sent.handoff)}, expected ${String(step.handoff ?? false)}`)
    if (step.answer !== undefined && (sent.answer ?? null) !== step.answer) problems.push(`answer ${sent.answer ?? 'none'}, expected ${step.answer ?? 'none'}`)
    if (step.order !== undefined && (facts['order_id'] ?? null) !== step.order) problems.push(`order ${String(facts['order_id'] ?? null)}, expected ${String(step.order)}`)
    if (step.purchase_date !== undefined && (facts['purchase_date'] ?? null) !== step.purchase_date) {
      problems.push(`purchase date ${String(facts['purchase_date'] ?? null)}, expected ${String(step.purchase_date)}`)
    }
    const text = sent.reply.toLowerCase()
    for (const expected of step.reply ?? []) if (!text.includes(expected.toLowerCase())) problems.push(`reply lacks "${expected}"`)
    for (const unwanted of step.not_reply ?? []) if (text.includes(unwanted.toLowerCase())) problems.push(`reply has "${unwanted}"`)
    steps.push({ step, reply: sent.reply, intent: sent.intent, ...(sent.answer === undefined ? {} : { answer: sent.answer }), links, handoff: sent.handoff, problems })
  }
  return { story, steps, passed: steps.every((step) => step.problems.length === 0) }
}
