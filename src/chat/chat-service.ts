import { randomUUID } from 'node:crypto'
import { utcDate } from './calendar.ts'
import { boundFacts, DEFAULT_FACT_LIMITS, type FactLimits } from './conversation-facts.ts'
import type { ConversationStore } from './conversation-store.ts'
import type { Conversation } from './dialogue/conversation.ts'
import { DialoguePolicy, type Decision, type RequestContext } from './dialogue/policy.ts'
import type { DomainPack } from './domain-pack/schema.ts'
import { ConversationNotFound } from './errors.ts'
import type { IntentName } from './intents.ts'
import type { TrainedUnderstanding } from './nlu/training.ts'
import { Understander, type Understanding } from './nlu/understand.ts'
import { ReplyRenderer } from './replies/renderer.ts'
import type { RenderedLink } from './replies/templates.ts'

export interface ChatServiceOptions {
  pack: DomainPack
  /** The intent model and rejector trained from the pack. */
  trained: TrainedUnderstanding
  store: ConversationStore
  /** SUPPORT_BASE_URL: the `{base}` of every link, without a trailing slash. */
  baseUrl: string
  /** Turns kept per conversation; older ones are dropped. */
  historyLimit: number
  /** Facts a conversation remembers at most (the least recently given go first); DEFAULT_FACT_LIMITS when not given. */
  factLimits?: FactLimits
  now?: () => Date
  /** Picks among usable reply templates; injectable so that tests can be exact. */
  random?: () => number
}

export interface SendMessage {
  /** Whom the conversation belongs to: an id of the API key the request authenticated with, never the key itself. */
  owner: string
  userId: string
  message: string
  context?: RequestContext
  conversationId?: string
}

export interface SentReply {
  reply: string
  intent: IntentName
  confidence: number
  links: RenderedLink[]
  handoff: boolean
  conversationId: string
  timestamp: string
}

/**
 * One message in, one reply out: understand the message; load the conversation (with its last message and reply: the
 * history is the store's), decide, render the reply, save. The only code that changes a conversation. The store
 * applies the messages of one conversation one at a time, deciding again on what another message stored first.
 */
export class ChatService {
  readonly understander: Understander
  readonly #pack: DomainPack
  readonly #policy: DialoguePolicy
  readonly #renderer: ReplyRenderer
  readonly #store: ConversationStore
  readonly #historyLimit: number
  readonly #factLimits: FactLimits
  readonly #now: () => Date

  constructor (options: ChatServiceOptions) {
    this.#pack = options.pack
    this.understander = new Understander(options.trained, options.pack.understanding)
    this.#policy = new DialoguePolicy(options.pack)
    this.#renderer = new ReplyRenderer(options.pack, { baseUrl: options.baseUrl, ...(options.random === undefined ? {} : { random: options.random }) })
    this.#store = options.store
    this.#historyLimit = options.historyLimit
    this.#factLimits = options.factLimits ?? DEFAULT_FACT_LIMITS
    this.#now = options.now ?? (() => new Date())
  }

  async send (input: SendMessage): Promise<SentReply> {
    const received = this.#now()
    if (input.conversationId === undefined) {
      const conversation = newConversation(input.owner, input.userId, received.toISOString())
      const sent = this.#answer(conversation, input, this.understander.understand(input.message, utcDate(received)), received)
      await this.#store.save(conversation, { newTurns: TURNS_PER_MESSAGE, historyLimit: this.#historyLimit })
      return sent
    }
    // What the message says does not depend on the conversation: understood once (once it is found), however often
    // the message is applied.
    let understanding: Understanding | undefined
    return await this.#store.update(input.conversationId, (conversation) => {
      if (!owns(conversation, input.owner, input.userId)) throw new ConversationNotFound()
      understanding ??= this.understander.understand(input.message, utcDate(received))
      // Applied again after another message came first: its time is when it was applied.
      return this.#answer(conversation, input, understanding, this.#now())
    }, { recentTurns: TURNS_PER_MESSAGE, historyLimit: this.#historyLimit })
  }

  /** Decides and renders the reply to the message, and changes the conversation accordingly (its turns included). */
  #answer (conversation: Conversation, input: SendMessage, understanding: Understanding, now: Date): SentReply {
    const timestamp = now.toISOString()
    const today = utcDate(now)
    const context = input.context ?? {}
    const previousTurn = conversation.turns.findLast((turn) => turn.role === 'assistant')
    const decision = this.#policy.decide({ ...conversation, ...(previousTurn === undefined ? {} : { previousIntent: previousTurn.intent }) }, understanding, context, today)
    const previous = previousTurn?.text
    const reply = this.#renderer.render({ groups: this.#replyGroups(decision), facts: decision.facts, today, ...(previous === undefined ? {} : { previous }) })
    // Unreachable with a checked pack: every intent has a default template that needs no context, and so do fallbacks.
    if (reply === undefined) throw new Error(`No usable reply for intent ${decision.intent}`)

    conversation.facts = boundFacts(conversation.facts, decision.facts, Object.keys(context), this.#factLimits)
    conversation.misunderstoodInARow = decision.misunderstoodInARow
    if (decision.topic === undefined) delete conversation.topic
    else conversation.topic = decision.topic
    if (decision.pendingIntent === undefined) delete conversation.pendingIntent
    else conversation.pendingIntent = decision.pendingIntent
    conversation.turns.push(
      { role: 'customer', text: input.message, intent: decision.intent, timestamp },
      { role: 'assistant', text: reply.text, intent: decision.intent, timestamp, handoff: decision.handoff }
    )
    conversation.updatedAt = timestamp
    return {
      reply: reply.text,
      intent: decision.intent,
      confidence: decision.confidence,
      links: reply.links,
      handoff: decision.handoff,
      conversationId: conversation.id,
      timestamp
    }
  }

  /** A conversation for the owner (API key) and user that started it; anyone else is told it does not exist. */
  async transcript (conversationId: string, owner: string, userId: string): Promise<Conversation> {
    return await this.#owned(conversationId, owner, userId)
  }

  #replyGroups (decision: Decision): Array<readonly string[]> {
    if (decision.reply.kind === 'fallback') return [this.#pack.fallback[decision.reply.name]]
    const { replies } = this.#pack.intents[decision.intent]
    return decision.reply.situations.flatMap((situation) => {
      const group = replies[situation]
      return group === undefined ? [] : [group]
    })
  }

  /** Unknown, expired, another key's or another user's conversation: the same answer, so none can be told apart. */
  async #owned (conversationId: string, ownerKey: string, userId: string): Promise<Conversation> {
    const conversation = await this.#store.load(conversationId)
    if (conversation === undefined || !owns(conversation, ownerKey, userId)) throw new ConversationNotFound()
    return conversation
  }
}

/** A message adds the customer's turn and the reply; the last two are all a message reads of the history. */
const TURNS_PER_MESSAGE = 2

function owns (conversation: Conversation, ownerKey: string, userId: string): boolean {
  return conversation.ownerKey === ownerKey && conversation.userId === userId
}

function newConversation (ownerKey: string, userId: string, timestamp: string): Conversation {
  return { id: randomUUID(), ownerKey, userId, createdAt: timestamp, updatedAt: timestamp, facts: {}, misunderstoodInARow: 0, turns: [] }
}
