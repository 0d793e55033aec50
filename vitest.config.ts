import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The chat model is trained into its cache once, before the files that need it run side by side.
    globalSetup: ['test/support/global-setup.ts'],
    // Every test file builds its own app and ExifTool pool; two workers fit the two-core machines.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
