/**
 * `npm run sdk:openapi-fetch`: calls a running service (API_URL, by default http://localhost:3000, with the key in
 * API_KEY) through openapi-fetch, with the types openapi-typescript generated from its live OpenAPI document
 * (`npm run sdk:generate`): a chat over two turns, examples/photo.jpg's metadata as a JSON data URI and as a multipart
 * upload, and one 4xx whose error body has the type the document gives that status. Prints what each call answered,
 * as JSON.
 *
 * No casts, no hand-written serializer: the multipart body is a FormData with the file in `image`, which openapi-fetch
 * sends as it is.
 */
import { readFileSync } from 'node:fs'
import createClient from 'openapi-fetch'
import type { paths } from './generated/openapi-typescript.ts'

type ChatErrors = paths['/v1/chat/send']['post']['responses']

const baseUrl = process.env['API_URL'] ?? 'http://localhost:3000'
const apiKey = process.env['API_KEY']
if (apiKey === undefined) {
  process.stderr.write('Set API_KEY to a key of the service (npm start logs a development key).\n')
  process.exit(2)
}
const client = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${apiKey}` } })

const first = await client.POST('/v1/chat/send', {
  body: { message: 'Where is my order?', user_id: 'customer-8812', context: { order_id: 'A-10042' } }
})
if (first.data === undefined) throw new Error(`chat failed: ${first.response.status} ${JSON.stringify(first.error)}`)
// The second turn continues the conversation: the order is remembered.
const second = await client.POST('/v1/chat/send', {
  body: { message: 'can I still cancel it?', user_id: 'customer-8812', conversation_id: first.data.conversation_id }
})

const photo = readFileSync(new URL('../photo.jpg', import.meta.url))
const json = await client.POST('/v1/metadata', { body: { image: `data:image/jpeg;base64,${photo.toString('base64')}` } })
const form = new FormData()
form.append('image', new Blob([photo], { type: 'image/jpeg' }), 'photo.jpg')
const file = await client.POST('/v1/metadata', { body: form })

// A conversation that does not exist: 404, its body typed as the document types that status.
const unknown = await client.POST('/v1/chat/send', {
  body: { message: 'and the invoice?', user_id: 'customer-8812', conversation_id: 'no-such-conversation' }
})
let notFound: ChatErrors[404]['content']['application/json'] | undefined
if (unknown.response.status === 404) notFound = unknown.error

process.stdout.write(`${JSON.stringify({
  chat: [first.data, second.data],
  json: json.data,
  file: file.data,
  error: { status: unknown.response.status, body: notFound }
}, null, 2)}\n`)
