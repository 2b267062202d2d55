/**
 * One call of prx's gRPC server (grpc-server.ts) on one HTTP/2 stream of prx's own server codec:
 * the single length-prefixed request message read and checked (size, compressed flag, count), the
 * response head sent with the first message, messages written one at a time against both send
 * windows (the handler hears when the last one has left, so it can keep the newest value instead
 * of a queue), and the status as trailers, or as a trailers-only response when no message went.
 */
import { H2Code } from './errors.js';
import { GrpcStatus, encodeGrpcMessage, grpcErrorHeaders } from './grpc.js';
import type { H2Fields, H2ServerStream } from './wire/server-stream.js';

/** The 5-byte prefix of every gRPC message: a compressed flag and a big-endian length. */
export const GRPC_PREFIX_BYTES = 5;

/** `message` length-prefixed, ready for {@link GrpcServerCall.send} (encode once, send to every call). */
export function grpcMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(GRPC_PREFIX_BYTES + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, GRPC_PREFIX_BYTES);
  return out;
}

/** What a handler hears of its call after it started it. */
export interface GrpcCallObserver {
  /** The message {@link GrpcServerCall.send} returned false for has left for the socket. */
  sent(): void;
  /** The call ended without the handler's end(): the client cancelled it, the connection went, or the deadline passed. */
  cancelled(): void;
}

/** What a call needs of its server. */
export interface GrpcCallHost {
  readonly maxRequestBytes: number;
  /** The handler of the call's method, called once with the request message. */
  dispatch(call: GrpcServerCall, request: Buffer): void;
  /** The call is over (counted out). */
  callEnded(call: GrpcServerCall): void;
}

/** The response head of every call that sends a message (never changed: respond() only reads it). */
const RESPONSE_HEAD = Object.freeze({ ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-accept-encoding': 'identity' });
const MAX_TIMER_MS = 2 ** 31 - 1;
const NO_HEADERS: H2Fields = Object.freeze(Object.create(null) as H2Fields);
const NO_PARTS: readonly Buffer[] = Object.freeze([]);

export class GrpcServerCall {
  /** `/package.Service/Method`. */
  readonly path: string;
  /** The request head, until the handler has been called (a long call does not keep it). */
  #headers: H2Fields;
  readonly #stream: H2ServerStream;
  readonly #host: GrpcCallHost;
  /** Set by the handler to hear of sends and cancellation. */
  observer: GrpcCallObserver | undefined;
  /** Request bytes until the request ended (then none). */
  #parts: readonly Buffer[] | Buffer[] = [];
  #bytes = 0;
  /** The request message's length, once its prefix is in (-1 before). */
  #length = -1;
  #ended = false;
  #deadline: NodeJS.Timeout | undefined;

  constructor(host: GrpcCallHost, stream: H2ServerStream, headers: H2Fields, path: string, timeoutMs: number | undefined) {
    this.#host = host;
    this.#stream = stream;
    this.#headers = headers;
    this.path = path;
    // The stream is the call's alone: its listeners go with removeAllListeners, and the call keeps no closure.
    stream.on('data', (chunk: Buffer) => this.#take(chunk));
    stream.on('end', () => this.#requestEnded());
    stream.on('drain', () => this.#drained());
    stream.on('close', () => this.#closed());
    stream.resume();
    // A deadline past what a timer holds (~24.8 days) is as good as none.
    if (timeoutMs !== undefined && timeoutMs <= MAX_TIMER_MS) {
      this.#deadline = setTimeout(() => this.#deadlinePassed(), timeoutMs);
      this.#deadline.unref();
    }
  }

  /** The request head while the handler runs (empty after). */
  get headers(): H2Fields {
    return this.#headers;
  }

  /** The client's address (for access logs). */
  get remoteAddress(): string | undefined {
    return this.#stream.session.socket.remoteAddress;
  }

  /** Response bytes waiting for flow control (at most the last message sent, when the handler waits for sent()). */
  get queuedBytes(): number {
    return this.#stream.queuedBytes;
  }

  /** end() was called, or the call was cancelled: nothing more is sent. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Sends one message made by {@link grpcMessage} (the response head goes first). True when it has
   * left for the socket already; false when it waits for flow control, and the observer's sent()
   * follows once it has. Ignored after the call ended.
   */
  send(framed: Buffer): boolean {
    if (this.#ended) return true;
    const stream = this.#stream;
    if (!stream.headersSent) stream.respond(RESPONSE_HEAD);
    stream.write(framed);
    return stream.awaitSent();
  }

  /** Ends the call with `code` and its `details` (trailers after the messages sent, or a trailers-only response). */
  end(code: number, details = ''): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#release();
    const stream = this.#stream;
    if (stream.closed) return;
    if (!stream.headersSent) stream.respond(trailersOnly(code, details), { endStream: true });
    else stream.sendTrailers(details === '' ? { 'grpc-status': String(code) } : { 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(details) });
    // A request still being sent is not wanted any more (RFC 9113 §8.1: RST_STREAM NO_ERROR after the response).
    if (!stream.remoteClosed) stream.close(H2Code.NO_ERROR);
  }

  // ---- the request --------------------------------------------------------------------------

  #take(chunk: Buffer): void {
    if (this.#ended) return;
    (this.#parts as Buffer[]).push(chunk);
    this.#bytes += chunk.length;
    if (this.#length < 0 && this.#bytes >= GRPC_PREFIX_BYTES && !this.#readPrefix()) return;
    if (this.#length >= 0 && this.#bytes > GRPC_PREFIX_BYTES + this.#length) this.end(GrpcStatus.INTERNAL, 'more than one request message for a method that takes one');
  }

  /** Checks the request message's prefix; false when the call was ended for it. */
  #readPrefix(): boolean {
    const head = this.#parts.length === 1 ? (this.#parts[0] as Buffer) : Buffer.concat(this.#parts as Buffer[]);
    const compressed = head[0] as number;
    const length = head.readUInt32BE(1);
    if (compressed !== 0) {
      const encoding = this.#headers['grpc-encoding'];
      // A compressed message with no (or identity) encoding is malformed; a real encoding is one this server does not take.
      if (encoding === undefined || encoding === 'identity') this.end(GrpcStatus.INTERNAL, 'a compressed request message without grpc-encoding');
      else this.end(GrpcStatus.UNIMPLEMENTED, `Received message compressed with unsupported encoding "${String(encoding)}"`);
      return false;
    }
    const max = this.#host.maxRequestBytes;
    if (length > max) {
      this.end(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${max})`);
      return false;
    }
    this.#length = length;
    return true;
  }

  #requestEnded(): void {
    this.#stream.removeAllListeners('data').removeAllListeners('end');
    if (this.#ended) return;
    const length = this.#length;
    const parts = this.#parts;
    this.#parts = NO_PARTS;
    if (this.#bytes === 0) return this.end(GrpcStatus.INTERNAL, 'the request has no message');
    if (length < 0 || this.#bytes < GRPC_PREFIX_BYTES + length) return this.end(GrpcStatus.INTERNAL, 'the request message is incomplete');
    // A copy of its own: the request may outlive the socket's read buffers it arrived in.
    const request = Buffer.allocUnsafe(length);
    let at = 0;
    let skip = GRPC_PREFIX_BYTES;
    for (const p of parts) {
      const from = Math.min(skip, p.length);
      skip -= from;
      at += p.copy(request, at, from);
    }
    try {
      this.#host.dispatch(this, request);
    } catch (e) {
      this.end(GrpcStatus.UNKNOWN, e instanceof Error ? e.message : String(e));
    }
    this.#headers = NO_HEADERS;
  }

  // ---- ends ---------------------------------------------------------------------------------

  #drained(): void {
    if (!this.#ended) this.observer?.sent();
  }

  #deadlinePassed(): void {
    this.#deadline = undefined;
    if (this.#ended) return;
    this.end(GrpcStatus.DEADLINE_EXCEEDED, 'Deadline exceeded');
    this.observer?.cancelled();
  }

  /** The stream closed: after the call's end, or cancelled (RST_STREAM, the connection gone). */
  #closed(): void {
    this.#stream.removeAllListeners();
    this.#parts = NO_PARTS;
    this.#headers = NO_HEADERS;
    if (!this.#ended) {
      this.#ended = true;
      this.#release();
      this.observer?.cancelled();
    }
    this.observer = undefined;
    this.#host.callEnded(this);
  }

  #release(): void {
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#deadline = undefined;
  }
}

/** A trailers-only response; it names the one encoding taken, as a refused compressed message asks. */
export function trailersOnly(code: number, details: string): Record<string, string | number> {
  const head = grpcErrorHeaders(code, details);
  head['grpc-accept-encoding'] = 'identity';
  return head;
}
