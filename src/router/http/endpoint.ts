import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool } from 'undici';
import type { Address } from '../../naming/index.js';
import { addressKey } from '../../naming/index.js';
import type { BalancerNode } from '../../service/balancer/types.js';
import { FailureAccrualState, type FailureAccrualPolicyFactory } from '../../service/policy/index.js';
import { UpstreamExchange } from '../../protocol/http/upstream.js';

/** How connections to one endpoint are made and kept (client params, resolved). */
export interface EndpointOptions {
  readonly maxConnections: number | null;
  readonly maxWaiters: number;
  readonly keepAliveTimeoutMs: number;
  readonly keepAliveMaxTimeoutMs: number;
  readonly lifeTimeMs: number | null;
  readonly maxHeaderBytes: number;
  readonly maxResponseBytes: number;
  readonly connectTimeoutMs: number;
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
  readonly #pool: Pool;
  readonly #opts: EndpointOptions;
  #closed = false;
  /** Fail-fast: after a connection failure the endpoint sits out until this time (epoch ms). */
  #failFastUntil = 0;
  #failFastMs = 0;
  readonly #onDone = (): void => {
    this.load--;
  };

  constructor(address: Address, opts: EndpointOptions) {
    this.address = address;
    this.key = addressKey(address);
    this.weight = address.weight > 0 ? address.weight : 1;
    this.#opts = opts;
    this.accrual = new FailureAccrualState(opts.accrual());
    const scheme = opts.tls === undefined ? 'http' : 'https';
    this.#pool = new Pool(`${scheme}://${this.key}`, {
      connections: opts.maxConnections,
      pipelining: 1,
      keepAliveTimeout: opts.keepAliveTimeoutMs,
      keepAliveMaxTimeout: opts.keepAliveMaxTimeoutMs,
      clientTtl: opts.lifeTimeMs,
      maxHeaderSize: opts.maxHeaderBytes,
      headersTimeout: 0,
      bodyTimeout: 0,
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
    });
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

  get closed(): boolean {
    return this.#closed;
  }

  /** Open connections (for the client's `connections` gauge). */
  get connections(): number {
    return this.#closed ? 0 : this.#pool.stats.connected;
  }

  /** True when one more request would exceed the pool's connections plus waiters. */
  get saturated(): boolean {
    const max = this.#opts.maxConnections;
    return max !== null && this.load >= max + this.#opts.maxWaiters;
  }

  /** Sends `req`; the exchange's `head` settles with the response head or the failure. */
  dispatch(req: OutboundRequest): UpstreamExchange {
    const ex = new UpstreamExchange(this.#opts.maxResponseBytes, this.#onDone);
    this.load++;
    this.#pool.dispatch(
      {
        path: req.path,
        method: req.method,
        headers: req.headers,
        body: req.body,
        upgrade: req.upgrade,
      },
      ex,
    );
    return ex;
  }

  /** Stops taking requests; in-flight ones finish, then connections close. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return this.#pool.close().catch(() => undefined);
  }

  /** Closes every connection now, failing in-flight requests. */
  destroy(): Promise<void> {
    this.#closed = true;
    return this.#pool.destroy().catch(() => undefined);
  }
}
