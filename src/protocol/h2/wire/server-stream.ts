/**
 * One stream of prx's own HTTP/2 server session, shaped like the subset of node's ServerHttp2Stream
 * the h2 router uses: the request body as a paused readable ('data', 'trailers', 'end'; credit goes
 * back to the client only as data is emitted, so a paused reader holds the client at its window),
 * and the response as respond / write / end / sendTrailers against both send windows.
 *
 * Events: 'data' (Buffer), 'trailers' (H2Fields, just before 'end'), 'end', 'drain',
 * 'wantTrailers', and 'close' once, last: after both sides sent END_STREAM (and 'end' was emitted),
 * or after a reset either way or a connection failure (rstCode then says why). No 'error' event.
 */
import { EventEmitter } from 'node:events';
import type { OutgoingHttpHeaders } from 'node:http2';
import type { Socket } from 'node:net';
import { H2Code, H2HeadersSentError, H2InvalidStatusError } from '../errors.js';
import type { H2Fields } from './client-stream.js';
import { requestFields, trailerFields } from './fields.js';

export type { H2Fields } from './client-stream.js';

/** What a stream shows of its session (node's `stream.session`, as far as the router reads it). */
export interface H2ServerSessionView {
  /** The client's socket (a TLSSocket on TLS: the peer certificate is read from it). */
  readonly socket: Socket;
  readonly closed: boolean;
  readonly destroyed: boolean;
  close(): void;
  destroy(): void;
}

/** What a stream needs of its session. */
export interface ServerStreamOwner {
  /** Sends a response head or trailers (alternating names and values). */
  sendHeaders(stream: H2ServerStream, fields: string[], endStream: boolean): void;
  /** Sends what the stream's windows, the connection's and the socket allow. */
  pump(stream: H2ServerStream): void;
  /** Returns receive credit for `bytes` the reader took. */
  credit(stream: H2ServerStream, bytes: number): void;
  /** RST_STREAM with `code`; the stream closes. */
  resetStream(stream: H2ServerStream, code: number): void;
}

/** Queued response bytes above which write() returns false; 'drain' once below the low mark. */
const HIGH_WATER_BYTES = 64 * 1024;
export const LOW_WATER_BYTES = 16 * 1024;

export interface RespondOptions {
  readonly endStream?: boolean;
  readonly waitForTrailers?: boolean;
}

export class H2ServerStream extends EventEmitter {
  readonly id: number;
  readonly session: H2ServerSessionView;
  readonly #owner: ServerStreamOwner;
  /** The RST_STREAM code sent or received, or the connection's failure code. */
  rstCode: number | undefined;
  /** Over on the wire (both ends, or reset): nothing more is sent or taken. */
  closed = false;
  headersSent = false;
  /** The response head as sent (with its ':status'). */
  sentHeaders: OutgoingHttpHeaders | undefined;
  /** END_STREAM sent (the response is complete). */
  writableFinished = false;
  /** 'end' was emitted. */
  readableEnded = false;
  /** A HEAD request: its response never has content. */
  readonly headRequest: boolean;

  // ---- the session's ------------------------------------------------------------------------
  /** Response bytes waiting for flow control; END_STREAM (or trailers) follows them once `endQueued`. */
  readonly queue: Buffer[] = [];
  queuedBytes = 0;
  endQueued = false;
  waitForTrailers = false;
  /** Trailers to send after the queue (an empty list ends with an empty DATA frame instead). */
  trailers: string[] | undefined;
  wantTrailersAsked = false;
  needsDrain = false;
  /** The 'drain' asked for waits for an empty queue, not just the low-water mark (see awaitSent). */
  drainWhenEmpty = false;
  sendWindow: number;
  recvWindow: number;
  /** Credit taken by the reader and not yet returned. */
  unreturned = 0;
  /** END_STREAM received. */
  remoteClosed = false;
  /** The request's content-length (-1: none) and its DATA so far. */
  expectedBytes = -1;
  receivedBytes = 0;

  /** Request bytes not yet emitted, and the request's trailers until 'end'. */
  #inbox: Buffer[] = [];
  #requestTrailers: H2Fields | undefined;
  #flowing = false;
  #everResumed = false;
  #flowScheduled = false;
  #closeEmitted = false;

  constructor(owner: ServerStreamOwner & H2ServerSessionView, id: number, sendWindow: number, recvWindow: number, headRequest: boolean) {
    super();
    this.#owner = owner;
    this.session = owner;
    this.id = id;
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
    this.headRequest = headRequest;
  }

  /** Like node's: the stream is over and cannot be used (here the same as `closed`). */
  get destroyed(): boolean {
    return this.closed;
  }

  // ---- the request body ---------------------------------------------------------------------

  pause(): this {
    this.#flowing = false;
    return this;
  }

  /** Emits what is buffered (on the next tick, as node does), then data as it arrives. */
  resume(): this {
    this.#flowing = true;
    this.#everResumed = true;
    this.#scheduleFlow();
    return this;
  }

  #scheduleFlow(): void {
    if (this.#flowScheduled || this.readableEnded || (this.#inbox.length === 0 && !this.remoteClosed)) return;
    this.#flowScheduled = true;
    process.nextTick(flow, this);
  }

  /** Request bytes arrived (the session's). */
  received(chunk: Buffer): void {
    if (this.#flowing && this.#inbox.length === 0) {
      this.emit('data', chunk);
      if (!this.closed) this.#owner.credit(this, chunk.length);
    } else this.#inbox.push(chunk);
  }

  /** The request ended, with its trailers if any (the session's). */
  remoteEnded(trailers: H2Fields | undefined): void {
    this.remoteClosed = true;
    this.#requestTrailers = trailers;
    if (this.#flowing) this.flow();
  }

  /** Emits buffered data while flowing; then 'trailers' and 'end' once the request is over. */
  flow(): void {
    this.#flowScheduled = false;
    const inbox = this.#inbox;
    while (this.#flowing && inbox.length > 0 && !(this.closed && this.rstCode !== undefined)) {
      const chunk = inbox.shift() as Buffer;
      this.emit('data', chunk);
      if (!this.closed) this.#owner.credit(this, chunk.length);
    }
    if (inbox.length > 0 || !this.remoteClosed || this.readableEnded || (this.closed && this.rstCode !== undefined)) return;
    this.readableEnded = true;
    const t = this.#requestTrailers;
    this.#requestTrailers = undefined;
    if (t !== undefined) this.emit('trailers', t);
    this.emit('end');
    this.#maybeEmitClose();
  }

  // ---- the response -------------------------------------------------------------------------

  /**
   * Sends the response head. `:status` (a number or string, 200-599) defaults to 200; array values
   * are repeated fields. As node does, a HEAD request's response and 204, 205 and 304 end with
   * their head. A no-op on a closed stream; throws when the head was already sent.
   */
  respond(headers: OutgoingHttpHeaders = {}, opts?: RespondOptions): void {
    if (this.closed) return;
    if (this.headersSent) throw new H2HeadersSentError(this.id);
    const raw = headers[':status'];
    const status = raw === undefined ? 200 : typeof raw === 'number' ? raw : Number(raw);
    if (!Number.isInteger(status) || status < 200 || status > 599) throw new H2InvalidStatusError(raw);
    const fields = requestFields(headers);
    if (raw === undefined) {
      headers[':status'] = 200;
      fields.unshift(':status', '200');
    }
    const endStream = opts?.endStream === true || this.headRequest || status === 204 || status === 205 || status === 304;
    this.headersSent = true;
    this.sentHeaders = headers;
    this.waitForTrailers = !endStream && opts?.waitForTrailers === true;
    if (endStream) {
      this.endQueued = true;
      this.queue.length = 0;
      this.queuedBytes = 0;
    }
    this.#owner.sendHeaders(this, fields, endStream);
  }

  /** Queues response bytes (responding 200 first if no head was sent); false past the high-water mark, then 'drain'. */
  write(chunk: Buffer): boolean {
    if (this.closed || this.endQueued) return false;
    if (!this.headersSent) {
      this.respond();
      // A HEAD request's response ends with its head.
      if (this.endQueued) return false;
    }
    if (chunk.length > 0) {
      this.queue.push(chunk);
      this.queuedBytes += chunk.length;
      this.#owner.pump(this);
    }
    if (this.queuedBytes < HIGH_WATER_BYTES) return true;
    this.needsDrain = true;
    return false;
  }

  /**
   * True when every response byte queued so far has been handed to the connection; otherwise
   * false, and one 'drain' follows once they all have. For senders that keep one message in flight.
   */
  awaitSent(): boolean {
    if (this.queuedBytes === 0 || this.closed) return true;
    this.needsDrain = true;
    this.drainWhenEmpty = true;
    return false;
  }

  /** Ends the response after `chunk`; with waitForTrailers, 'wantTrailers' follows once the body is sent. */
  end(chunk?: Buffer): void {
    if (this.closed || this.endQueued) return;
    if (chunk !== undefined) this.write(chunk);
    else if (!this.headersSent) this.respond();
    if (this.endQueued) return;
    this.endQueued = true;
    this.#owner.pump(this);
  }

  /**
   * Ends the response with trailers (END_STREAM on them; none at all: an empty DATA frame). Meant
   * for 'wantTrailers'; called earlier it ends the body and the trailers follow it (node throws).
   */
  sendTrailers(headers: OutgoingHttpHeaders): void {
    if (this.closed || this.writableFinished || this.trailers !== undefined) return;
    if (!this.headersSent) this.respond();
    if (this.writableFinished) return;
    this.trailers = trailerFields(headers);
    this.endQueued = true;
    this.#owner.pump(this);
  }

  /** Resets the stream with RST_STREAM(code) unless it is already closed. */
  close(code: number = H2Code.NO_ERROR): void {
    if (this.closed) return;
    this.#owner.resetStream(this, code);
  }

  // ---- ends (the session's) -----------------------------------------------------------------

  /** The send queue went below the low-water mark after write() returned false. */
  drained(): void {
    this.needsDrain = false;
    this.drainWhenEmpty = false;
    process.nextTick(emitDrain, this);
  }

  /** The body is sent and trailers are wanted (emitted on the next tick; with no listener, the response simply ends). */
  askTrailers(): void {
    this.wantTrailersAsked = true;
    process.nextTick(emitWantTrailers, this);
  }

  /**
   * Closed on the wire. Reset (rstCode set): buffered request bytes are dropped and 'close'
   * follows. Both ends done: 'close' follows 'end'; a request body nobody started reading is
   * let flow (to whoever listens) so it ends, as node does.
   */
  finish(): void {
    this.closed = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    if (this.rstCode !== undefined) {
      this.#inbox.length = 0;
      this.#maybeEmitClose();
      return;
    }
    if (!this.readableEnded && !this.#everResumed) this.resume();
    this.#maybeEmitClose();
  }

  #maybeEmitClose(): void {
    if (!this.closed || this.#closeEmitted || (this.rstCode === undefined && !this.readableEnded)) return;
    this.#closeEmitted = true;
    process.nextTick(emitClose, this);
  }
}

function flow(s: H2ServerStream): void {
  s.flow();
}

function emitDrain(s: H2ServerStream): void {
  if (!s.closed) s.emit('drain');
}

function emitWantTrailers(s: H2ServerStream): void {
  if (s.closed || s.trailers !== undefined) return;
  if (!s.emit('wantTrailers')) s.sendTrailers({});
}

function emitClose(s: H2ServerStream): void {
  s.emit('close');
}
