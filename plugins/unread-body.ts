import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply } from 'fastify'

/**
 * How long a connection closed with an answer still takes the client's bytes before it is closed whole: time for a
 * client that is still sending to read its answer (RFC 9112 §9.6, "tear-down").
 */
const LINGER_MS = 2000

/**
 * What becomes of the rest of a request's body when the answer does not wait for it: a refusal from a hook (401,
 * 404, 415, 429…) before anything read the body, or a refusal of the body itself part-way (a second file, a file
 * over the limit, a malformed part). Left alone, that rest would hold the connection: its next request waits behind
 * bytes nobody reads until the request timeout (408), and a client still sending cannot finish.
 *
 * A body whose declared length is within what its route reads at most (its `bodyLimit`) is read on and thrown
 * away, so the connection serves the next request as soon as the body has arrived. A longer one, or one of unknown
 * length (chunked), is not waited for: the answer says `Connection: close`, and the connection is closed in stages
 * once the answer is written (`closeInStages`). Called for every error answer (plugins/error-envelope.ts), before it is sent.
 */
export function settleUnreadBody (reply: FastifyReply): void {
  const request = reply.request.raw
  if (request.readableEnded || !hasBody(request)) return
  if (Number(request.headers['content-length']) <= reply.request.routeOptions.bodyLimit) {
    discardRest(request)
  } else {
    reply.header('connection', 'close')
    closeInStages(request.socket)
  }
}

/**
 * Node closes a `Connection: close` answer's socket as soon as the answer is written (`socket.destroySoon()`, which
 * its HTTP server calls for the last answer). Bytes the client is still sending then reach a closed socket, the
 * kernel answers them with a reset, and a reset can throw away the answer before the client has read it: the client
 * sees only ECONNRESET. So this socket closes in stages, as nginx's lingering close does: its sending side first,
 * after the answer; it takes nothing more (the client's sending stalls once the buffers between are full, so the
 * rest of the body is not read); and it is closed whole after `LINGER_MS`, or as soon as the client has gone.
 */
function closeInStages (socket: Socket): void {
  socket.destroySoon = () => {
    socket.pause()
    socket.end()
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref()
    socket.once('close', () => { clearTimeout(timer) })
  }
}

function hasBody (request: IncomingMessage): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length']) > 0
}

/**
 * Node's own way with a body no handler read (`IncomingMessage#_dump`, which it does only when nothing read any of
 * it): whatever reads it (a multipart parser stopped at a refused part, say) lets go, and the rest flows to nowhere.
 */
function discardRest (request: IncomingMessage): void {
  request.unpipe()
  request.removeAllListeners('data')
  request.resume()
}
