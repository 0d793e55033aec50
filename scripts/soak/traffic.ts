/** The soak's traffic: what the next request of the mix is, and what answer it must get. */
import { metadataRequest, type HttpRequest } from '../../test/support/corpus.ts'
import { Rng } from '../../test/support/rng.ts'
import { parseJson, type Planned } from './client.ts'
import { GENERIC_FOLLOW_UPS, NAMES, ORDER_ANSWERS, TOPICS, type Topic } from './conversations.ts'
import type { SoakImage } from './images.ts'
import { CONTEXT_SHARE, KINDS, MAX_MESSAGES, MAX_OPEN_CONVERSATIONS, MIN_MESSAGES, SEED, WEIGHTS, type Kind } from './settings.ts'

interface Conversation {
  id: string
  userId: string
  orderId: string
  /** The messages still to send, in order. */
  script: string[]
  /** Customer messages answered so far. */
  sent: number
  busy: boolean
}

/** An image and its two POST /v1/metadata requests, built once (a camera image's data URI is megabytes). */
interface ImageRequests {
  image: SoakImage
  multipart: HttpRequest & { body: Buffer }
  dataUri: HttpRequest & { body: Buffer }
}

export class Traffic {
  /** The fuzz harness's seeded mulberry32: the same mix on every run, so runs compare. */
  readonly #random = new Rng(SEED)
  readonly #idle: Conversation[] = []
  #open = 0
  #users = 0
  readonly #authorization: string
  readonly #images: { small: ImageRequests[], camera: ImageRequests }
  readonly #cumulative: Array<[Kind, number]>
  readonly #total: number
  /** Conversations started and finished (their scripts sent to the end), and chat kinds turned into another. */
  readonly stats = { started: 0, finished: 0, dropped: 0, newAsContinue: 0, continueAsNew: 0, transcriptAsNew: 0, maxOpen: 0 }

  constructor (apiKey: string, images: { small: SoakImage[], camera: SoakImage }) {
    this.#authorization = `Bearer ${apiKey}`
    const requests = (image: SoakImage): ImageRequests =>
      ({ image, multipart: metadataRequest(image, 'multipart', apiKey), dataUri: metadataRequest(image, 'data URI', apiKey) })
    this.#images = { small: images.small.map(requests), camera: requests(images.camera) }
    let sum = 0
    this.#cumulative = KINDS.map((kind) => { sum += WEIGHTS[kind]; return [kind, sum] })
    this.#total = sum
  }

  get open (): number {
    return this.#open
  }

  next (): Planned {
    const roll = this.#random.next() * this.#total
    const kind = this.#cumulative.find(([, upTo]) => roll < upTo)?.[0] ?? 'chatContinue'
    switch (kind) {
      // A chat kind that cannot be sent as drawn (no idle conversation, too many open) is sent as another, counted.
      case 'chatNew':
        if (this.#open < MAX_OPEN_CONVERSATIONS || this.#idle.length === 0) return this.#start()
        this.stats.newAsContinue++
        return this.#continue(this.#takeIdle())
      case 'chatContinue':
        if (this.#idle.length > 0) return this.#continue(this.#takeIdle())
        this.stats.continueAsNew++
        return this.#start()
      case 'transcript':
        if (this.#idle.length > 0) return this.#transcript(this.#takeIdle())
        this.stats.transcriptAsNew++
        return this.#start()
      case 'metadataSmallMultipart':
        return this.#metadata(kind, this.#random.pick(this.#images.small), 'multipart')
      case 'metadataCameraMultipart':
        return this.#metadata(kind, this.#images.camera, 'multipart')
      case 'metadataSmallDataUri':
        return this.#metadata(kind, this.#random.pick(this.#images.small), 'dataUri')
      case 'metadataCameraDataUri':
        return this.#metadata(kind, this.#images.camera, 'dataUri')
    }
  }

  #takeIdle (): Conversation {
    const index = this.#random.int(this.#idle.length)
    const conversation = this.#idle[index]!
    this.#idle[index] = this.#idle[this.#idle.length - 1]!
    this.#idle.pop()
    conversation.busy = true
    return conversation
  }

  #orderId (): string {
    const n = this.#random.int(90_000) + 10_000
    return this.#random.pick([`A-${n}`, String(n), `ORD${n}1`, `ORD-${n}`])
  }

  #script (topic: Topic, orderId: string, orderKnown: boolean): string[] {
    const length = this.#random.range(MIN_MESSAGES, MAX_MESSAGES)
    const opener = this.#random.pick(topic.openers)
    const messages = [opener]
    if (topic.needsOrder && !orderKnown && !opener.includes('{order}')) messages.push(this.#random.pick(ORDER_ANSWERS))
    const followUps = [...topic.followUps]
    while (messages.length < length) {
      if (followUps.length > 0 && this.#random.chance(0.6)) messages.push(followUps.splice(this.#random.int(followUps.length), 1)[0]!)
      else messages.push(this.#random.pick(GENERIC_FOLLOW_UPS))
    }
    return messages.slice(0, length).map((message) => message.replaceAll('{order}', orderId))
  }

  #start (): Planned {
    const orderId = this.#orderId()
    const withContext = this.#random.chance(CONTEXT_SHARE)
    let context: Record<string, string> | undefined
    if (withContext) {
      context = { order_id: orderId }
      if (this.#random.chance(0.5)) {
        const daysAgo = 1 + this.#random.int(60)
        context['purchase_date'] = new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
      }
      if (this.#random.chance(0.5)) context['customer_name'] = this.#random.pick(NAMES)
    }
    const conversation: Conversation = {
      id: '',
      userId: `soak-customer-${++this.#users}`,
      orderId,
      script: this.#script(this.#random.pick(TOPICS), orderId, withContext),
      sent: 0,
      busy: true
    }
    this.#open++
    this.stats.started++
    this.stats.maxOpen = Math.max(this.stats.maxOpen, this.#open)
    return this.#chat('chatNew', conversation, context)
  }

  #continue (conversation: Conversation): Planned {
    // Now and then a later message repeats the context, as a widget sending the page's order does.
    const context = this.#random.chance(0.05) ? { order_id: conversation.orderId } : undefined
    return this.#chat('chatContinue', conversation, context)
  }

  /** POST /v1/chat/send with the conversation's next message; the first answer gives the conversation its id. */
  #chat (kind: 'chatNew' | 'chatContinue', conversation: Conversation, context: Record<string, string> | undefined): Planned {
    const message = conversation.script.shift() ?? 'thanks'
    return {
      kind,
      method: 'POST',
      path: '/v1/chat/send',
      headers: { authorization: this.#authorization, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({
        message,
        user_id: conversation.userId,
        ...(conversation.id === '' ? {} : { conversation_id: conversation.id }),
        ...(context === undefined ? {} : { context })
      })),
      check: (body) => {
        const answer = parseJson(body) as { conversation_id?: unknown, reply?: unknown } | undefined
        const id = answer?.conversation_id
        if (conversation.id === '' && (typeof id !== 'string' || id === '')) return 'no conversation_id'
        if (conversation.id !== '' && id !== conversation.id) return 'another conversation_id'
        if (typeof answer?.reply !== 'string' || answer.reply === '') return 'no reply'
        conversation.id = id as string
        conversation.sent++
        return undefined
      },
      release: (ok) => { this.#release(conversation, ok) }
    }
  }

  #transcript (conversation: Conversation): Planned {
    return {
      kind: 'transcript',
      method: 'GET',
      path: `/v1/chat/conversations/${encodeURIComponent(conversation.id)}?user_id=${encodeURIComponent(conversation.userId)}`,
      headers: { authorization: this.#authorization },
      check: (body) => {
        const answer = parseJson(body) as { conversation_id?: unknown, turns?: unknown } | undefined
        if (answer?.conversation_id !== conversation.id) return 'another conversation_id'
        if (!Array.isArray(answer.turns)) return 'no turns'
        // Two turns per message answered (all of them: the history keeps 50, scripts stop at 30).
        if (answer.turns.length !== 2 * conversation.sent) return `${answer.turns.length} turns, expected ${2 * conversation.sent}`
        return undefined
      },
      release: () => {
        conversation.busy = false
        this.#idle.push(conversation)
      }
    }
  }

  /** A conversation that failed or whose script is done leaves the pool; else it waits for its next message. */
  #release (conversation: Conversation, ok: boolean): void {
    conversation.busy = false
    if (!ok || conversation.script.length === 0) {
      this.#open--
      if (ok) this.stats.finished++
      else this.stats.dropped++
      return
    }
    this.#idle.push(conversation)
  }

  #metadata (kind: Kind, { image, ...requests }: ImageRequests, as: 'multipart' | 'dataUri'): Planned {
    return {
      kind,
      ...requests[as],
      check: (body) => {
        const answer = parseJson(body) as { camera?: { make?: unknown }, filesize_bytes?: unknown, provenance?: { sha256?: unknown } } | undefined
        if (answer?.camera?.make !== image.make) return 'wrong camera make'
        if (answer.filesize_bytes !== image.bytes.length) return 'wrong filesize_bytes'
        if (answer.provenance?.sha256 !== image.sha256) return 'wrong sha256'
        return undefined
      },
      release: () => {}
    }
  }
}
