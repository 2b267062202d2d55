/**
 * The vocabulary of the lean HTTP/1.1 client (pool.ts, client-connection.ts): its typed errors, a
 * request as it sends it, and the handler/controller pair through which an exchange (the router's
 * UpstreamExchange) follows and steers its response.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { PrxError } from '../../../core/errors.js';

/** The upstream closed the connection before the response was complete (`midBody`: after its head). */
export class UpstreamClosedError extends PrxError {
  constructor(midBody = false) {
    super('PRX_ERR_UPSTREAM_CLOSED', midBody ? 'other side closed before the end of the response body' : 'other side closed');
  }
}

/**
 * The connection was reset after the whole request had been handed to the socket: the upstream
 * may have acted on it, so unlike a failed write it is not sent elsewhere (Finagle's
 * ChannelClosedException); a retryable classifier may still retry it (the cause is the reset).
 */
export class UpstreamResetError extends PrxError {
  constructor(cause: Error) {
    super('PRX_ERR_UPSTREAM_RESET', `connection reset after the request was sent: ${cause.message}`, { cause });
  }
}

/** The upstream's bytes are not an HTTP/1.1 response. */
export class UpstreamProtocolError extends PrxError {
  constructor(detail: string) {
    super('PRX_ERR_UPSTREAM_PROTOCOL', `Response does not match the HTTP/1.1 protocol (${detail})`);
  }
}

/** The response head repeats Content-Length (or pairs it with chunked framing). */
export class UpstreamContentLengthError extends PrxError {
  constructor() {
    super('PRX_ERR_UPSTREAM_CONTENT_LENGTH', 'conflicting content-length in the response');
  }
}

/** The response head is larger than the configured limit. */
export class UpstreamHeadersOverflowError extends PrxError {
  constructor(limit: number) {
    super('PRX_ERR_UPSTREAM_HEADERS_OVERFLOW', `response headers exceed ${limit} bytes`);
  }
}

/** No connection within the connect timeout. */
export class UpstreamConnectTimeoutError extends PrxError {
  constructor(ms: number) {
    super('PRX_ERR_UPSTREAM_CONNECT_TIMEOUT', `connect timed out after ${ms} ms`);
  }
}

/**
 * The upstream sent nothing for `responseIdleTimeoutMs` while a response was due (its head, or
 * more of its body) and prx was ready to read: the connection is closed (Finagle's read timeout on
 * a transport, a channel failure: 502 with `prx-err` when no answer has begun, else a cut).
 */
export class UpstreamIdleTimeoutError extends PrxError {
  constructor(ms: number) {
    super('PRX_ERR_UPSTREAM_IDLE_TIMEOUT', `the upstream sent nothing for ${ms} ms while a response was due (responseIdleTimeoutMs)`);
  }
}

/** The pool was closed or destroyed with the request still waiting for a connection. */
export class PoolClosedError extends PrxError {
  constructor() {
    super('PRX_ERR_UPSTREAM_POOL_CLOSED', 'the connection pool is closed');
  }
}

/** What an exchange can do to its request while it runs. */
export interface ExchangeController {
  abort(err: Error): void;
  pause(): void;
  resume(): void;
}

/** Receives one exchange's progress (UpstreamExchange implements it). */
export interface ExchangeHandler {
  /** True once the exchange has ended (e.g. aborted while it waited for a connection). */
  readonly finished: boolean;
  onRequestStart(controller: ExchangeController): void;
  onResponseStart(controller: ExchangeController, status: number, headers: IncomingHttpHeaders): void;
  onResponseData(controller: ExchangeController, chunk: Buffer): void;
  onResponseEnd(controller: ExchangeController): void;
  onResponseError(controller: ExchangeController, err: Error): void;
}

/** A request as the client sends it. */
export interface H1Request {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | Readable | null;
}
