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
  }
]
