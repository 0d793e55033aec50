import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Locator, type Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'
import { PROJECT_ROOT } from '../support/servers.ts'

// The docs page in a real browser: Debian's Chromium (npm test installs it), driven by playwright-core, which never
// downloads a browser of its own. Its prefilled examples are executed as they are, and what the service answers is
// compared with the example the page shows.
const CHROMIUM = '/usr/bin/chromium'
// As the machine's notes say: without the background-networking flags Chromium keeps trying hosts it cannot reach.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

let t: TestApp
let base: string
let browser: Browser
let page: Page
/** Everything the page wrote to its console as an error, and every uncaught exception. */
let errors: string[]

beforeAll(async () => {
  expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: npm run test:machine installs it (npm test does)`).toBe(true)
  t = await createTestApp()
  base = await listen(t)
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
})

afterAll(async () => {
  await browser?.close()
  await t.close()
})

beforeEach(async () => {
  errors = []
  page = await browser.newPage()
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  page.on('pageerror', (error) => { errors.push(error.message) })
  await page.goto(`${base}/docs`)
  await page.waitForSelector('.opblock-summary-operation-id')
})

afterEach(async () => {
  await page.close()
  // Not one console error on the page, whatever the test did (a CSP refusal shows up here).
  expect(errors).toEqual([])
})

async function authorize (): Promise<void> {
  await page.click('button.authorize')
  await page.fill('.modal-ux input', API_KEY)
  await page.click('.modal-ux .auth-btn-wrapper button.authorize')
  await page.click('.modal-ux .auth-btn-wrapper button.btn-done')
}

/** An operation opened, with "Try it out" pressed. */
async function tryOut (id: string): Promise<Locator> {
  const operation = page.locator(`#operations-${id}`)
  await operation.locator('.opblock-summary').click()
  await operation.locator('.try-out__btn').click()
  return operation
}

/** The 200 response's example, as the page shows it. */
async function shownExample (operation: Locator): Promise<Record<string, unknown>> {
  const text = await operation.locator('table.responses-table tr.response[data-code="200"] pre.example').first().textContent()
  return JSON.parse(text ?? '') as Record<string, unknown>
}

/** Executes the operation as it stands, and returns the status and the body the page shows. */
async function execute (operation: Locator): Promise<{ status: string, body: Record<string, unknown> }> {
  await operation.locator('.execute').click()
  const status = operation.locator('.live-responses-table tr.response .response-col_status').first()
  await status.waitFor()
  const body = await operation.locator('.live-responses-table tr.response .response-col_description pre').first().textContent()
  return { status: (await status.textContent())?.trim() ?? '', body: JSON.parse(body ?? '{}') as Record<string, unknown> }
}

describe('the docs page at /docs', () => {
  it('lists the operations, served from the service alone, with no console error', async () => {
    const origins = new Set<string>()
    page.on('request', (request) => { origins.add(new URL(request.url()).origin) })
    await page.reload()
    await page.waitForSelector('.opblock-summary-operation-id')
    const operations = await page.locator('.opblock-summary-operation-id').allTextContents()
    expect(operations).toEqual(expect.arrayContaining(['sendChatMessage', 'extractMetadata', 'extractMetadataFromFile', 'getChatTranscript']))
    // Every asset came from the service: no CDN, nothing fetched from elsewhere.
    expect([...origins]).toEqual([base])
  })

  it('the chat example, executed as it is, starts a conversation and answers as the example shows', async () => {
    await authorize()
    const operation = await tryOut('chat-sendChatMessage')
    const request = JSON.parse(await operation.locator('textarea.body-param__text').inputValue()) as Record<string, unknown>
    expect(request).not.toHaveProperty('conversation_id')
    const example = await shownExample(operation)
    const { status, body } = await execute(operation)
    expect(status, JSON.stringify(body)).toBe('200')
    // The same answer but for what differs per call: the conversation id, the time, the confidence, the wording.
    expect(Object.keys(body).sort()).toEqual(Object.keys(example).sort())
    expect(body).toMatchObject({ intent: example['intent'], links: example['links'], handoff: example['handoff'] })
    expect(body['conversation_id']).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('the metadata example, a small data URI executed as it is, answers what the example shows for its photo', async () => {
    await authorize()
    const operation = await tryOut('metadata-extractMetadata')
    const example = await shownExample(operation)
    const { status, body } = await execute(operation)
    expect(status, JSON.stringify(body)).toBe('200')
    // The data URI is examples/photo.jpg at 32×24 with the photo's metadata; the example is the photo's answer.
    expect(body).toMatchObject({ camera: example['camera'], datetime: example['datetime'], gps: example['gps'], format: example['format'], resolution: { width: 32, height: 24 } })
  })

  it('the photo that comes with the project, uploaded from the page, gets exactly the example shown', async () => {
    await authorize()
    const operation = await tryOut('metadata-extractMetadataFromFile')
    await operation.locator('input[type="file"]').setInputFiles(join(PROJECT_ROOT, 'examples/photo.jpg'))
    const example = await shownExample(operation)
    const { status, body } = await execute(operation)
    expect(status, JSON.stringify(body)).toBe('200')
    expect(body).toEqual(example)
  })
})
