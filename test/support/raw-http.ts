import { once } from 'node:events'
import { connect, type Socket } from 'node:net'

/** One HTTP/1.1 answer read off a raw socket. */
export interface RawAnswer {
  status: number
  /** Header names in lower case. */
  headers: Record<string, string>
  body: string
  /** Milliseconds from the request's first byte to the answer's last. */
  ms: number
}

/**
 * What became of a request on a raw connection: its answer, or the connection closing, or nothing in time; and
 * whether its body could be sent whole (`stalled`: the server stopped taking it, and the connection stayed open).
 */
export type RawOutcome = (RawAnswer | { closed: true, ms: number } | { timedOut: true, ms: number }) & { stalled?: true }

/**
 * A client connection on a raw socket (node:net), reading answers as bytes arrive: only what HTTP/1.1 says of them,
 * no client library deciding for the test whether a connection may be reused.
 */
export class RawConnection {
  readonly #socket: Socket
  #received = Buffer.alloc(0)
  #closed = false
  #waiting: (() => void) | undefined

  private constructor (socket: Socket) {
    this.#socket = socket
    socket.on('data', (chunk: Buffer) => {
      this.#received = Buffer.concat([this.#received, chunk])
      this.#waiting?.()
    })
    const gone = (): void => {
      this.#closed = true
      this.#waiting?.()
    }
    socket.on('end', gone)
    socket.on('close', gone)
    // The server may answer and close while the body is still being written (EPIPE, ECONNRESET): the answer, if
    // any, has been read already.
    socket.on('error', gone)
  }

  static async open (port: number): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    return new RawConnection(socket)
  }

  /**
   * Sends a request (its head, then its body pieces, as fast as the socket takes them) and reads its answer, which
   * may come before the body is all sent; then waits, within the same time, for the body to be sent or refused.
   */
  async exchange (head: string, body: Buffer[] = [], timeoutMs = 5000): Promise<RawOutcome> {
    const started = performance.now()
    let sent = false
    const sending = this.#send([Buffer.from(head), ...body]).then(() => { sent = true })
    const outcome: RawOutcome = await this.#answer(started, timeoutMs)
    await Promise.race([sending, new Promise((resolve) => setTimeout(resolve, Math.max(0, started + timeoutMs - performance.now())))])
    if (!sent && !this.#closed) outcome.stalled = true
    return outcome
  }

  /** Waits for the connection to close, as a server that answered `Connection: close` must do. */
  async closed (timeoutMs = 5000): Promise<boolean> {
    const deadline = performance.now() + timeoutMs
    while (!this.#closed && performance.now() < deadline) await this.#next(deadline - performance.now())
    return this.#closed
  }

  destroy (): void {
    this.#socket.destroy()
  }

  async #send (pieces: Buffer[]): Promise<void> {
    for (const piece of pieces) {
      if (this.#closed || this.#socket.destroyed) return
      if (!this.#socket.write(piece)) {
        await Promise.race([once(this.#socket, 'drain'), once(this.#socket, 'close')]).catch(() => {})
      }
    }
  }

  async #answer (started: number, timeoutMs: number): Promise<RawOutcome> {
    const deadline = started + timeoutMs
    for (;;) {
      const answer = this.#take(started)
      if (answer !== undefined) return answer
      if (this.#closed) return { closed: true, ms: performance.now() - started }
      if (performance.now() >= deadline) return { timedOut: true, ms: performance.now() - started }
      await this.#next(deadline - performance.now())
    }
  }

  /** The first whole answer received, taken off the buffer; answers carry a Content-Length (the service's do). */
  #take (started: number): RawAnswer | undefined {
    const end = this.#received.indexOf('\r\n\r\n')
    if (end < 0) return undefined
    const [statusLine, ...lines] = this.#received.subarray(0, end).toString('latin1').split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const length = Number(headers['content-length'] ?? 0)
    if (this.#received.length < end + 4 + length) return undefined
    const body = this.#received.subarray(end + 4, end + 4 + length).toString('utf8')
    this.#received = this.#received.subarray(end + 4 + length)
    return { status: Number(statusLine!.split(' ')[1]), headers, body, ms: performance.now() - started }
  }

  async #next (timeoutMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, timeoutMs))
      this.#waiting = () => {
        clearTimeout(timer)
        this.#waiting = undefined
        resolve()
      }
    })
  }
}

export function isAnswer (outcome: RawOutcome): outcome is RawAnswer {
  return 'status' in outcome
}

/** A request head for a raw socket: `host` added, each header as given. */
export function requestHead (method: string, path: string, headers: Record<string, string | number> = {}): string {
  return `${method} ${path} HTTP/1.1\r\nhost: localhost\r\n` + Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('') + '\r\n'
}
