/**
 * One inbound HTTP/1.1 connection of the router's own server (server.ts). It reads a request
 * head, hands the request to the server's callbacks, decodes the body (Content-Length or chunked)
 * into it with backpressure, and reads the next request only once the response is out: pipelined
 * requests wait in the buffer, which stops the socket when it grows. An `Upgrade` request is an
 * ordinary request until its answer is a 101, which takes the socket (InboundResponse.takeSocket).
 *
 * Timeouts use the socket's one idle timer, re-armed only when the connection changes phase: the
 * keep-alive idle time between requests, the head's deadline while a head arrives in pieces, the
 * body's idle time while a body is awaited. A client that ends its side after a complete request
 * and before its answer is all out has given up (as nginx reads it): the connection is closed and
 * the response's owner hears of a cut-off response, which cancels the upstream work.
 */
import type { Socket } from 'node:net';
import {
  HeadersTimeoutError,
  MalformedRequestError,
  RefusedRequestError,
  RequestHeadError,
  checkPartialHead,
  parseRequestHead,
  type HeadLimits,
} from './request-head.js';
import { InboundRequest, RequestBodyTimeoutError, type BodySource } from './server-request.js';
import { InboundResponse, type ResponseHost } from './server-response.js';
import { CRLF2 } from './wire.js';
import { CHUNKED_DATA, CHUNKED_END, CHUNKED_MORE, ChunkedDecoder } from './chunked-decoder.js';
import { noteSocketRead } from '../../../core/read-pacer.js';

/** What the server does with requests; the callbacks are the router's. */
export interface ServerCallbacks {
  /** A connection was accepted (after the TLS handshake on a TLS server). */
  connection(socket: Socket): void;
  request(req: InboundRequest, res: InboundResponse): void;
  /** A request refused before it reached the router: answer it on the socket and end it. */
  rejected(err: RefusedRequestError, socket: Socket): void;
}

export interface ServerConnectionOptions extends HeadLimits {
  /** How long a request head may take to arrive, from its first byte (0: no limit). */
  readonly headersTimeoutMs: number;
  /** How long a request body being read may go without a byte (0: no limit); then 408, or a cut. */
  readonly bodyIdleTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number;
  /**
   * Largest piece of a chunked body handed on at once (`maxChunkKB`): a bigger chunk is split, as
   * Netty's decoder splits it for Finagle, so the upstream sees chunks of at most this size.
   */
  readonly maxChunkBytes: number;
}

/** What a connection needs from its server. */
export interface ConnectionOwner {
  readonly opts: ServerConnectionOptions;
  readonly callbacks: ServerCallbacks;
  readonly keepAliveFields: string;
  /** The server is closing: each connection ends after its current response. */
  readonly closing: boolean;
  removed(conn: ServerConnection): void;
}

// Body framing of the request being read.
const NO_BODY = 0;
const FIXED = 1;
const CHUNKED = 2;

// What the socket's idle timer is armed for.
const TIMER_KEEP_ALIVE = 0;
const TIMER_HEAD = 1;
const TIMER_BODY = 2;

/** Unread request bytes left after a response are read and dropped up to this size; past it, the connection closes. */
const DISCARD_BYTES = 64 * 1024;
/** How long a refused client has to close its side after the answer. */
const REJECT_GRACE_MS = 5000;
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n', 'latin1');
const EMPTY = Buffer.alloc(0);

export class ServerConnection implements BodySource, ResponseHost {
  readonly socket: Socket;
  readonly #owner: ConnectionOwner;
  #pending: Buffer | undefined;
  #req: InboundRequest | undefined;
  #res: InboundResponse | undefined;
  #state = NO_BODY;
  #remaining = 0;
  /** Reads a chunked body (the same decoder as the client's, see chunked-decoder.ts). */
  readonly #chunked: ChunkedDecoder;
  /** When the first byte of the head being read arrived (0: none yet). */
  #headStarted = 0;
  #processing = false;
  #readPaused = false;
  #peerEnded = false;
  #ending = false;
  #dead = false;
  #timer = TIMER_KEEP_ALIVE;
  readonly #processBound = (): void => this.#process();
  readonly #onData = (chunk: Buffer): void => this.#data(chunk);
  readonly #onEnd = (): void => this.#peerEnd();
  readonly #onClose = (): void => this.#closed();
  readonly #onTimeout = (): void => this.#timeout();
  readonly #onDrain = (): void => this.#res?.drained();

  constructor(owner: ConnectionOwner, socket: Socket) {
    this.#owner = owner;
    this.socket = socket;
    this.#chunked = new ChunkedDecoder(owner.opts.maxHeaderBytes, owner.opts.maxChunkBytes);
    socket.on('data', this.#onData);
    socket.on('end', this.#onEnd);
    socket.on('close', this.#onClose);
    socket.on('drain', this.#onDrain);
    socket.on('error', ignoreError);
    socket.on('timeout', this.#onTimeout);
    if (owner.opts.keepAliveTimeoutMs > 0) socket.setTimeout(owner.opts.keepAliveTimeoutMs);
  }

  get keepAliveFields(): string {
    return this.#owner.keepAliveFields;
  }

  /** No request in flight and no partial one buffered. */
  get idle(): boolean {
    return this.#req === undefined && this.#pending === undefined;
  }

  destroy(): void {
    this.socket.destroy();
  }

  keepAliveAfter(req: InboundRequest): boolean {
    // A refused upgrade closes: a client (or a proxy in front) may already treat the bytes it sends next as the new protocol.
    if (!req.keepAlive || req.upgrade || this.#owner.closing || this.#peerEnded || this.#ending) return false;
    return req.complete || (this.#state === FIXED && this.#remaining <= DISCARD_BYTES);
  }

  responseFinished(res: InboundResponse): void {
    res.notifyOwner();
    if (this.#processing || this.#dead) return;
    // A pipelined request waits for the next turn: the upstream connection that served this one
    // is only handed back after this returns.
    if (this.#pending !== undefined) setImmediate(this.#processBound);
    else this.#process();
  }

  resumeBody(): void {
    if (!this.#processing && !this.#dead) this.#process();
  }

  #data(chunk: Buffer): void {
    noteSocketRead(chunk.length);
    if (this.#dead || this.#ending) return;
    const pending = this.#pending;
    this.#pending = pending === undefined ? chunk : Buffer.concat([pending, chunk]);
    this.#process();
  }

  /** Reads heads and bodies from the buffer for as long as the current exchange lets it. */
  #process(): void {
    if (this.#processing) return;
    this.#processing = true;
    try {
      while (!this.#dead && !this.#ending) {
        const req = this.#req;
        if (req === undefined) {
          if (!this.#readHead()) break;
        } else if (!req.complete) {
          const res = this.#res as InboundResponse;
          if (res.writableFinished) {
            // Answered before its body was read: drop the rest when it is small, else close.
            if (res.closesConnection || !this.keepAliveAfter(req)) {
              this.#end();
              break;
            }
            req.discard();
          }
          if (!this.#readBody(req)) break;
        } else if ((this.#res as InboundResponse).writableFinished) {
          this.#afterResponse(req, this.#res as InboundResponse);
        } else break;
      }
    } catch (err) {
      this.#fatal(err instanceof RefusedRequestError ? err : new MalformedRequestError(err instanceof Error ? err.message : String(err)));
    } finally {
      this.#processing = false;
    }
    this.#updateFlow();
  }

  /** Parses the next head; false when it is incomplete (or the socket was handed over). */
  #readHead(): boolean {
    let buf = this.#pending;
    if (buf === undefined) return false;
    const opts = this.#owner.opts;
    // Empty lines before a request line are tolerated (RFC 9112 §2.2); the head's clock starts after them.
    let start = 0;
    while (start < buf.length && (buf[start] === 0x0d || buf[start] === 0x0a)) start++;
    if (start === buf.length) {
      this.#pending = undefined;
      return false;
    }
    if (this.#headStarted === 0) this.#headStarted = Date.now();
    const end = buf.indexOf(CRLF2, start);
    if (end < 0) {
      checkPartialHead(buf, start, opts);
      const limit = opts.headersTimeoutMs;
      if (limit > 0) {
        const left = limit - (Date.now() - this.#headStarted);
        if (left <= 0) throw new HeadersTimeoutError(limit);
        // Only a head split over packets gets here: the timer fires at its deadline even if it
        // goes quiet, or after the keep-alive idle time of silence, whichever comes first.
        const idle = opts.keepAliveTimeoutMs;
        this.#arm(TIMER_HEAD, idle > 0 && idle < left ? idle : left);
      }
      if (start > 0) this.#pending = buf.subarray(start);
      return false;
    }
    if (this.#timer === TIMER_HEAD) this.#arm(TIMER_KEEP_ALIVE, opts.keepAliveTimeoutMs);
    const head = parseRequestHead(buf.toString('latin1', start, end), opts);
    buf = end + 4 < buf.length ? buf.subarray(end + 4) : undefined;
    this.#pending = buf;
    this.#headStarted = 0;
    const req = new InboundRequest(head, this.socket, this);
    if (head.method === 'CONNECT') throw new RequestHeadError('PRX_ERR_CONNECT_UNSUPPORTED', 405, 'CONNECT is not supported');
    if (head.chunked) {
      this.#state = CHUNKED;
      this.#chunked.reset();
    }
    else if (head.contentLength > 0) {
      this.#state = FIXED;
      this.#remaining = head.contentLength;
    } else this.#state = NO_BODY;
    if (head.expectContinue && !req.complete) this.socket.write(CONTINUE);
    const res = new InboundResponse(this, req);
    this.#req = req;
    this.#res = res;
    this.#owner.callbacks.request(req, res);
    return true;
  }

  /** Feeds body bytes into the request; false when the buffer is used up or the consumer is full. */
  #readBody(req: InboundRequest): boolean {
    const buf = this.#pending;
    if (buf === undefined || !req.wantsData) return false;
    switch (this.#state) {
      case FIXED: {
        const n = Math.min(this.#remaining, buf.length);
        const piece = n === buf.length ? buf : buf.subarray(0, n);
        this.#remaining -= n;
        this.#consume(buf, n);
        req.data(piece);
        if (this.#remaining === 0) this.#bodyDone(req);
        return true;
      }
      case CHUNKED: {
        const chunked = this.#chunked;
        const result = chunked.decode(buf, 0);
        const next = chunked.next;
        if (result === CHUNKED_DATA) {
          const piece = chunked.dataStart === 0 && next === buf.length ? buf : buf.subarray(chunked.dataStart, next);
          this.#consume(buf, next);
          req.data(piece);
          return true;
        }
        if (result === CHUNKED_MORE) {
          if (next > 0) this.#consume(buf, next);
          return false;
        }
        if (result !== CHUNKED_END) throw new MalformedRequestError(chunked.reason);
        this.#consume(buf, next);
        this.#bodyDone(req);
        return true;
      }
      default:
        this.#bodyDone(req);
        return true;
    }
  }

  #consume(buf: Buffer, n: number): void {
    this.#pending = n >= buf.length ? undefined : buf.subarray(n);
  }

  #bodyDone(req: InboundRequest): void {
    this.#state = NO_BODY;
    req.end();
  }

  /** The response is out and the request read: keep the connection for the next one, or end it. */
  #afterResponse(req: InboundRequest, res: InboundResponse): void {
    this.#req = undefined;
    this.#res = undefined;
    if (res.closesConnection || !req.keepAlive || this.#owner.closing || (this.#peerEnded && this.#pending === undefined)) this.#end();
  }

  /** The server's side is done: flush what was written, then close. */
  #end(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#pending = undefined;
    const socket = this.socket;
    socket.end(() => socket.destroy());
  }

  /** A request that cannot be read on: answered (when no response has begun) and the connection ends. */
  #fatal(err: RefusedRequestError): void {
    const req = this.#req;
    const res = this.#res;
    req?.fail(err);
    if (res !== undefined && res.headersSent) {
      this.socket.destroy();
      return;
    }
    res?.cutOff();
    this.#ending = true;
    this.#pending = undefined;
    // The answer ends our side; a client that never closes its side is cut off after a grace period.
    this.#arm(TIMER_KEEP_ALIVE, REJECT_GRACE_MS);
    this.#owner.callbacks.rejected(err, this.socket);
  }

  /** Detaches the socket for a 101: returns the bytes read past the request (see InboundResponse.takeSocket). */
  handOver(): Buffer | undefined {
    const req = this.#req;
    if (this.#dead || this.#ending || req === undefined || !req.complete) return undefined;
    const socket = this.socket;
    const head = this.#pending ?? EMPTY;
    this.#dead = true;
    this.#pending = undefined;
    this.#req = undefined;
    this.#res = undefined;
    socket.off('data', this.#onData);
    socket.off('end', this.#onEnd);
    socket.off('close', this.#onClose);
    socket.off('drain', this.#onDrain);
    socket.off('timeout', this.#onTimeout);
    socket.setTimeout(0);
    // Bytes arriving before the callee reads them stay in the socket, not dropped.
    socket.pause();
    this.#readPaused = true;
    this.#owner.removed(this);
    return head;
  }

  /** Stops reading while the request body's consumer is full or pipelined bytes pile up. */
  #updateFlow(): void {
    if (this.#dead) return;
    const req = this.#req;
    let pause = false;
    let awaitingBody = false;
    if (req !== undefined) {
      if (!req.complete) {
        pause = this.#pending !== undefined && !req.wantsData;
        // While its consumer holds the body up, the client is not the one keeping it waiting.
        awaitingBody = !pause;
      } else pause = this.#pending !== undefined && this.#pending.length > this.#owner.opts.maxHeaderBytes + this.#owner.opts.maxInitialLineBytes;
    }
    if (awaitingBody !== (this.#timer === TIMER_BODY) && !this.#ending) {
      const opts = this.#owner.opts;
      if (awaitingBody) this.#arm(TIMER_BODY, opts.bodyIdleTimeoutMs);
      else this.#arm(TIMER_KEEP_ALIVE, opts.keepAliveTimeoutMs);
    }
    if (pause === this.#readPaused) return;
    this.#readPaused = pause;
    if (pause) this.socket.pause();
    else this.socket.resume();
  }

  /** The client finished sending: answer what is in flight, then close. */
  #peerEnd(): void {
    this.#peerEnded = true;
    const req = this.#req;
    if (req === undefined) {
      this.#end();
      return;
    }
    if (!req.complete) req.fail();
    // The whole request is in and its answer is not all out: the client gave up waiting. A
    // response still flowing would notice at its next write, but one whose upstream went quiet
    // mid-body would hold both connections until an idle timeout.
    else if (this.#res?.writableFinished === false) this.socket.destroy();
  }

  /** Re-arms the socket's idle timer for `phase` (0 ms: no timer). */
  #arm(phase: number, ms: number): void {
    this.#timer = phase;
    this.socket.setTimeout(ms);
  }

  #timeout(): void {
    if (this.#ending) {
      this.socket.destroy();
      return;
    }
    const req = this.#req;
    if (req !== undefined) {
      // Waiting for the answer is the upstream's timeouts' business.
      if (this.#timer === TIMER_BODY && !req.complete) this.#fatal(new RequestBodyTimeoutError(this.#owner.opts.bodyIdleTimeoutMs));
      return;
    }
    if (this.#pending !== undefined) this.#fatal(new HeadersTimeoutError(this.#owner.opts.headersTimeoutMs));
    else this.socket.destroy();
  }

  #closed(): void {
    this.#dead = true;
    this.#pending = undefined;
    const req = this.#req;
    const res = this.#res;
    this.#req = undefined;
    this.#res = undefined;
    req?.fail();
    if (res !== undefined && !res.writableFinished) res.cutOff();
    this.#owner.removed(this);
  }
}

function ignoreError(): void {
  // 'close' follows every socket error; the connection's state is settled there.
}
