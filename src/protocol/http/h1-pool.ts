/**
 * A lean HTTP/1.1 client for plain-TCP upstreams: one request at a time per keep-alive
 * connection, the request head written as one string, the response head parsed from the first
 * bytes that hold it, and content-length, chunked or close-delimited bodies streamed to the
 * exchange with pause/resume. It replaces undici's per-request machinery (request objects, header
 * validation, the wasm parser's callbacks, an idle-socket check that defers every request to the
 * next event-loop turn) on the router's hot path; TLS and Upgrade requests still go through undici.
 */
import { H1Connection, type ConnectionOwner } from './h1-connection.js';
import { PoolClosedError, type ExchangeController, type ExchangeHandler, type H1Request } from './h1-exchange.js';

export { UpstreamClosedError, UpstreamResetError, UpstreamProtocolError, UpstreamContentLengthError, UpstreamHeadersOverflowError, UpstreamConnectTimeoutError, PoolClosedError } from './h1-exchange.js';
export type { ExchangeController, ExchangeHandler, H1Request } from './h1-exchange.js';

export interface H1PoolOptions {
  readonly host: string;
  readonly port: number;
  readonly maxConnections: number | null;
  /** Connections kept open through idle timeouts (Finagle's low watermark, `minSize`). */
  readonly minConnections?: number;
  readonly keepAliveTimeoutMs: number;
  readonly lifeTimeMs: number | null;
  readonly maxHeaderBytes: number;
  readonly connectTimeoutMs: number;
}

interface Queued {
  readonly req: H1Request;
  readonly handler: ExchangeHandler;
}

/**
 * The connections to one upstream address: idle ones are reused last-in first-out, new ones are
 * opened up to `maxConnections`, and requests beyond that wait in order.
 */
export class H1Pool implements ConnectionOwner {
  readonly opts: H1PoolOptions;
  readonly #idle: H1Connection[] = [];
  readonly #all = new Set<H1Connection>();
  readonly #queue: Queued[] = [];
  #closed = false;
  #closedWaiters: (() => void)[] = [];

  constructor(opts: H1PoolOptions) {
    this.opts = opts;
  }

  /** Open connections. */
  get connected(): number {
    return this.#all.size;
  }

  dispatch(req: H1Request, handler: ExchangeHandler): void {
    if (this.#closed) {
      handler.onResponseError(NOOP_CONTROLLER, new PoolClosedError());
      return;
    }
    const conn = this.#idle.pop();
    if (conn !== undefined) {
      conn.start(req, handler);
      return;
    }
    const max = this.opts.maxConnections;
    if (max === null || this.#all.size < max) {
      const fresh = new H1Connection(this);
      this.#all.add(fresh);
      fresh.start(req, handler);
      return;
    }
    this.#queue.push({ req, handler });
  }

  /** Whether an idle connection whose idle time ran out stays open: while the pool is at `minConnections` or below. */
  keepsIdle(): boolean {
    return !this.#closed && this.#all.size <= (this.opts.minConnections ?? 0);
  }

  /** A connection finished its exchange and may take another. */
  released(conn: H1Connection): void {
    const next = this.#queue.shift();
    if (next !== undefined) {
      conn.start(next.req, next.handler);
      return;
    }
    if (this.#closed) {
      conn.destroy();
      return;
    }
    this.#idle.push(conn);
  }

  /** A connection is gone: forget it, and let a waiting request open a new one. */
  removed(conn: H1Connection): void {
    this.#all.delete(conn);
    const i = this.#idle.indexOf(conn);
    if (i >= 0) this.#idle.splice(i, 1);
    const next = this.#queue.shift();
    if (next !== undefined) {
      const fresh = new H1Connection(this);
      this.#all.add(fresh);
      fresh.start(next.req, next.handler);
      return;
    }
    if (this.#closed && this.#all.size === 0) this.#settleClosed();
  }

  /** Stops taking requests; queued and in-flight ones finish, then connections close. */
  close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) c.destroy();
    if (this.#all.size === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#closedWaiters.push(resolve));
  }

  /** Closes every connection now, failing in-flight and queued requests. */
  destroy(): Promise<void> {
    this.#closed = true;
    for (const q of this.#queue.splice(0)) q.handler.onResponseError(NOOP_CONTROLLER, new PoolClosedError());
    for (const c of [...this.#all]) c.destroy(new PoolClosedError());
    this.#settleClosed();
    return Promise.resolve();
  }

  #settleClosed(): void {
    const ws = this.#closedWaiters;
    this.#closedWaiters = [];
    for (const w of ws) w();
  }
}

const NOOP_CONTROLLER: ExchangeController = Object.freeze({ abort() {}, pause() {}, resume() {} });
