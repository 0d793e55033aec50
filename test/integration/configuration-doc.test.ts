import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EnvSchema } from '../../src/config.ts'
import { runProcess } from '../support/processes.ts'
import { PROJECT_ROOT } from '../support/servers.ts'

// docs/configuration.md is generated from the env schema (npm run docs:config); this fails when either changed alone.
let dir: string

beforeAll(async () => { dir = await mkdtemp(join(tmpdir(), 'chat-metadata-api-config-doc-')) })
afterAll(async () => { await rm(dir, { recursive: true, force: true }) })

describe('docs/configuration.md', () => {
  it('is what npm run docs:config writes from src/config.ts', async () => {
    const generated = join(dir, 'configuration.md')
    const result = await runProcess(process.execPath, ['scripts/configuration-doc.ts', generated], { cwd: PROJECT_ROOT, env: { PATH: process.env['PATH'] }, timeoutMs: 30_000 })
    expect(result.exitCode, result.stderr).toBe(0)
    const committed = await readFile(join(PROJECT_ROOT, 'docs/configuration.md'), 'utf8')
    expect(committed, 'docs/configuration.md differs from the schema in src/config.ts: run npm run docs:config').toBe(await readFile(generated, 'utf8'))
  })

  it('documents every variable the service reads, each with its own description', async () => {
    const doc = await readFile(join(PROJECT_ROOT, 'docs/configuration.md'), 'utf8')
    for (const [name, schema] of Object.entries(EnvSchema.properties)) {
      expect((schema as { description?: string }).description, name).toMatch(/\S{3}/)
      expect(doc, name).toContain(`| \`${name}\` |`)
    }
  })

  it('the README\'s configuration essentials name only variables the service reads, with their defaults', async () => {
    const readme = await readFile(join(PROJECT_ROOT, 'README.md'), 'utf8')
    const start = readme.indexOf('## Configuration')
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
    const rows = [...section.matchAll(/^\| (`[A-Z_]+`(?:, `[A-Z_]+`)*) \| ([^|]+) \|/gm)]
    expect(rows.length).toBeGreaterThan(5)
    const properties = EnvSchema.properties as Record<string, { default?: unknown }>
    for (const [, names, defaults] of rows) {
      const variables = [...names!.matchAll(/`([A-Z_]+)`/g)].map((match) => match[1]!)
      const shown = defaults!.trim() === '—' ? variables.map(() => undefined) : [...defaults!.matchAll(/`([^`]+)`/g)].map((match) => match[1])
      variables.forEach((name, index) => {
        expect(properties, name).toHaveProperty(name)
        expect(shown[index], `${name}'s default in the README`).toBe(properties[name]!.default === undefined ? undefined : String(properties[name]!.default))
      })
    }
  })
})
