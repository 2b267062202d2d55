import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type { Address } from '../../naming/index.js';
import { addressKey } from '../../naming/index.js';
import type { BalancerNode } from '../../service/balancer/types.js';
import { FailureAccrualState, type FailureAccrualPolicyFactory } from '../../service/policy/index.js';
import { UpstreamExchange, type ResponseBodyLimits } from '../../protocol/http/upstream.js';
import { H1Pool } from '../../protocol/http/h1/pool.js';
import { PrxError } from '../../core/errors.js';

/** How connections to one endpoint are made and kept (client params, resolved). */
export interface EndpointOptions {
  readonly maxConnections: number | null;
  readonly maxWaiters: number;
  /** `hostConnectionPool.minSize`: connections kept open however long they sit idle. */
  readonly minConnections: number;
  /** `hostConnectionPool.idleTimeMs`: idle time of the connections above `minConnections`. */
  readonly keepAliveTimeoutMs: number;
  readonly keepAliveMaxTimeoutMs: number;
  /** `clientSession.idleTimeMs`: any connection idle this long closes, `minConnections` ones too; null: forever. */
  readonly sessionIdleTimeMs: number | null;
  readonly lifeTimeMs: number | null;
  readonly maxHeaderBytes: number;
  readonly responseBody: ResponseBodyLimits;
  readonly connectTimeoutMs: number;
  /** `responseIdleTimeoutMs`: how long a due response may go without an upstream byte (0: no limit). */
  readonly responseIdleTimeoutMs: number;
  readonly tls: EndpointTls | undefined;
  readonly accrual: FailureAccrualPolicyFactory;
}

export interface EndpointTls {
  readonly servername: string | undefined;
  readonly ca: Buffer | undefined;
  readonly rejectUnauthorized: boolean;
}

/** A request as sent upstream. `body` is null, a replayable buffer, or a one-shot stream. */
export interface OutboundRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer | Readable | null;
  upgrade: string | null;
  /** The inbound TLS client certificate as an `x-forwarded-client-cert` value, if any. */
  clientCert: string | undefined;
}

// undici costs ~60 ms of start-up to load and is only needed for TLS upstreams and upgrades.
let undiciModule: typeof Undici | undefined;
function undici(): typeof Undici {
  undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici;
  return undiciModule;
}

/** Whether a request body can be sent again (none, buffered, or a stream not yet read). */
export function isReplayable(out: OutboundRequest): boolean {
  const b = out.body;
  return b === null || Buffer.isBuffer(b) || !b.readableDidRead;
}

/**
 * The client went away (reset, or ended its side before any answer began) or stopped sending its
 * body while its request was in flight: the upstream work is cancelled (Finagle's
 * CancelledRequestException). Counted under `failures/RequestCancelledError` in the client and
 * service stats, but never against the endpoint: failure accrual and the balancer ignore it.
 */
export class RequestCancelledError extends PrxError {
  constructor() {
    super('PRX_ERR_REQUEST_CANCELLED', 'request cancelled: the client went away');
  }
}

/**
 * The request's current upstream exchange, so a timeout or the client going away can abort it.
 * One per inbound request, reused across attempts.
 */
export class AttemptHandle {
  exchange: UpstreamExchange | undefined;
  /** Set when the inbound side is gone: no further attempt may start. */
  cancelled: Error | undefined;

  /** Aborts the exchange in flight; `final` also stops further attempts. */
  abort(err: Error, final: boolean): void {
    if (final) this.cancelled = err;
    this.exchange?.abort(err);
  }
}

/**
 * One upstream address: its connection pool, its load (requests in flight, including those
 * queued for a connection) and its failure-accrual state. What load balancers pick from.
 */
export class Endpoint implements BalancerNode {
  readonly key: string;
  readonly address: Address;
  readonly weight: number;
  load = 0;
  readonly accrual: FailureAccrualState;
  /** Plain-HTTP endpoints: the lean client (upgrades still take an undici connection). */
  readonly #h1: H1Pool | undefined;
  /** TLS endpoints: undici, made on first use. */
  #pool: Undici.Pool | undefined;
  /** Upgrade requests in flight, each on a client of its own (see {@link Endpoint.dispatch}). */
  readonly #upgrades = new Set<Undici.Client>();
  readonly #opts: EndpointOptions;
  #closed = false;
  /** Fail-fast: after a connection failure the endpoint sits out until this time (epoch ms). */
  #failFastUntil = 0;
  #failFastMs = 0;
  /** When a warning about this endpoint was last logged (epoch ms). */
  #warnedAt = -Infinity;
  /** Told when a body whose head was classified a success completes (the success counts then). */
  readonly #onBodySucceeded: ((e: Endpoint) => void) | undefined;
  readonly #onDone = (ex: UpstreamExchange): void => {
    this.load--;
    if (!ex.successPending) return;
    ex.successPending = false;
    // A complete body confirms the success counted at its head. One ended for a reason that is not
    // the endpoint's (the client left, its head could not be written; the endpoint's own body
    // failures are recorded before this) is ignored, which still releases a probe it held:
    // otherwise a probing endpoint would wait for an outcome that never comes.
    if (ex.error === undefined) this.#onBodySucceeded?.(this);
    else this.accrual.recordIgnored();
  };

  constructor(address: Address, opts: EndpointOptions, onBodySucceeded?: (e: Endpoint) => void) {
    this.#onBodySucceeded = onBodySucceeded;
    this.address = address;
    this.key = addressKey(address);
    this.weight = address.weight > 0 ? address.weight : 1;
    this.#opts = opts;
    this.accrual = new FailureAccrualState(opts.accrual());
    this.#h1 =
      opts.tls === undefined
        ? new H1Pool({
            host: address.host,
            port: address.port,
            maxConnections: opts.maxConnections,
            minConnections: opts.minConnections,
            keepAliveTimeoutMs: opts.keepAliveTimeoutMs,
            sessionIdleTimeMs: opts.sessionIdleTimeMs,
            lifeTimeMs: opts.lifeTimeMs,
            maxHeaderBytes: opts.maxHeaderBytes,
            connectTimeoutMs: opts.connectTimeoutMs,
            responseIdleTimeoutMs: opts.responseIdleTimeoutMs,
          })
        : undefined;
  }

  #undici(): Undici.Pool {
    if (this.#pool !== undefined) return this.#pool;
    const opts = this.#opts;
    this.#pool = new (undici().Pool)(this.#origin(), {
      ...this.#undiciOptions(),
      connections: opts.maxConnections,
      clientTtl: opts.lifeTimeMs,
    });
    return this.#pool;
  }

  #origin(): string {
    return `${this.#opts.tls === undefined ? 'http' : 'https'}://${this.key}`;
  }

  /** What undici's pool and an upgrade's own client share. */
  #undiciOptions(): Undici.Client.Options {
    const opts = this.#opts;
    return {
      pipelining: 1,
      // undici has no minSize: every connection is subject to both idle times.
      keepAliveTimeout: opts.sessionIdleTimeMs === null ? opts.keepAliveTimeoutMs : Math.min(opts.keepAliveTimeoutMs, opts.sessionIdleTimeMs),
      keepAliveMaxTimeout: opts.keepAliveMaxTimeoutMs,
      maxHeaderSize: opts.maxHeaderBytes,
      // undici's own idle timers: to the response head, and between body chunks.
      headersTimeout: opts.responseIdleTimeoutMs,
      bodyTimeout: opts.responseIdleTimeoutMs,
      connect: {
        timeout: opts.connectTimeoutMs,
        ...(opts.tls === undefined
          ? {}
          : {
              rejectUnauthorized: opts.tls.rejectUnauthorized,
              ...(opts.tls.servername === undefined ? {} : { servername: opts.tls.servername }),
              ...(opts.tls.ca === undefined ? {} : { ca: opts.tls.ca }),
            }),
      },
    };
  }

  get available(): boolean {
    return !this.#closed && this.accrual.isAvailable && (this.#failFastUntil === 0 || Date.now() >= this.#failFastUntil);
  }

  /** Takes the endpoint out after a connection failure, doubling the pause each time (failFast). */
  markFailFast(minMs: number, maxMs: number): void {
    this.#failFastMs = this.#failFastMs === 0 ? minMs : Math.min(maxMs, this.#failFastMs * 2);
    this.#failFastUntil = Date.now() + this.#failFastMs;
  }

  clearFailFast(): void {
    this.#failFastUntil = 0;
    this.#failFastMs = 0;
  }

  /** True at most once per `intervalMs`: rate-limits warnings about this endpoint. */
  warnDue(intervalMs: number): boolean {
    const now = Date.now();
    if (now - this.#warnedAt < intervalMs) return false;
    this.#warnedAt = now;
    return true;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Open connections (for the client's `connections` gauge). */
  get connections(): number {
    // Also after close(): connections under requests still running stay open until they finish.
    return (this.#h1?.connected ?? 0) + (this.#pool?.stats.connected ?? 0);
  }

  /** True when one more request would exceed the pool's connections plus waiters. */
  get saturated(): boolean {
    const max = this.#opts.maxConnections;
    return max !== null && this.load >= max + this.#opts.maxWaiters;
  }

  /** Sends `req`; the exchange's `head` settles with the response head or the failure. */
  dispatch(req: OutboundRequest): UpstreamExchange {
    this.load++;
    const h1 = this.#h1;
    if (h1 !== undefined && req.upgrade === null) {
      const ex = new UpstreamExchange(this.#opts.responseBody, this.#onDone);
      h1.dispatch(req, ex);
      return ex;
    }
    // TLS server name per request: undici otherwise takes it from the Host header, which names
    // the logical service, not the certificate `commonName` expects. (undici reads this option
    // but does not declare it.)
    const options: Undici.Dispatcher.DispatchOptions & { servername?: string } = {
      path: req.path,
      method: req.method,
      headers: req.headers,
      body: req.body,
      upgrade: req.upgrade,
    };
    const servername = this.#opts.tls?.servername;
    if (servername !== undefined) options.servername = servername;
    if (req.upgrade === null) {
      const ex = new UpstreamExchange(this.#opts.responseBody, this.#onDone);
      this.#undici().dispatch(options, ex);
      return ex;
    }
    // An upgrade's connection is never reused (a 101 takes it, a refusal closes it), and a pool
    // whose upgrade request was aborted opens a spare connection at once: a client of its own,
    // destroyed when the exchange ends, leaves nothing behind.
    const client = new (undici().Client)(this.#origin(), this.#undiciOptions());
    this.#upgrades.add(client);
    const ex = new UpstreamExchange(this.#opts.responseBody, (done) => {
      this.#onDone(done);
      this.#upgrades.delete(client);
      void client.destroy().catch(() => undefined);
    });
    client.dispatch(options, ex);
    return ex;
  }

  /** Stops taking requests; in-flight ones finish, then connections close. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return Promise.all([this.#h1?.close(), this.#pool?.close().catch(() => undefined)]).then(() => undefined);
  }

  /** Closes every connection now, failing in-flight requests. */
  destroy(): Promise<void> {
    this.#closed = true;
    const upgrades = [...this.#upgrades].map((c) => c.destroy().catch(() => undefined));
    return Promise.all([this.#h1?.destroy(), this.#pool?.destroy().catch(() => undefined), ...upgrades]).then(() => undefined);
  }
}
