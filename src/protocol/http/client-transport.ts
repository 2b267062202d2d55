import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import type { Address } from '../../naming/index.js';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import { addressKey } from '../../naming/index.js';
import { UpstreamExchange, type ResponseBodyLimits } from './upstream.js';
import { H1Pool } from './h1/pool.js';

/** How connections to one HTTP/1.1 endpoint are made and kept (client params, resolved). */
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
  readonly tls: ClientTlsSettings | undefined;
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
  /** The inbound body is chunked (streamed): never retried once sent. */
  chunked: boolean;
  /** The client's Host while an attempt carries an address set's authority (see host-rewrite.ts). */
  hostBeforeRewrite: string | null | undefined;
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
 * The connections of one HTTP/1.1 endpoint: the lean h1 pool for plaintext, undici for TLS, and a
 * client of its own per upgrade request. The router core's `Transport` for HTTP/1.1.
 */
export class HttpTransport {
  readonly #key: string;
  /** Plain-HTTP endpoints: the lean client (upgrades still take an undici connection). */
  readonly #h1: H1Pool | undefined;
  /** TLS endpoints: undici, made on first use. */
  #pool: Undici.Pool | undefined;
  /** Upgrade requests in flight, each on a client of its own (see {@link HttpTransport.dispatch}). */
  readonly #upgrades = new Set<Undici.Client>();
  readonly #opts: EndpointOptions;

  constructor(address: Address, opts: EndpointOptions) {
    this.#key = addressKey(address);
    this.#opts = opts;
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
    return `${this.#opts.tls === undefined ? 'http' : 'https'}://${this.#key}`;
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

  /** Open connections (for the client's `connections` gauge). */
  get connections(): number {
    // Also after close(): connections under requests still running stay open until they finish.
    return (this.#h1?.connected ?? 0) + (this.#pool?.stats.connected ?? 0);
  }

  /** True when `load` requests fill the pool's connections plus waiters. */
  saturated(load: number): boolean {
    const max = this.#opts.maxConnections;
    return max !== null && load >= max + this.#opts.maxWaiters;
  }

  /** Sends `req`; the exchange's `head` settles with the response head or the failure. */
  dispatch(req: OutboundRequest, onDone: (ex: UpstreamExchange) => void): UpstreamExchange {
    const h1 = this.#h1;
    if (h1 !== undefined && req.upgrade === null) {
      const ex = new UpstreamExchange(this.#opts.responseBody, onDone);
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
      const ex = new UpstreamExchange(this.#opts.responseBody, onDone);
      this.#undici().dispatch(options, ex);
      return ex;
    }
    // An upgrade's connection is never reused (a 101 takes it, a refusal closes it), and a pool
    // whose upgrade request was aborted opens a spare connection at once: a client of its own,
    // destroyed when the exchange ends, leaves nothing behind.
    const client = new (undici().Client)(this.#origin(), this.#undiciOptions());
    this.#upgrades.add(client);
    const ex = new UpstreamExchange(this.#opts.responseBody, (done) => {
      onDone(done);
      this.#upgrades.delete(client);
      void client.destroy().catch(() => undefined);
    });
    client.dispatch(options, ex);
    return ex;
  }

  /** Stops taking requests; in-flight ones finish, then connections close. */
  close(): Promise<void> {
    return Promise.all([this.#h1?.close(), this.#pool?.close().catch(() => undefined)]).then(() => undefined);
  }

  /** Closes every connection now, failing in-flight requests. */
  destroy(): Promise<void> {
    const upgrades = [...this.#upgrades].map((c) => c.destroy().catch(() => undefined));
    return Promise.all([this.#h1?.destroy(), this.#pool?.destroy().catch(() => undefined), ...upgrades]).then(() => undefined);
  }
}

const INT32_MAX = 2147483647;
/** Keep-alive when the config says "forever": undici still honours the server's own timeout hint. */
const FOREVER_KEEPALIVE_MS = 600_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** `responseIdleTimeoutMs` when not configured: Envoy's stream idle time; long polls fit under it. */
const RESPONSE_IDLE_TIMEOUT_MS = 300_000;

/** The client policy's connection settings (`hostConnectionPool`, `clientSession`, `responseIdleTimeoutMs`). */
export interface ConnectionPolicy {
  readonly hostConnectionPool: { readonly minSize: number; readonly maxSize: number; readonly idleTimeMs?: number | undefined; readonly maxWaiters: number };
  readonly clientSession: { readonly idleTimeMs?: number | undefined; readonly lifeTimeMs?: number | undefined };
  readonly responseIdleTimeoutMs?: number | undefined;
}

/** Limits of the http router that shape every client. */
export interface ClientLimits {
  readonly maxHeaderBytes: number;
  /** `maxResponseKB`, `streamingEnabled` and `maxChunkKB` as every exchange applies them. */
  readonly responseBody: ResponseBodyLimits;
}

/** One client's endpoint options from its policy, its TLS settings and the router's limits. */
export function endpointOptions(p: ConnectionPolicy, tls: ClientTlsSettings | undefined, limits: ClientLimits): EndpointOptions {
  const pool = p.hostConnectionPool;
  const session = p.clientSession;
  // Two different limits (Finagle's pool idle time spares minSize connections; its session idle
  // time, below the pool, closes any connection): the h1 pool gets each; undici, with no minSize,
  // only ever applies the shorter one.
  const sessionIdle = session.idleTimeMs ?? null;
  const anyIdle = sessionIdle === null ? pool.idleTimeMs : Math.min(sessionIdle, pool.idleTimeMs ?? Infinity);
  return {
    maxConnections: pool.maxSize >= INT32_MAX ? null : pool.maxSize,
    maxWaiters: pool.maxWaiters,
    minConnections: pool.minSize,
    keepAliveTimeoutMs: pool.idleTimeMs ?? FOREVER_KEEPALIVE_MS,
    keepAliveMaxTimeoutMs: anyIdle ?? FOREVER_KEEPALIVE_MS,
    sessionIdleTimeMs: sessionIdle,
    lifeTimeMs: session.lifeTimeMs ?? null,
    maxHeaderBytes: limits.maxHeaderBytes,
    responseBody: limits.responseBody,
    connectTimeoutMs: CONNECT_TIMEOUT_MS,
    responseIdleTimeoutMs: p.responseIdleTimeoutMs ?? RESPONSE_IDLE_TIMEOUT_MS,
    tls,
  };
}
