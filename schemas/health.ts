import { Type } from '@sinclair/typebox'

export const HealthStatus = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('ready')], { examples: ['ok'] })
}, { $id: 'HealthStatus', title: 'HealthStatus' })
