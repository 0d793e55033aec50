import { readFileSync } from 'node:fs'
import { parse } from 'csv-parse/sync'
import type { ChatService } from '../chat-service.ts'
import { DialoguePolicy } from '../dialogue/policy.ts'
import type { DomainPack } from '../domain-pack/schema.ts'

/** One held-out question and the id of the answer it should get (`npm run eval` reads them from CSV). */
export interface LabelledQuestion {
  question: string
  answer: string
}

/** Whether a CSV file is one of questions (`question`, `answer` columns) rather than labelled messages. */
export function isQuestionFile (path: string): boolean {
  const header = readFileSync(path, 'utf8').split('\n', 1)[0]!.replace(/^\uFEFF/, '').toLowerCase()
  const columns = header.split(',').map((column) => column.trim().replace(/^"|"$/g, ''))
  return columns.includes('question') && columns.includes('answer')
}

export function readLabelledQuestions (path: string): LabelledQuestion[] {
  const records = parse(readFileSync(path), { columns: true, skip_empty_lines: true, bom: true, trim: true }) as Array<Record<string, string>>
  const first = records[0]
  if (first === undefined || !('question' in first) || !('answer' in first)) {
    throw new Error(`${path}: needs a header row with the columns question and answer`)
  }
  return records.map((record) => ({ question: record['question'] ?? '', answer: record['answer'] ?? '' }))
}

export interface AnswerScores {
  count: number
  /** Questions with an id the pack does not have (counted as wrong). */
  unknown: string[]
  /** Asked as a first message: the answer the assistant gives is the expected one. */
  accuracy: number
  /** The selector alone, among the answers of the expected answer's requests (the intent taken as right). */
  withinRequest: number
  /** Asked as a first message, no answer was given (the request's own reply instead). */
  unanswered: number
  /** Misses, most frequent first: expected → given ("-" for the request's own reply). */
  confusions: Array<{ expected: string, given: string, count: number }>
}

/**
 * Answer selection on held-out questions, each asked as the first message of a conversation with no context: the
 * answer the assistant gives, as the chat service decides it, and the selector's pick among the answers of the
 * expected answer's requests.
 */
export function scoreAnswers (questions: readonly LabelledQuestion[], chat: ChatService, pack: DomainPack, today: string): AnswerScores {
  const policy = new DialoguePolicy(pack)
  const known = new Map(pack.answers.map((answer) => [answer.id, answer]))
  let right = 0
  let within = 0
  let unanswered = 0
  const confusions = new Map<string, number>()
  for (const { question, answer: expected } of questions) {
    const { understanding, reading } = chat.read(question, today)
    const given = policy.decide({ facts: {}, misunderstoodInARow: 0 }, understanding, {}, today, reading).answer?.id
    if (given === expected) right++
    else confusions.set(`${expected}\t${given ?? '-'}`, (confusions.get(`${expected}\t${given ?? '-'}`) ?? 0) + 1)
    if (given === undefined) unanswered++
    const answer = known.get(expected)
    if (answer !== undefined && reading.answers?.best(new Set(answer.intents))?.answer?.id === expected) within++
  }
  const share = (part: number): number => questions.length === 0 ? Number.NaN : part / questions.length
  return {
    count: questions.length,
    unknown: [...new Set(questions.map((question) => question.answer).filter((id) => !known.has(id)))],
    accuracy: share(right),
    withinRequest: share(within),
    unanswered: share(unanswered),
    confusions: [...confusions].map(([pair, count]) => {
      const [expected, given] = pair.split('\t') as [string, string]
      return { expected, given, count }
    }).sort((a, b) => b.count - a.count)
  }
}
