/**
 * Child process of metadata.bench.ts: the least an upload endpoint over the same ExifTool pool can be in Fastify.
 * The bearer check (@fastify/bearer-auth), @fastify/multipart streaming the `image` file into a scratch file, the
 * raw pool's read (MetadataExtractor.readSummary, the service's arguments, BENCH_PROCS processes), the file removed,
 * the make answered (as the service's `camera.make`); the format and whether ExifTool must size the image come in
 * the query, as the service's sniff would find them. No sniff, hash, manifest search, TIFF walk, limits, error
 * envelope, response schema, request log, security headers, rate limit, overload check or metrics: what receiving an
 * upload over HTTP costs by itself.
 */
import { randomUUID } from 'node:crypto'
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs'
import { unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pipeline } from 'node:stream/promises'
import bearerAuth from '@fastify/bearer-auth'
import multipart from '@fastify/multipart'
import Fastify from 'fastify'
import { MetadataExtractor } from '../src/metadata/extractor.ts'
import type { ImageFormat } from '../src/metadata/formats.ts'
import { serveCommands } from '../test/support/processes.ts'

const scratch = mkdtempSync(join(tmpdir(), 'bench-bare-upload-'))
const extractor = new MetadataExtractor({ procs: Number(process.env['BENCH_PROCS']), taskTimeoutMs: 10_000, maxQueue: 100_000 })
const app = Fastify()
await app.register(bearerAuth, { keys: new Set([process.env['BENCH_API_KEY'] ?? '']) })
await app.register(multipart)
app.post('/v1/metadata', async (request, reply) => {
  const { format, sized } = request.query as { format: ImageFormat, sized: string }
  const file = await request.file()
  if (file === undefined) return await reply.code(400).send({ error: 'no image' })
  const path = join(scratch, `${randomUUID()}.${format}`)
  await pipeline(file.file, createWriteStream(path, { flags: 'wx' }))
  try {
    const tags = await extractor.readSummary(path, format, sized !== '1')
    return { camera: { make: tags['IFD0:Make'] } }
  } finally {
    await unlink(path)
  }
})
await app.listen({ host: '127.0.0.1', port: 0 })
serveCommands((app.server.address() as { port: number }).port, {}, async () => {
  await app.close()
  await extractor.end()
  rmSync(scratch, { recursive: true, force: true })
})
