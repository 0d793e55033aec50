import neostandard from 'neostandard'
import importX from 'eslint-plugin-import-x'

export default [
  ...neostandard({
    ts: true,
    ignores: ['node_modules/**', 'coverage/**', '.scratch/**', 'examples/sdk/generated/**']
  }),
  {
    rules: {
      // TypeBox's idiom: a schema and its Static type share one name (`const X = Type.Object(…)`, `type X = Static<…>`).
      '@typescript-eslint/no-redeclare': 'off'
    }
  },
  // One harness, test/support/, serves the tests, the bench and the scripts; they never import one another.
  ...[
    { dir: 'test', others: ['bench', 'scripts'] },
    { dir: 'bench', others: ['scripts', 'test/unit', 'test/integration'] },
    { dir: 'scripts', others: ['bench', 'test/unit', 'test/integration'] }
  ].map(({ dir, others }) => ({
    files: [`${dir}/**`],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{ group: others.map((other) => `**/${other}/**`), message: 'Share it through the harness in test/support/ instead.' }]
      }]
    }
  })),
  // No module imports one that imports it back.
  {
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: { 'import-x/extensions': ['.ts', '.js'], 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] }
  },
  // Dependencies point one way: plugins/ → schemas/ → src/. The domain in src/ knows neither Fastify nor the wire;
  // src/app.ts and src/server.ts are the composition root that puts the plugins together.
  {
    files: ['src/**'],
    ignores: ['src/app.ts', 'src/server.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', 'fastify-plugin', '@fastify/*'], message: 'The domain does not import Fastify: a plugin adapts it to HTTP.' },
          { group: ['**/plugins/**', '**/schemas/**'], message: 'src/ does not import plugins/ or the wire schemas: they import it.' }
        ]
      }]
    }
  },
  {
    files: ['src/chat/**', 'src/metadata/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['fastify', 'fastify-plugin', '@fastify/*'], message: 'The domain does not import Fastify: a plugin adapts it to HTTP.' },
          { group: ['**/plugins/**', '**/schemas/**'], message: 'src/ does not import plugins/ or the wire schemas: they import it.' },
          { group: ['**/src/config.ts', '../config.ts', '../../config.ts'], message: 'The domain takes its settings as arguments; src/config.ts reads them for the app.' }
        ]
      }]
    }
  }
]
