import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import sharp from 'sharp'
import { runProcess } from '../support/processes.ts'
import { PROJECT_ROOT, startService, stopService, type ServiceProcess } from '../support/servers.ts'

// The README's quick-start commands, run as written (with bash and curl, from the project's directory) against a
// real service, and their output compared with the JSON the README shows after them.
const KEY = 'readme-key-9a2c'

interface Example { command: string, expected: Record<string, unknown> }

/** Each ```sh block with a curl command in the quick start, with the ```json block that follows it. */
function quickStartExamples (readme: string): Example[] {
  const start = readme.indexOf('## Quick start')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((match) => ({ language: match[1]!, text: match[2]! }))
  const examples: Example[] = []
  let waiting: string[] = []
  for (const block of blocks) {
    if (block.language === 'sh' && block.text.includes('curl')) waiting.push(block.text)
    if (block.language === 'json' && waiting.length > 0) {
      for (const command of waiting) examples.push({ command, expected: JSON.parse(block.text) as Record<string, unknown> })
      waiting = []
    }
  }
  return examples
}

describe('the README\'s quick start', () => {
  let service: ServiceProcess
  let examples: Example[]
  let dir: string

  beforeAll(async () => {
    examples = quickStartExamples(await readFile(join(PROJECT_ROOT, 'README.md'), 'utf8'))
    service = await startService({ API_KEYS: KEY })
    dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-readme-'))
  })

  afterAll(async () => {
    await stopService(service)
    await rm(dir, { recursive: true, force: true })
  })

  async function run (command: string): Promise<Record<string, unknown>> {
    const script = command.replaceAll('http://localhost:3000', `http://127.0.0.1:${service.port}`)
    const result = await runProcess('bash', ['-euo', 'pipefail', '-c', script], { cwd: PROJECT_ROOT, env: { PATH: process.env['PATH'], KEY }, timeoutMs: 60_000 })
    expect(result.exitCode, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as Record<string, unknown>
  }

  it('has the metadata commands (multipart and JSON) and the chat command, each followed by its output', () => {
    expect(examples.map((example) => /chat\/send/.test(example.command) ? 'chat' : /-F image=/.test(example.command) ? 'multipart' : 'json'))
      .toEqual(['multipart', 'json', 'chat'])
  })

  it('prints exactly the metadata shown, from examples/photo.jpg, both ways', async () => {
    for (const example of examples.filter((candidate) => candidate.command.includes('/v1/metadata'))) {
      expect(await run(example.command), example.command).toEqual(example.expected)
    }
  })

  it('sends a photo larger than a command line takes as a JSON data URI with the same command', async () => {
    const json = examples.find((example) => example.command.includes('--data-binary @-'))!
    // Noise does not compress: about 2 MB of JPEG, whose base64 no command line takes (ARG_MAX is per argument too).
    const large = await sharp(randomBytes(1500 * 1000 * 3), { raw: { width: 1500, height: 1000, channels: 3 } }).jpeg({ quality: 95 }).toBuffer()
    expect(large.length).toBeGreaterThan(1024 * 1024)
    await writeFile(join(dir, 'large.jpg'), large)
    const described = await run(json.command.replaceAll('examples/photo.jpg', join(dir, 'large.jpg')))
    expect(described).toMatchObject({ format: 'jpeg', resolution: { width: 1500, height: 1000 }, filesize_bytes: large.length })
  })

  it('prints the chat reply shown (but for its ids, time, confidence and the template picked)', async () => {
    const chat = examples.find((example) => example.command.includes('/v1/chat/send'))!
    const reply = await run(chat.command)
    const { expected } = chat
    expect(Object.keys(reply).sort()).toEqual(Object.keys(expected).sort())
    expect(reply).toMatchObject({ intent: expected['intent'], links: expected['links'], handoff: expected['handoff'] })
    expect(reply['conversation_id']).toMatch(/^[0-9a-f-]{36}$/)
    expect(reply['timestamp']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(reply['confidence']).toBeGreaterThan(0.5)
    expect(reply['reply']).toContain('https://shop.example.com/orders/A-10042/tracking')
  })
})

describe('docs/chat.md\'s evaluation commands', () => {
  /** Every line of the ```sh blocks under "## Evaluation", without its comment. */
  async function commands (): Promise<string[]> {
    const doc = await readFile(join(PROJECT_ROOT, 'docs/chat.md'), 'utf8')
    const start = doc.indexOf('## Evaluation')
    const section = doc.slice(start, doc.indexOf('\n## ', start + 1))
    return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) => match[1]!.split('\n'))
      .map((line) => line.replace(/\s+#.*$/, '').trim()).filter((line) => line.length > 0)
  }

  it('run as written, each exiting 0 with its report', async () => {
    const lines = await commands()
    expect(lines).toEqual(['npm run eval -- test/fixtures/heldout-support-b.csv test/fixtures/heldout-oos-b.csv', 'npm run eval:stories', 'npm run eval:stories -- dates.yaml', 'npm run eval:stories -- test/fixtures/conversations-dev.yaml'])
    for (const command of lines) {
      const result = await runProcess('bash', ['-euo', 'pipefail', '-c', command], { cwd: PROJECT_ROOT, env: { PATH: process.env['PATH'], HOME: process.env['HOME'] }, timeoutMs: 300_000 })
      expect(result.exitCode, `${command}\n${result.stdout}\n${result.stderr}`).toBe(0)
      expect(result.stdout, command).toMatch(command.includes('stories') ? /stories \d+\/\d+ passed/ : /accuracy/i)
    }
  }, 600_000)
})
