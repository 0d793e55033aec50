import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'

// Messages built to make backtracking patterns, spelling candidates or per-word caches explode. Each is the largest
// message the API takes (4,000 characters) and must be answered quickly over real HTTP while the event loop stays
// free for the health probe.
const LENGTH = 4000
const fill = (unit: string, prefix = ''): string => (prefix + unit.repeat(LENGTH)).slice(0, LENGTH)

const HOSTILE: Array<[string, string]> = [
  ...['order', 'purchase', 'invoice', 'ref', 'reference', 'ORDER'].flatMap((keyword): Array<[string, string]> => [
    [`spaces after "${keyword}"`, fill(' ', keyword)],
    [`tabs and newlines after "${keyword}"`, fill('\t\n ', keyword)],
    [`spaces after "${keyword} number"`, fill(' ', `${keyword} number`).slice(0, LENGTH - 1) + 'x']
  ]),
  ['digits', fill('1')],
  ['digits then a letter', fill('7').slice(0, LENGTH - 1) + 'x'],
  ['"#" signs', fill('#')],
  ['"#" and spaces', fill('# ')],
  ['repeated keywords', fill('order ')],
  ['keywords and labels', fill('order number no # id ')],
  ['one long word', fill('a')],
  ['one long word of two letters', fill('ab')],
  ['letters repeated for emphasis', fill('e', 'pl').slice(0, LENGTH - 3) + 'ase'],
  ['a long code', fill('a1-')],
  ['dots, as in an e-mail address', fill('a.')],
  ['at signs', fill('a@')],
  ['a local part with no domain', fill('x').slice(0, LENGTH - 1) + '@'],
  ['dashes and digits', fill('1-')],
  ['slashes and digits', fill('1/')],
  ['currency signs', fill('$1')],
  ['apostrophes', fill("n't ")],
  ['censoring marks', fill('f*')],
  ['a URL', fill('a', 'https://')],
  ['mixed', fill('order # 1 a- x@y. $ 12/ ')],
  ['numeric dates', fill('10/08 ')],
  ['slashes and dots between digits', fill('1/2.3-')],
  ['relative dates', fill('3 days ago and ')],
  ['date words', fill('last week yesterday the 8th ')],
  ['months and days', fill('may march mon the 1st of ')],
  ['spaces inside a relative date', fill(' ', '3 days').slice(0, LENGTH - 3) + 'ago'],
  ['unicode letters', fill('é')],
  ['combining marks', fill('e\u0301')]
]

describe('hostile chat text', () => {
  let t: TestApp
  let base: string

  beforeAll(async () => {
    t = await createTestApp()
    base = await listen(t)
  })

  afterAll(async () => { await t.close() })

  async function timed (request: () => Promise<Response>): Promise<{ status: number, ms: number }> {
    const start = performance.now()
    const response = await request()
    await response.arrayBuffer()
    return { status: response.status, ms: performance.now() - start }
  }

  it.each(HOSTILE)('%s: answered in under 50 ms, with /health/live answering meanwhile', async (_name, message) => {
    expect(message.length).toBe(LENGTH)
    const chat = (): Promise<Response> => fetch(`${base}/v1/chat/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message, user_id: 'hostile-1' })
    })
    const live = (): Promise<Response> => fetch(`${base}/health/live`)
    // The best of three: one slow round trip can be the machine; a pattern that backtracks is slow every time.
    const rounds = []
    for (let round = 0; round < 3; round++) rounds.push(await Promise.all([timed(chat), timed(live)]))
    for (const [sent, probed] of rounds) {
      expect(sent.status).toBe(200)
      expect(probed.status).toBe(200)
    }
    expect(Math.min(...rounds.map(([sent]) => sent.ms))).toBeLessThan(50)
    expect(Math.min(...rounds.map(([, probed]) => probed.ms))).toBeLessThan(50)
  })
})
