/**
 * One stream of prx's own HTTP/2 client session: the request's body queued against flow control,
 * the response handed to its handler as it arrives. Receive credit is returned only as the handler
 * reports bytes consumed, so a slow client holds the upstream back through the stream's window.
 */
import { StreamResetError } from '../errors.js';

/** Header fields as a null-prototype object, in node:http2's shape (set-cookie an array, repeats joined). */
export type H2Fields = Record<string, string | string[] | undefined>;

/** What a stream tells its owner; each is called at most once except onData and onDrain. */
export interface H2StreamHandler {
  /** The final response head (informational 1xx heads are skipped). */
  onHead(status: number, headers: H2Fields, endStream: boolean): void;
  /** Response bytes; `stream.consumed(n)` returns their credit to the peer once passed on. */
  onData(chunk: Buffer): void;
  onTrailers(trailers: H2Fields): void;
  /** END_STREAM: the response is complete (after its trailers, if any). */
  onEnd(): void;
  /** The stream is over: `error` is undefined when both sides completed, else the reset or failure. */
  onClose(error: Error | undefined): void;
  /** The request body's queue went below the high-water mark again. */
  onDrain(): void;
}

/** What a stream needs of its session. */
export interface StreamOwner {
  /** Sends what the stream's windows and the connection's allow. */
  pump(stream: H2ClientStream): void;
  /** Returns receive credit to the peer. */
  credit(stream: H2ClientStream, bytes: number): void;
  /** Resets the stream on the wire (or drops it from the queue if never sent). */
  resetStream(stream: H2ClientStream, code: number): void;
}

/** Queued request bytes above which write() asks the writer to wait for onDrain. */
const HIGH_WATER_BYTES = 64 * 1024;

export class H2ClientStream {
  /** 0 until its HEADERS are sent (a stream may wait for the peer's concurrency limit). */
  id = 0;
  readonly handler: H2StreamHandler;
  readonly #owner: StreamOwner;
  /** The request head, until sent. */
  fields: string[] | undefined;
  /** Request bytes waiting for flow control, and whether END_STREAM (or trailers) follows them. */
  readonly queue: Buffer[] = [];
  queuedBytes = 0;
  endQueued = false;
  trailers: string[] | undefined;
  sendWindow = 0;
  /** Credit the peer has to send to us, and credit consumed but not yet returned. */
  recvWindow = 0;
  unreturned = 0;
  /** Whether we sent END_STREAM, and whether the peer did. */
  localClosed = false;
  remoteClosed = false;
  responded = false;
  closed = false;
  /** The RST_STREAM code sent or received, if any. */
  rstCode: number | undefined;
  needsDrain = false;
  /** The response's content-length (-1: none, or a response that has no content), and its DATA so far. */
  expectedBytes = -1;
  receivedBytes = 0;
  /** A HEAD request: its response's content-length describes a body that is not sent. */
  readonly headRequest: boolean;

  constructor(owner: StreamOwner, handler: H2StreamHandler, fields: string[], endStream: boolean) {
    this.#owner = owner;
    this.handler = handler;
    this.fields = fields;
    this.endQueued = endStream;
    this.headRequest = isHead(fields);
  }

  /** Queues request bytes; false when the writer should wait for the handler's onDrain. */
  write(chunk: Buffer): boolean {
    if (this.closed || this.localClosed || this.endQueued) return false;
    if (chunk.length === 0) return true;
    this.queue.push(chunk);
    this.queuedBytes += chunk.length;
    if (this.id !== 0) this.#owner.pump(this);
    const ok = this.queuedBytes < HIGH_WATER_BYTES;
    if (!ok) this.needsDrain = true;
    return ok;
  }

  /** Ends the request, with trailer fields (alternating names and values) if given. */
  end(trailers?: string[]): void {
    if (this.closed || this.endQueued) return;
    this.endQueued = true;
    if (trailers !== undefined && trailers.length > 0) this.trailers = trailers;
    if (this.id !== 0) this.#owner.pump(this);
  }

  /** The handler passed `bytes` of the response on: the peer may send that much more. */
  consumed(bytes: number): void {
    if (bytes > 0 && !this.closed) this.#owner.credit(this, bytes);
  }

  /** Abandons the stream: RST_STREAM with `code` (the handler hears onClose with the reset). */
  reset(code: number): void {
    if (this.closed) return;
    this.#owner.resetStream(this, code);
  }

  /** Closes the stream once: the handler hears it last. */
  finish(error: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.handler.onClose(error);
  }

  /** The error a stream reset on the wire reports to its handler. */
  static resetError(code: number, by: 'upstream' | 'downstream'): StreamResetError {
    return new StreamResetError(code, by);
  }
}

/** Whether a request head (pseudo-headers first) is a HEAD request. */
function isHead(fields: readonly string[]): boolean {
  for (let i = 0; i < fields.length && (fields[i] as string).charCodeAt(0) === 58; i += 2) {
    if (fields[i] === ':method') return fields[i + 1] === 'HEAD';
  }
  return false;
}
