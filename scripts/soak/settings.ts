/** The soak's knobs: the traffic mix, the pacing, the sampling and the verdicts' limits (scripts/soak.ts says how they act). */

/**
 * The traffic mix: relative weights of each request kind (they need not sum to 100).
 * - chatNew: POST /v1/chat/send starting a conversation (sometimes with context.order_id, purchase_date, name).
 * - chatContinue: the next message of a conversation started earlier (its id sent back), scripts of 2–15 customer
 *   messages, so histories grow to 30 turns. Conversations are never sent two messages at once.
 * - transcript: GET /v1/chat/conversations/{id}?user_id= of a conversation not busy; its turns must number 2 per message sent.
 * - metadata*: POST /v1/metadata; small: 640×480 and 1024×768 JPEGs, camera: a ~2 MB 3000×2000 JPEG; multipart
 *   (the file in `image`) or a JSON data URI.
 * The pool of open conversations balances itself: a continue with no idle conversation starts one, a new one past
 *   MAX_OPEN_CONVERSATIONS continues one instead. With scripts of 8.5 messages on average, chatNew:chatContinue of
 *   9:66 keeps that rare.
 */
export const WEIGHTS = {
  chatNew: 9,
  chatContinue: 66,
  transcript: 5,
  metadataSmallMultipart: 10,
  metadataCameraMultipart: 4,
  metadataSmallDataUri: 5,
  metadataCameraDataUri: 1
} as const
export const TARGET_FRACTION = 0.7
export const DEFAULT_MINUTES = 10
export const PROBE_WARMUP_SECONDS = 5
export const PROBE_SECONDS = 20
export const PROBE_CONCURRENCY = 16
export const IN_FLIGHT_CAP = 256
export const REQUEST_TIMEOUT_MS = 10_000
export const SAMPLE_SECONDS = 10
/** The pacing timer's period; each tick starts every request due by then. */
export const TICK_MS = 5
export const MAX_OPEN_CONVERSATIONS = 500
export const MIN_MESSAGES = 2
export const MAX_MESSAGES = 15
/** Share of new conversations that send `context` with an order number on their first message. */
export const CONTEXT_SHARE = 0.4
/** Verdicts. */
export const RSS_GROWTH_LIMIT = 0.2
export const FD_GROWTH_LIMIT = 5
export const P99_GROWTH_LIMIT = 2
/** Warm-up: the RSS baseline is the first sample at or after min(this, a third of the run). */
export const WARMUP_SECONDS = 60
/** p99 is compared between the first and last window of min(this, a third of the run). */
export const P99_WINDOW_SECONDS = 60
/** Conversations in Redis expire after this: bounds what a killed run leaves behind (the run deletes them anyway). */
export const CONVERSATION_TTL_SECONDS = 3600
export const SEED = 0x50a4
/** Past this mean CPU of other processes (% of one core) the summary warns that the figures are skewed. */
export const OTHER_CPU_WARNING_PERCENT = 15

export type Kind = keyof typeof WEIGHTS
export const KINDS = Object.keys(WEIGHTS) as Kind[]
