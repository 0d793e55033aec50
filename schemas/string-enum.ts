import { Type, type SchemaOptions, type TUnsafe } from '@sinclair/typebox'

/**
 * A string that is one of `values`, as a plain JSON Schema `enum`: what OpenAPI SDK generators turn into an enum
 * type (TypeBox's union of literals reaches them as an `anyOf` of one-value enums).
 */
export function StringEnum<const Values extends readonly string[]> (values: Values, options: SchemaOptions = {}): TUnsafe<Values[number]> {
  return Type.Unsafe<Values[number]>({ ...options, type: 'string', enum: [...values] })
}
