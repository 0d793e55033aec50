import { randomUUID } from 'node:crypto'
import { AnswerSelector } from './answers/selector.ts'
import { readWords, stemsOf } from './answers/terms.ts'
import { dateOf, isoTimestamp, utcDate } from './calendar.ts'
import { boundFacts, DEFAULT_FACT_LIMITS, type FactLimits } from './conversation-facts.ts'
import type { ConversationStore } from './conversation-store.ts'
import { asksToDo, splitClauses } from './dialogue/clauses.ts'
import type { Conversation } from './dialogue/conversation.ts'
import type { ClauseReading, Decision, MessageReading, ReplyChoice, RequestContext } from './dialogue/decision.ts'
import { DialoguePolicy } from './dialogue/policy.ts'
import { SlotReader } from './dialogue/slots.ts'
import type { DomainPack } from './domain-pack/schema.ts'
import { ConversationNotFound } from './errors.ts'
import { isSupportIntent, type IntentName } from './intents.ts'
import type { TrainedUnderstanding } from './nlu/training.ts'
import { Understander, type Understanding } from './nlu/understand.ts'
import { ReplyRenderer, type Reply } from './replies/renderer.ts'
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
  /** The id of the pack's answer the reply gives, when it gives one (`returns.shipping_cost`). */
  answer?: string
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
  readonly answers: AnswerSelector
  readonly slots: SlotReader
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
    this.answers = new AnswerSelector(options.pack.answers, options.pack.requests)
    this.slots = new SlotReader(options.pack.slots, options.pack.policies.payment_methods, options.pack.policies.delivery_options.map((option) => option.name))
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
      const timestamp = isoTimestamp(received)
      const conversation = newConversation(input.owner, input.userId, timestamp)
      const sent = this.#answer(conversation, input, this.read(input.message, dateOf(timestamp)), timestamp)
      await this.#store.save(conversation, { newTurns: TURNS_PER_MESSAGE, historyLimit: this.#historyLimit })
      return sent
    }
    // What the message says does not depend on the conversation: understood once (once it is found), however often
    // the message is applied.
    let read: MessageRead | undefined
    return await this.#store.update(input.conversationId, (conversation) => {
      if (!owns(conversation, input.owner, input.userId)) throw new ConversationNotFound()
      read ??= this.read(input.message, utcDate(received))
      // Applied again after another message came first: its time is when it was applied.
      return this.#answer(conversation, input, read, isoTimestamp(this.#now()))
    }, { recentTurns: TURNS_PER_MESSAGE, historyLimit: this.#historyLimit })
  }

  /**
   * Decides and renders the reply to the message at `timestamp` (ISO 8601, UTC), and changes the conversation
   * accordingly (its turns included).
   */
  #answer (conversation: Conversation, input: SendMessage, read: MessageRead, timestamp: string): SentReply {
    const today = dateOf(timestamp)
    const context = input.context ?? {}
    const previousTurn = conversation.turns.findLast((turn) => turn.role === 'assistant')
    const previousMessage = conversation.turns.findLast((turn) => turn.role === 'customer')?.text
    const state = { ...conversation, ...(previousTurn === undefined ? {} : { previousIntent: previousTurn.intent }), ...(previousMessage === undefined ? {} : { previousMessage }) }
    const decision = this.#policy.decide(state, read.understanding, context, today, read.reading)
    const reply = this.#render(decision, today, previousTurn?.text)

    conversation.facts = boundFacts(conversation.facts, decision.facts, Object.keys(context), this.#factLimits)
    conversation.misunderstoodInARow = decision.misunderstoodInARow
    if (decision.topic === undefined) delete conversation.topic
    else conversation.topic = decision.topic
    if (decision.pendingIntent === undefined) delete conversation.pendingIntent
    else conversation.pendingIntent = decision.pendingIntent
    if (Object.keys(decision.slots).length === 0) delete conversation.slots
    else conversation.slots = decision.slots
    conversation.turns.push(
      { role: 'customer', text: input.message, intent: decision.intent, timestamp },
      { role: 'assistant', text: reply.text, intent: decision.intent, timestamp, handoff: decision.handoff }
    )
    conversation.updatedAt = timestamp
    return {
      reply: reply.text,
      intent: decision.intent,
      ...(decision.answer === undefined ? {} : { answer: decision.answer.id }),
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

  /**
   * What a message says, read once: the intent model's understanding, the answer selector's probabilities, the slots
   * and cues, and — when it may make several requests — each clause's own reading.
   */
  read (message: string, today: string): MessageRead {
    const { words, stems } = readWords(message)
    const understanding = this.understander.understand(message, today, words)
    // Split into sentences once, and only when something asks for it: a question mark, or an and-question.
    const asking = message.includes('?')
    const andQuestion = AND_QUESTION.test(message)
    // An emoji between two sentences ends the first, as a full stop would ("…for Christmas 🙄 Can I cancel it").
    const punctuated = message.replace(EMOJI, '.')
    const sentences = asking || andQuestion ? punctuated.split(SENTENCE_BREAK) : []
    const slots = this.slots.read(stems, message, words)
    const reading: MessageReading = { text: message, answers: this.answers.rank(stems, asking ? questionStems(sentences) : undefined, slots.asksWhether === true), slots }
    const clauses = this.#clauses(punctuated, understanding, today, { asking, andQuestion, sentences: sentenceCount(sentences) })
    if (clauses !== undefined) reading.clauses = clauses
    return { understanding, reading }
  }

  /**
   * Each clause read on its own, when the message may make more than one request: a second request in scope is
   * among the model's candidates for the whole message, and the message has several clauses.
   */
  #clauses (message: string, understanding: Understanding, today: string, shape: MessageShape): ClauseReading[] | undefined {
    const second = understanding.candidates[1]
    const likely = second !== undefined && second.probability >= SECOND_REQUEST_PROBABILITY && isSupportIntent(second.intent)
    const { asking, andQuestion, sentences } = shape
    const several = likely || ANOTHER_REQUEST.test(message) || (andQuestion && sentences <= MAX_AND_SENTENCES)
    // (A question asked in a sentence of its own beside another that asks for something to be done, "i'd like to
    // cancel it please. is there a charge?", is a second request whatever the model makes of the whole; beside one
    // that tells something, "i dont need the work one anymore. how do i close it?", it is not.)
    const asksApart = asking && sentences >= 2 && sentences <= MAX_AND_SENTENCES
    if (!several && !asksApart) return undefined
    const clauses = splitClauses(message)
    if (clauses.length < 2 || clauses.length > MAX_CLAUSES) return undefined
    const read = clauses.map((clause) => {
      const { words, stems } = readWords(clause)
      const slots = this.slots.read(stems, clause, words)
      const understanding = this.understander.understand(clause, today, words)
      // A value corrected, with no question ("Sorry, just checked the receipt, it was the 4th actually."), asks nothing.
      const { entities } = understanding
      const corrects = slots.cues.has('correction') && !clause.includes('?') && (entities.date !== undefined || entities.orderId !== undefined)
      // A question of a word or none that the model is unsure of ("is that possible?", "how?") asks about the clause
      // before it, not apart ("and is there a fee for that" is sure, and apart).
      const vague = slots.contentWords <= MAX_REFERRING_WORDS && !(understanding.status === 'understood' && understanding.confidence >= SURE_CLAUSE)
      // What the customer does not want, with no question, asks nothing ("i dont want a tracking link"), unless it
      // tells what happened to the item ("I don't want it any more": changed mind).
      const refuses = !clause.includes('?') && refusal(words)
      return {
        understanding,
        answers: this.answers.rank(stems, undefined, slots.asksWhether === true),
        asks: (!corrects && !vague && !refuses && slots.asks) || slots.situation !== undefined,
        wants: asksToDo(clause, slots)
      }
    })
    if (!several && !read.some((clause, i) => clause.wants && !clauses[i]!.includes('?'))) return undefined
    return read
  }

  /** The decision's reply, then each part that follows it, as one text with the links of all. */
  #render (decision: Decision, today: string, previous: string | undefined): Reply {
    const values = { ...decision.facts, ...decision.values }
    const main = this.#renderChoice(decision.intent, decision.reply, values, today, previous)
    // Unreachable with a checked pack: every intent and answer has a default template that needs no context, and so
    // do fallbacks.
    if (main === undefined) throw new Error(`No usable reply for intent ${decision.intent}`)
    const texts = [main.text]
    const links = [...main.links]
    for (const part of decision.more) {
      const rendered = this.#renderChoice(part.intent, part.reply, values, today, undefined)
      if (rendered === undefined) continue
      texts.push(withoutRepeatedLink(rendered.text, links))
      for (const link of rendered.links) if (!links.some((other) => other.url === link.url)) links.push(link)
    }
    return { text: texts.join(' '), links }
  }

  #renderChoice (intent: IntentName, choice: ReplyChoice, facts: Decision['facts'], today: string, previous: string | undefined): Reply | undefined {
    const request = { facts, today, ...(previous === undefined ? {} : { previous }) }
    const reply = this.#renderer.render({ ...request, groups: this.#replyGroups(intent, choice) })
    if (reply !== undefined || choice.kind !== 'intent' || choice.otherwise === undefined) return reply
    return this.#renderer.render({ ...request, groups: [this.#pack.fallback[choice.otherwise]] })
  }

  #replyGroups (intent: IntentName, choice: ReplyChoice): Array<readonly string[]> {
    if (choice.kind === 'fallback') return [this.#pack.fallback[choice.name]]
    const replies = choice.kind === 'answer' ? this.answers.byId(choice.id)?.replies ?? { default: [] } : this.#pack.intents[intent].replies
    const groups: Array<readonly string[]> = []
    for (const situation of choice.situations) {
      const group = replies[situation]
      if (group !== undefined) groups.push(group)
    }
    return groups
  }

  /** Unknown, expired, another key's or another user's conversation: the same answer, so none can be told apart. */
  async #owned (conversationId: string, ownerKey: string, userId: string): Promise<Conversation> {
    const conversation = await this.#store.load(conversationId)
    if (conversation === undefined || !owns(conversation, ownerKey, userId)) throw new ConversationNotFound()
    return conversation
  }
}

/** What a message says, read once however often it is applied: the understanding, and what the dialogue reads of it. */
interface MessageRead {
  understanding: Understanding
  reading: MessageReading
}

/** A message adds the customer's turn and the reply; the last two are all a message reads of the history. */
const TURNS_PER_MESSAGE = 2
/**
 * How probable a second request must be, for the whole message, before its clauses are read one by one — or the
 * message says it asks another thing.
 */
const SECOND_REQUEST_PROBABILITY = 0.05
const ANOTHER_REQUEST = /\b(?:also|plus|another thing|as well)\b/i
/**
 * A second question joined by "and" ("can i cancel my order and will it cost me anything", "Do I have to pay for it?
 * And is there anything I need to include?"), in a message of at most MAX_AND_SENTENCES sentences: a longer one is
 * an account of what happened.
 */
const MAX_AND_SENTENCES = 3
const AND_QUESTION = /\band (?:can|could|will|would|is|are|does|do|how|what|when|where)(?:'?s)?\b/i
/** A message of more clauses is a story, not a list of requests: it is read whole. */
const MAX_CLAUSES = 6
/** A clause of at most this many content words says too little to be a request apart from the one before it… */
const MAX_REFERRING_WORDS = 1
/** …unless the model is this sure of the request it reads in it ("and is there a fee for that"). */
const SURE_CLAUSE = 0.8

/** A clause that opens "I don't want…" (its words normalised: "i do not want"). */
function refusal (words: readonly string[]): boolean {
  return (words[0] === 'i' || words[0] === 'we') && words[1] === 'do' && words[2] === 'not' && words[3] === 'want'
}

function owns (conversation: Conversation, ownerKey: string, userId: string): boolean {
  return conversation.ownerKey === ownerKey && conversation.userId === userId
}

function newConversation (ownerKey: string, userId: string, timestamp: string): Conversation {
  return { id: randomUUID(), ownerKey, userId, createdAt: timestamp, updatedAt: timestamp, facts: {}, misunderstoodInARow: 0, turns: [] }
}

/** Whether a message asks with a question mark or an and-question, and how many sentences it has (when it does). */
interface MessageShape {
  asking: boolean
  andQuestion: boolean
  sentences: number
}

/** How many of a message's sentences have a letter. */
function sentenceCount (sentences: readonly string[]): number {
  let count = 0
  for (const sentence of sentences) if (LETTER.test(sentence)) count++
  return count
}

const LETTER = /[a-z]/i

/**
 * The stems of the sentences that ask, when the message also tells something in sentences of its own ("I typed it
 * exactly as in the e-mail. Can I use it with another code?"): the answer is to the question.
 */
function questionStems (sentences: readonly string[]): string[] | undefined {
  if (sentences.length < 2) return undefined
  const questions = sentences.filter((sentence) => sentence.includes('?'))
  if (questions.length === sentences.length) return undefined
  return stemsOf(questions.join(' '))
}

/** After a sentence's end mark, the spaces before the next: one pass, linear. */
const SENTENCE_BREAK = /(?<=[.!?])\s+/
const EMOJI = /\p{Extended_Pictographic}/gu

/**
 * A part's closing pointer to a link an earlier part of the reply gave already ("… within 7 days. The refund policy:
 * https://…" after the same link): dropped with its sentence, so the link is given once. A part that is nothing but
 * that sentence stays as it is.
 */
function withoutRepeatedLink (text: string, given: ReadonlyArray<{ url: string }>): string {
  for (const { url } of given) {
    if (!text.endsWith(url)) continue
    const end = text.lastIndexOf('. ', text.length - url.length)
    return end < 0 ? text : text.slice(0, end + 1)
  }
  return text
}
