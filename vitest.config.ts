import { globSync } from 'node:fs'
import { defineConfig } from 'vitest/config'

// A test is selected by its folder: one anywhere else would silently never run.
const stray = globSync('test/**/*.test.ts', { cwd: import.meta.dirname }).filter((path) => !/^test\/(?:unit|integration)\//.test(path))
if (stray.length > 0) throw new Error(`Move these into test/unit/ or test/integration/: ${stray.join(', ')}`)

export default defineConfig({
  test: {
    // Both projects share the workers: two fit the two-core machines.
    maxWorkers: 2,
    // Room for a loaded machine: the model-cache unit tests train small models, 2 s alone but 8 s beside the
    // integration tests under coverage.
    testTimeout: 30_000,
    // On with `--coverage` (npm test): the service's own code, including files no test loads. The whole suite measured
    // 94.9% statements, 88.2% branches, 96.8% functions, 96.3% lines (2026-11); the floors sit well below, to catch a
    // real drop, not the noise of timing-dependent paths.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts', 'plugins/**/*.ts', 'schemas/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
      thresholds: { statements: 90, branches: 82, functions: 90, lines: 90 }
    },
    projects: [
      {
        extends: true,
        test: {
          // Plain modules on their own: no ExifTool, Redis, child process, server or trained chat model.
          name: 'unit',
          include: ['test/unit/**/*.test.ts']
        }
      },
      {
        extends: true,
        test: {
          // The service's real parts: ExifTool, Redis, servers, child processes, the trained chat model.
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // The chat model is trained into its cache once, before the files that need it run side by side.
          globalSetup: ['test/support/global-setup.ts'],
          // Every test file builds its own app and ExifTool pool, in a process of its own.
          pool: 'forks',
          hookTimeout: 60_000
        }
      }
    ]
  }
})
