import { Type } from '@sinclair/typebox'

export const HealthStatus = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('ready')], { examples: ['ok'] })
}, { $id: 'HealthStatus', title: 'HealthStatus', description: 'A health probe\'s answer: `ok` when live, `ready` when ready' })
