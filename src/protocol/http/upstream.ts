import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { PrxError } from '../../core/errors.js';
import type { ExchangeController, ExchangeHandler } from './h1-exchange.js';

/** The upstream response exceeded `maxResponseKB` (a non-chunked body announced as too large). */
export class ResponseTooLargeError extends PrxError {
  constructor(limit: number, length: number) {
    super('PRX_ERR_RESPONSE_TOO_LARGE', `response of ${length} bytes exceeds the limit of ${limit} bytes`);
  }
}

/** Where a streamed response body goes once the router forwards it (a ServerResponse fits). */
export interface BodySink {
  write(chunk: Buffer): boolean;
  end(): void;
  /** The body failed after the head was sent: the client connection must be cut, not ended. */
  destroy(err?: Error): unknown;
  once(event: 'drain', f: () => void): unknown;
}

/**
 * One request/response exchange with an upstream endpoint (over the lean h1 client, or an undici
 * dispatcher for TLS and upgrades), streaming
 * both ways. The head arrives as a promise (so retries and classification can look at it); the
 * body is held (paused) until {@link forward} attaches a sink or {@link discard} drops it, and then
 * flows with backpressure. Allocation per exchange: this object and one promise.
 */
export class UpstreamExchange implements Dispatcher.DispatchHandler, ExchangeHandler {
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** True once any response byte or head has arrived (no requeue possible after that). */
  responded = false;
  /**
   * True once the request went onto a connected socket: a connection closed after that may have
   * delivered it, so only a failed write is known safe to send elsewhere.
   */
  requestStarted = false;
  /** Set when the exchange ends (completed, failed or aborted). */
  finished = false;
  error: Error | undefined;
  /** Upgraded socket (101 Switching Protocols). */
  socket: Duplex | undefined;

  #controller: ExchangeController | undefined;
  #resolve!: (x: UpstreamExchange) => void;
  #reject!: (e: Error) => void;
  readonly head: Promise<UpstreamExchange>;
  /** Whether `head` has settled (a failure after that goes to the body sink instead). */
  #headSettled = false;
  #sink: BodySink | null = null;
  #discarding = false;
  #held: Buffer[] | null = null;
  #ended = false;
  #onDone: ((ex: UpstreamExchange) => void) | undefined;
  readonly #maxResponseBytes: number;
  /** Resumes reading once a slow sink drains; made on the first backpressure, not per exchange. */
  #resumeBound: (() => void) | undefined;

  constructor(maxResponseBytes = Infinity, onDone?: (ex: UpstreamExchange) => void) {
    this.#maxResponseBytes = maxResponseBytes;
    this.#onDone = onDone;
    this.head = new Promise<UpstreamExchange>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Aborts the exchange (the client went away, a timeout fired). */
  abort(err: Error): void {
    if (this.finished) return;
    if (this.#controller !== undefined) this.#controller.abort(err);
    else this.#fail(err);
  }

  /** Streams the body into `sink`, which receives everything held so far first. */
  forward(sink: BodySink): void {
    this.#sink = sink;
    const held = this.#held;
    this.#held = null;
    if (held !== null) {
      for (const c of held) sink.write(c);
    }
    if (this.#ended) {
      sink.end();
      return;
    }
    if (this.error !== undefined) {
      sink.destroy(this.error);
      return;
    }
    this.#controller?.resume();
  }

  /** Drops the body (a retried or replaced response), keeping the connection reusable. */
  discard(): void {
    this.#discarding = true;
    this.#held = null;
    if (!this.finished) this.#controller?.resume();
  }

  onRequestStart(controller: ExchangeController): void {
    this.#controller = controller;
    this.requestStarted = true;
  }

  onResponseStart(controller: ExchangeController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200 && statusCode !== 101) return; // 1xx informational: not forwarded
    this.responded = true;
    this.status = statusCode;
    this.headers = headers;
    const length = headers['content-length'];
    if (length !== undefined && this.#maxResponseBytes !== Infinity) {
      const n = Number(length);
      if (n > this.#maxResponseBytes) {
        controller.abort(new ResponseTooLargeError(this.#maxResponseBytes, n));
        return;
      }
    }
    // Hold the body until the router decides to forward or discard it.
    controller.pause();
    this.#headSettled = true;
    this.#resolve(this);
  }

  onResponseData(controller: ExchangeController, chunk: Buffer): void {
    const sink = this.#sink;
    if (sink !== null) {
      if (!sink.write(chunk)) {
        controller.pause();
        sink.once('drain', (this.#resumeBound ??= () => this.#controller?.resume()));
      }
    } else if (!this.#discarding) {
      (this.#held ??= []).push(chunk);
      controller.pause();
    }
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.finished = true;
    this.#sink?.end();
    this.#onDone?.(this);
  }

  onResponseError(_controller: ExchangeController, err: Error): void {
    this.#fail(err);
  }

  onRequestUpgrade(_controller: ExchangeController, statusCode: number, headers: IncomingHttpHeaders, socket: Duplex): void {
    this.responded = true;
    this.status = statusCode;
    this.headers = headers;
    this.socket = socket;
    this.finished = true;
    this.#headSettled = true;
    this.#resolve(this);
    this.#onDone?.(this);
  }

  #fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.error = err;
    // A head refused by its size limit was seen (responded) but never delivered: the head fails.
    if (!this.#headSettled) {
      this.#headSettled = true;
      this.#reject(err);
    } else this.#sink?.destroy(err);
    this.#onDone?.(this);
  }
}
