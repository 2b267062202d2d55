/**
 * A lean HTTP/1.1 client for plain-TCP upstreams: one request at a time per keep-alive
 * connection, the request head written as one string, the response head parsed from the first
 * bytes that hold it, and content-length, chunked or close-delimited bodies streamed to the
 * exchange with pause/resume. It replaces undici's per-request machinery (request objects, header
 * validation, the wasm parser's callbacks, an idle-socket check that defers every request to the
 * next event-loop turn) on the router's hot path; TLS and Upgrade requests still go through undici.
 */
import { H1Connection, type ConnectionOwner } from './client-connection.js';
import { PoolClosedError, type ExchangeController, type ExchangeHandler, type H1Request } from './client-exchange.js';

export { UpstreamIdleTimeoutError, UpstreamClosedError, UpstreamResetError, UpstreamProtocolError, UpstreamContentLengthError, UpstreamHeadersOverflowError, UpstreamConnectTimeoutError, PoolClosedError } from './client-exchange.js';
export type { ExchangeController, ExchangeHandler, H1Request } from './client-exchange.js';

export interface H1PoolOptions {
  readonly host: string;
  readonly port: number;
  readonly maxConnections: number | null;
  /** Connections kept open through `keepAliveTimeoutMs` (Finagle's low watermark, `minSize`). */
  readonly minConnections?: number;
  /** Idle time of connections above `minConnections` (`hostConnectionPool.idleTimeMs`). */
  readonly keepAliveTimeoutMs: number;
  /** Idle time after which any connection closes, `minConnections` ones too (`clientSession.idleTimeMs`); null: forever. */
  readonly sessionIdleTimeMs?: number | null;
  /** Age after which a connection closes once it is not busy (`clientSession.lifeTimeMs`); null: forever. */
  readonly lifeTimeMs: number | null;
  readonly maxHeaderBytes: number;
  readonly connectTimeoutMs: number;
  /** How long a response may go without a byte from the upstream while prx reads it (0: no limit). */
  readonly responseIdleTimeoutMs: number;
}

interface Queued {
  readonly req: H1Request;
  readonly handler: ExchangeHandler;
}

/**
 * The connections to one upstream address: idle ones are reused last-in first-out, new ones are
 * opened up to `maxConnections`, and requests beyond that wait in order.
 *
 * Session limits (Finagle's ExpiringService, which sits below the pool) end a connection only
 * while it is idle: a checkout skips expired ones, and one unref'd timer, armed for the earliest
 * deadline among idle connections, closes them when nothing checks them out. A busy connection
 * past its lifetime closes when its exchange completes (H1Connection), so no request is cut.
 */
export class H1Pool implements ConnectionOwner {
  readonly opts: H1PoolOptions;
  readonly #idle: H1Connection[] = [];
  /** When each of `#idle` was released (epoch ms; 0 when no session limit is set), in step with it. */
  readonly #idleSince: number[] = [];
  /** Every open connection, with its birth time (epoch ms). */
  readonly #all = new Map<H1Connection, number>();
  readonly #queue: Queued[] = [];
  readonly #sessionIdleMs: number | null;
  readonly #lifeMs: number | null;
  readonly #expires: boolean;
  #sweepTimer: NodeJS.Timeout | undefined;
  /** When `#sweepTimer` fires (epoch ms). */
  #sweepAt = 0;
  #closed = false;
  #closedWaiters: (() => void)[] = [];

  constructor(opts: H1PoolOptions) {
    this.opts = opts;
    this.#sessionIdleMs = opts.sessionIdleTimeMs ?? null;
    this.#lifeMs = opts.lifeTimeMs;
    this.#expires = this.#sessionIdleMs !== null || this.#lifeMs !== null;
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
    for (;;) {
      const conn = this.#idle.pop();
      const since = this.#idleSince.pop();
      if (conn === undefined || since === undefined) break;
      // The sweep may not have run yet (a busy event loop): never hand out an expired connection.
      if (this.#expires && this.#expired(conn, since, Date.now())) {
        conn.destroy();
        continue;
      }
      conn.start(req, handler);
      return;
    }
    const max = this.opts.maxConnections;
    if (max === null || this.#all.size < max) {
      this.#open().start(req, handler);
      return;
    }
    this.#queue.push({ req, handler });
  }

  #open(): H1Connection {
    const fresh = new H1Connection(this);
    this.#all.set(fresh, this.#expires ? Date.now() : 0);
    return fresh;
  }

  /**
   * Whether an idle connection whose `keepAliveTimeoutMs` ran out stays open: while the pool is at
   * `minConnections` or below. The session idle time is the pool's own business (see #sweep).
   */
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
    if (!this.#expires) {
      this.#idleSince.push(0);
      return;
    }
    const now = Date.now();
    this.#idleSince.push(now);
    this.#schedule(this.#deadline(conn, now));
  }

  /** A connection is gone: forget it, and let a waiting request open a new one. */
  removed(conn: H1Connection): void {
    this.#all.delete(conn);
    const i = this.#idle.indexOf(conn);
    if (i >= 0) {
      this.#idle.splice(i, 1);
      this.#idleSince.splice(i, 1);
    }
    const next = this.#queue.shift();
    if (next !== undefined) {
      this.#open().start(next.req, next.handler);
      return;
    }
    if (this.#closed && this.#all.size === 0) this.#settleClosed();
  }

  /** When an idle connection released at `since` expires (epoch ms; Infinity: never). */
  #deadline(conn: H1Connection, since: number): number {
    const idle = this.#sessionIdleMs === null ? Infinity : since + this.#sessionIdleMs;
    const life = this.#lifeMs === null ? Infinity : (this.#all.get(conn) ?? 0) + this.#lifeMs;
    return idle < life ? idle : life;
  }

  #expired(conn: H1Connection, since: number, now: number): boolean {
    return now >= this.#deadline(conn, since);
  }

  /** Makes the sweep run by `at` (one timer per pool; it only moves earlier). */
  #schedule(at: number): void {
    if (at === Infinity || this.#closed) return;
    if (this.#sweepTimer !== undefined) {
      if (this.#sweepAt <= at) return;
      clearTimeout(this.#sweepTimer);
    }
    this.#sweepAt = at;
    this.#sweepTimer = setTimeout(this.#sweep, Math.max(0, at - Date.now()));
    this.#sweepTimer.unref();
  }

  /** Closes the idle connections past a session limit, then waits for the next deadline. */
  readonly #sweep = (): void => {
    this.#sweepTimer = undefined;
    const now = Date.now();
    let next = Infinity;
    // Backwards: destroy() splices the connection out of #idle (through removed()).
    for (let i = this.#idle.length - 1; i >= 0; i--) {
      const conn = this.#idle[i];
      const since = this.#idleSince[i];
      if (conn === undefined || since === undefined) continue;
      const at = this.#deadline(conn, since);
      if (now >= at) conn.destroy();
      else if (at < next) next = at;
    }
    this.#schedule(next);
  };

  /** Stops taking requests; queued and in-flight ones finish, then connections close. */
  close(): Promise<void> {
    this.#closed = true;
    this.#stopSweep();
    this.#idleSince.length = 0;
    for (const c of this.#idle.splice(0)) c.destroy();
    if (this.#all.size === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#closedWaiters.push(resolve));
  }

  /** Closes every connection now, failing in-flight and queued requests. */
  destroy(): Promise<void> {
    this.#closed = true;
    this.#stopSweep();
    for (const q of this.#queue.splice(0)) q.handler.onResponseError(NOOP_CONTROLLER, new PoolClosedError());
    for (const c of [...this.#all.keys()]) c.destroy(new PoolClosedError());
    this.#settleClosed();
    return Promise.resolve();
  }

  #stopSweep(): void {
    clearTimeout(this.#sweepTimer);
    this.#sweepTimer = undefined;
  }

  #settleClosed(): void {
    const ws = this.#closedWaiters;
    this.#closedWaiters = [];
    for (const w of ws) w();
  }
}

const NOOP_CONTROLLER: ExchangeController = Object.freeze({ abort() {}, pause() {}, resume() {} });
