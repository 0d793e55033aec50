import { Type } from '@sinclair/typebox'
import { StringEnum } from './string-enum.ts'

export const HealthStatus = Type.Object({
  status: StringEnum(['ok', 'ready'], { examples: ['ok'] })
}, { $id: 'HealthStatus', title: 'HealthStatus', description: 'A health probe\'s answer: `ok` when live, `ready` when ready' })
