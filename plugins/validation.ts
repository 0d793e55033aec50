import { AjvCompiler, type ValidatorFactory } from '@fastify/ajv-compiler'
import type { Ajv } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'

type ExternalSchemas = Parameters<ReturnType<typeof AjvCompiler>>[0]

/** OpenAPI's `format: binary` marks the multipart file: it documents the body, whose route checks the file itself. */
const plugins = [(ajv: Ajv) => ajv.addFormat('binary', true)]
const compilers = AjvCompiler()

/**
 * The one ajv configuration of the service, given to Fastify as `schemaController.compilersFactory.buildValidator`
 * (src/app.ts), and to the metadata routes for the body they validate themselves. A body is taken as sent:
 * `"message": 123` or `"image": ["data:…"]` is a 400, never coerced into a string. A query string, path parameters
 * and headers are text by nature, and are read as the types their schemas give (`?full=true` is the boolean true).
 * Everything else is Fastify's default (@fastify/ajv-compiler's).
 */
export function buildValidator (externalSchemas: unknown): FastifySchemaCompiler<unknown> {
  const schemas = externalSchemas as ExternalSchemas
  const asSent = compilers(schemas, { customOptions: { coerceTypes: false }, plugins }) as unknown as FastifySchemaCompiler<unknown>
  const coercing = compilers(schemas, { customOptions: {}, plugins }) as unknown as FastifySchemaCompiler<unknown>
  return (route) => route.httpPart === 'body' ? asSent(route) : coercing(route)
}

/**
 * For Fastify's `schemaController` option. @fastify/ajv-compiler's types describe the compiler it returns as ajv's own
 * `compile`; Fastify calls it, as this one, with a route's schema definition.
 */
export const compilersFactory = { buildValidator: buildValidator as unknown as ValidatorFactory }
