import neostandard from 'neostandard'

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
  }))
]
