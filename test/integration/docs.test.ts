import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, createTestApp, listen, type TestApp } from '../support/app.ts'

// The docs page in a real browser: Debian's Chromium (.ci/run installs it), driven by playwright-core, which never
// downloads a browser of its own.
const CHROMIUM = '/usr/bin/chromium'
// As the machine's notes say: without the background-networking flags Chromium keeps trying hosts it cannot reach.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

describe('the docs page at /docs', () => {
  let t: TestApp
  let base: string
  let browser: Browser

  beforeAll(async () => {
    expect(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`).toBe(true)
    t = await createTestApp()
    base = await listen(t)
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS })
  })

  afterAll(async () => {
    await browser?.close()
    await t.close()
  })

  it('lists both operations, served from the service alone, and a call made from it with a key succeeds', async () => {
    const page = await browser.newPage()
    const origins = new Set<string>()
    page.on('request', (request) => { origins.add(new URL(request.url()).origin) })
    await page.goto(`${base}/docs`)
    await page.waitForSelector('.opblock-summary-operation-id')
    const operations = await page.locator('.opblock-summary-operation-id').allTextContents()
    expect(operations).toEqual(expect.arrayContaining(['sendChatMessage', 'extractMetadata', 'getChatTranscript']))
    // Every asset came from the service: no CDN, nothing fetched from elsewhere.
    expect([...origins]).toEqual([base])

    await page.click('button.authorize')
    await page.fill('.modal-ux input', API_KEY)
    await page.click('.modal-ux .auth-btn-wrapper button.authorize')
    await page.click('.modal-ux .auth-btn-wrapper button.btn-done')

    const operation = page.locator('#operations-chat-sendChatMessage')
    await operation.locator('.opblock-summary').click()
    await operation.locator('.try-out__btn').click()
    await operation.locator('textarea.body-param__text').fill(JSON.stringify({ message: 'where is order A-10042?', user_id: 'docs-user' }))
    await operation.locator('.execute').click()
    const status = operation.locator('.live-responses-table tr.response .response-col_status').first()
    await status.waitFor()
    expect((await status.textContent())?.trim()).toBe('200')
    const body = await operation.locator('.live-responses-table tr.response .response-col_description pre').first().textContent()
    expect(JSON.parse(body ?? '{}')).toMatchObject({ intent: 'track_order', links: [{ url: 'https://shop.example.com/orders/A-10042/tracking' }] })
    await page.close()
  })
})
