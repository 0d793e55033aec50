/**
 * `npm run sdk:hey-api`: calls a running service (API_URL, by default http://localhost:3000, with the key in API_KEY)
 * through the client @hey-api/openapi-ts generated from its live OpenAPI document (`npm run sdk:generate`): a chat
 * over two turns, examples/photo.jpg's metadata as a JSON data URI and as a multipart upload, and one 4xx whose error
 * body has the type the generator gives that status. Prints what each call answered, as JSON.
 *
 * No casts, no hand-written serializer: extractMetadataFromFile (POST /v1/metadata/file) takes the file itself, and
 * the client sends it as multipart/form-data.
 */
import { readFileSync } from 'node:fs'
import { client } from './generated/hey-api/client.gen.ts'
import { extractMetadata, extractMetadataFromFile, sendChatMessage } from './generated/hey-api/sdk.gen.ts'
import type { SendChatMessageErrors } from './generated/hey-api/types.gen.ts'

const baseUrl = process.env['API_URL'] ?? 'http://localhost:3000'
const apiKey = process.env['API_KEY']
if (apiKey === undefined) {
  process.stderr.write('Set API_KEY to a key of the service (npm start logs a development key).\n')
  process.exit(2)
}
// The document's `servers` is the URL it was generated from; say where to call anyway, for another deployment.
client.setConfig({ baseUrl, auth: () => apiKey })

const first = await sendChatMessage({ body: { message: 'Where is my order?', user_id: 'customer-8812', context: { order_id: 'A-10042' } } })
if (first.data === undefined) throw new Error(`chat failed: ${first.response?.status} ${JSON.stringify(first.error)}`)
// The second turn continues the conversation: the order is remembered.
const second = await sendChatMessage({ body: { message: 'can I still cancel it?', user_id: 'customer-8812', conversation_id: first.data.conversation_id } })

const photo = readFileSync(new URL('../photo.jpg', import.meta.url))
const json = await extractMetadata({ body: { image: `data:image/jpeg;base64,${photo.toString('base64')}` } })
const file = await extractMetadataFromFile({ body: { image: new File([photo], 'photo.jpg', { type: 'image/jpeg' }) } })

// A conversation that does not exist: 404, its body typed as the generator types that status.
const unknown = await sendChatMessage({ body: { message: 'and the invoice?', user_id: 'customer-8812', conversation_id: 'no-such-conversation' } })
let notFound: SendChatMessageErrors[404] | undefined
if (unknown.response?.status === 404) notFound = unknown.error

process.stdout.write(`${JSON.stringify({
  chat: [first.data, second.data],
  json: json.data,
  file: file.data,
  error: { status: unknown.response?.status, body: notFound }
}, null, 2)}\n`)
