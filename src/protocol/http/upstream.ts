import type { ResponseClass } from '../../service/classifier.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Dispatcher } from 'undici';
import { PrxError } from '../../core/errors.js';
import type { ExchangeController, ExchangeHandler } from './h1/client-exchange.js';

/**
 * The upstream response exceeded `maxResponseKB`: a body announced as too large, or (when
 * responses are aggregated) one that grew past the limit as it arrived.
 */
export class ResponseTooLargeError extends PrxError {
  constructor(limit: number, length: number | undefined) {
    super(
      'PRX_ERR_RESPONSE_TOO_LARGE',
      length === undefined ? `response body exceeds the limit of ${limit} bytes` : `response of ${length} bytes exceeds the limit of ${limit} bytes`,
    );
  }
}

/** How an exchange treats the response body (one object per client, shared by its exchanges). */
export interface ResponseBodyLimits {
  /** `maxResponseKB` in bytes: a larger announced body fails the exchange. */
  readonly maxResponseBytes: number;
  /**
   * Without streaming (`streamingEnabled: false`), the body is read whole before the head is
   * delivered, and forwarded with a Content-Length; past `maxResponseBytes` the exchange fails.
   */
  readonly aggregate: boolean;
  /** `maxChunkKB` in bytes: a chunked body is passed on in pieces no larger than this. */
  readonly maxChunkBytes: number;
}

const UNLIMITED: ResponseBodyLimits = { maxResponseBytes: Infinity, aggregate: false, maxChunkBytes: Infinity };

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
  /**
   * Set by the router when the head was classified while the body still streams: the outcome
   * counts against the endpoint only once the body is complete (a framing error in the body is
   * the endpoint's failure, not a success).
   */
  outcomePending = false;
  /** The class the router gave the head (see `outcomePending`). */
  headClass: ResponseClass | undefined;
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
  readonly #limits: ResponseBodyLimits;
  /** Pieces of a chunked body are cut to this size (Infinity: passed on as read). */
  #splitAt = Infinity;
  /** While the body is being aggregated (head not yet delivered): the bytes held so far. */
  #aggregated = -1;
  /** Resumes reading once a slow sink drains; made on the first backpressure, not per exchange. */
  #resumeBound: (() => void) | undefined;
  #resumeWaiting = false;

  constructor(limits: ResponseBodyLimits = UNLIMITED, onDone?: (ex: UpstreamExchange) => void) {
    this.#limits = limits;
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
    const limits = this.#limits;
    const length = headers['content-length'];
    if (length !== undefined) {
      if (limits.maxResponseBytes !== Infinity) {
        const n = Number(length);
        if (n > limits.maxResponseBytes) {
          controller.abort(new ResponseTooLargeError(limits.maxResponseBytes, n));
          return;
        }
      }
    } else this.#splitAt = limits.maxChunkBytes;
    if (limits.aggregate && statusCode !== 101) {
      // Read on: the head is delivered with the whole body (onResponseEnd).
      this.#aggregated = 0;
      this.#held = [];
      return;
    }
    // Hold the body until the router decides to forward or discard it.
    controller.pause();
    this.#headSettled = true;
    this.#resolve(this);
  }

  onResponseData(controller: ExchangeController, chunk: Buffer): void {
    if (this.#aggregated >= 0) {
      this.#aggregate(controller, chunk);
      return;
    }
    const max = this.#splitAt;
    if (chunk.length <= max) {
      this.#deliver(controller, chunk);
      return;
    }
    for (let at = 0; at < chunk.length; at += max) this.#deliver(controller, chunk.subarray(at, at + max));
  }

  #aggregate(controller: ExchangeController, chunk: Buffer): void {
    const n = this.#aggregated + chunk.length;
    const max = this.#limits.maxResponseBytes;
    if (n > max) {
      this.#aggregated = -1;
      this.#held = null;
      this.#discarding = true;
      controller.abort(new ResponseTooLargeError(max, undefined));
      return;
    }
    this.#aggregated = n;
    this.#held?.push(chunk);
  }

  /** Passes a piece of the body on: to the sink, or held until there is one. */
  #deliver(controller: ExchangeController, chunk: Buffer): void {
    const sink = this.#sink;
    if (sink !== null) {
      // One drain listener at a time: the pieces of a split chunk may each find the sink full.
      if (!sink.write(chunk) && !this.#resumeWaiting) {
        this.#resumeWaiting = true;
        controller.pause();
        sink.once('drain', (this.#resumeBound ??= () => {
          this.#resumeWaiting = false;
          this.#controller?.resume();
        }));
      }
    } else if (!this.#discarding) {
      (this.#held ??= []).push(chunk);
      controller.pause();
    }
  }

  onResponseEnd(): void {
    if (this.#aggregated >= 0) this.#deliverAggregated();
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

  /** The whole body is in: deliver the head, framed by the body's length, with the body held. */
  #deliverAggregated(): void {
    const length = this.#aggregated;
    this.#aggregated = -1;
    const headers = this.headers;
    // Read-to-close and chunked bodies get their length; a HEAD, 204 or 304 (no body bytes) keeps
    // the framing headers it came with.
    if (headers['content-length'] === undefined && length > 0) {
      delete headers['transfer-encoding'];
      headers['content-length'] = String(length);
    }
    this.#headSettled = true;
    this.#resolve(this);
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
