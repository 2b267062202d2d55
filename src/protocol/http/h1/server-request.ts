/**
 * An inbound request as the router's own HTTP/1.1 server (server.ts) hands it over: the head,
 * and a body its consumer claims once, either whole (`readBody`, for replayable small bodies) or
 * as a stream with backpressure (`bodyStream`). Until claimed, decoded body bytes are held and
 * reading stops once they pass a small bound.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { PrxError } from '../../../core/errors.js';
import { PayloadTooLargeError } from '../headers/proxy-errors.js';
import { RefusedRequestError, type RequestHead } from './request-head.js';

/** Held body bytes past which the connection stops reading until the body is claimed. */
const HOLD_BYTES = 64 * 1024;

/** The client closed the connection before its request body was complete. */
export class RequestBodyAbortedError extends PrxError {
  constructor() {
    super('PRX_ERR_REQUEST_ABORTED', 'the client closed the connection before the request body was complete');
  }
}

/**
 * No request body byte arrived for `requestBodyIdleTimeoutMs` while the server was reading: a 408
 * when no response has begun, else the connection is cut.
 */
export class RequestBodyTimeoutError extends RefusedRequestError {
  constructor(ms: number) {
    super('PRX_ERR_REQUEST_BODY_TIMEOUT', 408, `no request body received for ${ms} ms`);
  }
}

/** What a request needs from its connection: more body bytes. */
export interface BodySource {
  resumeBody(): void;
}

/** Collects a whole body for `readBody`. */
interface Collector {
  readonly limit: number;
  chunks: Buffer[];
  size: number;
  resolve(b: Buffer): void;
  reject(e: Error): void;
}

class BodyStream extends Readable {
  readonly #source: BodySource;
  /** Whether the stream asked for data since a push last found it full (node's push/_read contract). */
  wanted = true;
  constructor(source: BodySource) {
    super();
    this.#source = source;
    // A body that breaks (a malformed chunk) before its consumer listens must not be an uncaught
    // 'error' that takes the process down: consumers check `errored` when they attach.
    this.on('error', ignoreError);
  }
  override _read(): void {
    this.wanted = true;
    this.#source.resumeBody();
  }
}

const EMPTY = Buffer.alloc(0);

function ignoreError(): void {
  // See BodyStream's constructor.
}

export class InboundRequest {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: string;
  readonly headers: IncomingHttpHeaders;
  readonly socket: Socket;
  /** -1 without a Content-Length (none, or chunked). */
  readonly contentLength: number;
  readonly chunked: boolean;
  readonly keepAlive: boolean;
  /**
   * An `Upgrade` request: an ordinary request until a 101 takes the socket
   * (`InboundResponse.takeSocket`); any other answer closes the connection after it.
   */
  readonly upgrade: boolean;
  /** True once the whole body has been read off the connection. */
  complete: boolean;
  readonly #source: BodySource;
  #held: Buffer[] | null = null;
  #heldBytes = 0;
  #stream: BodyStream | undefined;
  #collector: Collector | undefined;
  #discarding = false;
  #error: Error | undefined;

  constructor(head: RequestHead, socket: Socket, source: BodySource) {
    this.method = head.method;
    this.url = head.url;
    this.httpVersion = head.httpVersion;
    this.headers = head.headers;
    this.socket = socket;
    this.contentLength = head.contentLength;
    this.chunked = head.chunked;
    this.keepAlive = head.keepAlive;
    this.upgrade = head.upgrade;
    this.complete = !head.chunked && head.contentLength <= 0;
    this.#source = source;
  }

  /** The body as a stream; it errors when the client goes away before the end. */
  bodyStream(): Readable {
    if (this.#stream !== undefined) return this.#stream;
    const stream = new BodyStream(this.#source);
    this.#stream = stream;
    const held = this.#take();
    if (held !== null) for (const c of held) stream.wanted = stream.push(c);
    if (this.complete) stream.push(null);
    else if (this.#error !== undefined) stream.destroy(this.#error);
    return stream;
  }

  /** The whole body, refused past `limit` bytes. */
  readBody(limit: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const c: Collector = { limit, chunks: [], size: 0, resolve, reject };
      this.#collector = c;
      const held = this.#take();
      if (held !== null) for (const chunk of held) this.#collect(c, chunk);
      if (this.#collector === undefined) return;
      if (this.complete) this.#finishCollect(c);
      else if (this.#error !== undefined) reject(this.#error);
      else this.#source.resumeBody();
    });
  }

  /**
   * Drops the rest of the body: the response is out without it. A stream or whole read still
   * waiting ends here (its exchange is over).
   */
  discard(): void {
    if (this.#discarding) return;
    this.#discarding = true;
    this.#held = null;
    this.#heldBytes = 0;
    const stream = this.#stream;
    this.#stream = undefined;
    stream?.destroy();
    const c = this.#collector;
    this.#collector = undefined;
    c?.reject(new RequestBodyAbortedError());
  }

  /** A decoded body chunk (the connection asks {@link wantsData} before reading more). */
  data(chunk: Buffer): void {
    if (this.#discarding) return;
    const stream = this.#stream;
    if (stream !== undefined) {
      stream.wanted = stream.push(chunk);
      return;
    }
    const c = this.#collector;
    if (c !== undefined) {
      this.#collect(c, chunk);
      return;
    }
    (this.#held ??= []).push(chunk);
    this.#heldBytes += chunk.length;
  }

  /** Whether the consumer can take more now (the connection resumes reading when it can). */
  get wantsData(): boolean {
    if (this.#discarding) return true;
    const stream = this.#stream;
    if (stream !== undefined) return stream.wanted;
    return this.#collector !== undefined || this.#heldBytes < HOLD_BYTES;
  }

  /** The body is complete. */
  end(): void {
    this.complete = true;
    this.#stream?.push(null);
    const c = this.#collector;
    if (c !== undefined) this.#finishCollect(c);
  }

  /** The connection failed before the body was complete. */
  fail(err: Error = new RequestBodyAbortedError()): void {
    if (this.complete || this.#error !== undefined) return;
    this.#error = err;
    this.#stream?.destroy(err);
    const c = this.#collector;
    if (c !== undefined) {
      this.#collector = undefined;
      c.reject(err);
    }
  }

  #take(): Buffer[] | null {
    const held = this.#held;
    this.#held = null;
    this.#heldBytes = 0;
    return held;
  }

  #collect(c: Collector, chunk: Buffer): void {
    c.size += chunk.length;
    if (c.size > c.limit) {
      this.#collector = undefined;
      this.#discarding = true;
      c.reject(new PayloadTooLargeError(c.size, c.limit));
      return;
    }
    c.chunks.push(chunk);
  }

  #finishCollect(c: Collector): void {
    this.#collector = undefined;
    const chunks = c.chunks;
    c.resolve(chunks.length === 1 ? (chunks[0] as Buffer) : chunks.length === 0 ? EMPTY : Buffer.concat(chunks, c.size));
  }
}
