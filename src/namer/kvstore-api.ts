import { createRequire } from 'node:module';
import type * as Undici from 'undici';
import { type TlsMaterial, nodeTlsOptions } from '../config/index.js';
import { PrxError, errorMessage } from '../core/errors.js';
import type { Closable } from '../naming/index.js';
import type { Backoff, BackoffStream } from '../service/policy/index.js';

/**
 * The part of Consul's HTTP API the `io.prx.kvstore` namer reads: `/v1/agent/self`,
 * `/v1/catalog/services`, `/v1/catalog/service/<name>` and `/v1/health/service/<name>`, each
 * watched with blocking queries (`index` from the last answer's `X-Consul-Index`, and `wait`).
 */

/** Consul answered with an error status, or something that is not its API. */
export class ConsulApiError extends PrxError {
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: ErrorOptions) {
    super('PRX_ERR_KVSTORE_API', message, options);
    this.status = status;
  }
}

/** Consul knows no such datacenter (its `No path to datacenter` answer): the names in it are Neg. */
export class UnknownDatacenterError extends PrxError {
  constructor(dc: string) {
    super('PRX_ERR_KVSTORE_NO_DATACENTER', `Consul has no path to datacenter ${dc}`);
  }
}

/** One answer: its status, body and `X-Consul-Index` (undefined when absent or not a number). */
export interface ConsulAnswer {
  readonly status: number;
  readonly body: string;
  readonly index: bigint | undefined;
}

export interface ConsulClientOptions {
  readonly host: string;
  readonly port: number;
  readonly tls: TlsMaterial | undefined;
  readonly token: string | undefined;
  /** How long a blocking query may wait for a change (Consul's `wait`). */
  readonly blockingWaitMs: number;
}

// undici costs tens of milliseconds to load: a proxy without this namer never loads it.
let undiciModule: typeof Undici | undefined;
function undici(): typeof Undici {
  undiciModule ??= createRequire(import.meta.url)('undici') as typeof Undici;
  return undiciModule;
}

/** An HTTP/1.1 connection pool to one Consul agent, plain or TLS, sending the ACL token. */
export class ConsulClient {
  readonly #origin: string;
  readonly #opts: ConsulClientOptions;
  #agent: Undici.Agent | undefined;
  #closed = false;

  constructor(opts: ConsulClientOptions) {
    this.#opts = opts;
    const h = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
    this.#origin = `${opts.tls === undefined ? 'http' : 'https'}://${h}:${opts.port}`;
  }

  get closed(): boolean {
    return this.#closed;
  }

  get blockingWaitMs(): number {
    return this.#opts.blockingWaitMs;
  }

  #dispatcher(): Undici.Agent {
    if (this.#agent === undefined) {
      const tls = this.#opts.tls;
      this.#agent = new (undici().Agent)({
        // Consul adds up to wait/16 of jitter to a blocking query; the rest is slack for a slow agent.
        headersTimeout: Math.ceil(this.#opts.blockingWaitMs * 1.1) + 30_000,
        bodyTimeout: 60_000,
        ...(tls === undefined ? {} : { connect: nodeTlsOptions(tls) as NonNullable<Undici.Agent.Options['connect']> }),
      });
    }
    return this.#agent;
  }

  /** A GET of `path` with `query`; network failures and error statuses reject with a {@link ConsulApiError}. */
  async get(path: string, query: URLSearchParams, signal: AbortSignal): Promise<ConsulAnswer> {
    const qs = query.toString();
    const url = `${this.#origin}${path}${qs === '' ? '' : `?${qs}`}`;
    let status: number;
    let body: string;
    let indexText: string | undefined;
    if (this.#closed) throw new ConsulApiError(`GET ${path}: the namer is closed`);
    try {
      const res = await undici().request(url, {
        method: 'GET',
        dispatcher: this.#dispatcher(),
        signal,
        ...(this.#opts.token === undefined ? {} : { headers: { 'X-Consul-Token': this.#opts.token } }),
      });
      body = await res.body.text();
      status = res.statusCode;
      const h = res.headers['x-consul-index'];
      indexText = Array.isArray(h) ? h[0] : h;
    } catch (e) {
      const code = (e as { code?: unknown } | undefined)?.code;
      throw new ConsulApiError(`GET ${path} failed: ${errorMessage(e)}${typeof code === 'string' ? ` (${code})` : ''}`, undefined, { cause: e });
    }
    if (status >= 400) {
      const text = body.trim();
      if (text.includes('No path to datacenter')) throw new UnknownDatacenterError(query.get('dc') ?? '');
      throw new ConsulApiError(`GET ${path} answered ${status}${text === '' ? '' : `: ${text.slice(0, 200)}`}`, status);
    }
    const index = indexText !== undefined && /^[0-9]{1,20}$/.test(indexText) ? BigInt(indexText) : undefined;
    return { status, body, index };
  }

  /** Drops the pool, failing what is still in flight (watches abort theirs first). */
  close(): void {
    this.#closed = true;
    const agent = this.#agent;
    this.#agent = undefined;
    if (agent !== undefined) void agent.destroy().catch(() => undefined);
  }
}

/** What a blocking watch reports: each answer, converted, and each failure (with the delay before the retry). */
export interface WatchSink<T> {
  value(v: T): void;
  error(e: unknown, retryInMs: number): void;
}

/**
 * Watches `path` with blocking queries: the first request has no index and answers at once; each
 * next one sends the last `X-Consul-Index` and `wait`, so Consul answers when the data changes (or
 * the wait ends, with the same data). An index that goes backwards (a restored or new Consul)
 * starts over without one; an answer without an index cannot block, so the next request waits
 * for a backoff delay instead of spinning. Failures are retried after `backoff`. Closing aborts
 * the request in flight.
 */
export function blockingWatch<T>(
  client: ConsulClient,
  path: string,
  query: () => URLSearchParams,
  convert: (a: ConsulAnswer) => T,
  sink: WatchSink<T>,
  backoff: Backoff,
): Closable {
  const abort = new AbortController();
  let stopped = false;
  let index: bigint | undefined;
  let delays: BackoffStream | undefined;
  let timer: NodeJS.Timeout | undefined;
  const later = (ms: number): void => {
    timer = setTimeout(() => void step(), ms);
    timer.unref();
  };
  const step = async (): Promise<void> => {
    const q = query();
    if (index !== undefined) {
      q.set('index', index.toString());
      q.set('wait', `${Math.max(1, Math.ceil(client.blockingWaitMs / 1000))}s`);
    }
    let answer: ConsulAnswer;
    let value: T;
    try {
      answer = await client.get(path, q, abort.signal);
      if (stopped) return;
      value = convert(answer);
    } catch (e) {
      if (stopped || client.closed) return;
      index = undefined;
      delays ??= backoff.stream();
      const wait = delays.nextMs();
      sink.error(e, wait);
      return later(wait);
    }
    delays = undefined;
    const next = answer.index;
    sink.value(value);
    if (stopped) return;
    if (next === undefined || next === 0n) {
      index = undefined;
      return later(backoff.stream().nextMs());
    }
    index = index !== undefined && next < index ? undefined : next;
    void step();
  };
  void step();
  return {
    close() {
      stopped = true;
      clearTimeout(timer);
      abort.abort();
    },
  };
}

/** Reads a JSON body of the expected shape (an array or an object), or fails with a {@link ConsulApiError}. */
export function jsonBody<T>(a: ConsulAnswer, path: string, shape: 'array' | 'object'): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(a.body);
  } catch (e) {
    throw new ConsulApiError(`GET ${path}: the answer is not JSON: ${errorMessage(e)}`, a.status);
  }
  const ok = shape === 'array' ? Array.isArray(parsed) : typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
  if (!ok) throw new ConsulApiError(`GET ${path}: expected a JSON ${shape}`, a.status);
  return parsed as T;
}

/** One instance of a service, from either the catalog or the health endpoint. */
export interface ServiceInstance {
  readonly nodeAddress: string;
  readonly serviceAddress: string;
  readonly port: number | undefined;
  readonly tags: readonly string[];
  readonly meta: Readonly<Record<string, string>>;
  /** The worst of its checks (health endpoint only). */
  readonly status: HealthStatus | undefined;
}

export const HEALTH_STATUSES = ['passing', 'warning', 'critical', 'maintenance'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

interface CatalogEntry {
  Address?: string;
  ServiceAddress?: string;
  ServicePort?: number;
  ServiceTags?: string[] | null;
  ServiceMeta?: Record<string, string> | null;
}

interface HealthEntry {
  Node?: { Address?: string };
  Service?: { Address?: string; Port?: number; Tags?: string[] | null; Meta?: Record<string, string> | null };
  Checks?: { CheckID?: string; Status?: string }[] | null;
}

/** `/v1/catalog/service/<name>`'s entries. */
export function catalogInstances(entries: readonly CatalogEntry[]): ServiceInstance[] {
  return entries.map((e) => ({
    nodeAddress: e.Address ?? '',
    serviceAddress: e.ServiceAddress ?? '',
    port: e.ServicePort,
    tags: e.ServiceTags ?? [],
    meta: e.ServiceMeta ?? {},
    status: undefined,
  }));
}

/** `/v1/health/service/<name>`'s entries, each with the worst status of its checks. */
export function healthInstances(entries: readonly HealthEntry[]): ServiceInstance[] {
  return entries.map((e) => ({
    nodeAddress: e.Node?.Address ?? '',
    serviceAddress: e.Service?.Address ?? '',
    port: e.Service?.Port,
    tags: e.Service?.Tags ?? [],
    meta: e.Service?.Meta ?? {},
    status: worstStatus(e.Checks ?? []),
  }));
}

// Maintenance mode is a critical check with a reserved id; it counts as its own status.
const RANK: Record<HealthStatus, number> = { passing: 0, warning: 1, maintenance: 2, critical: 3 };

function worstStatus(checks: readonly { CheckID?: string; Status?: string }[]): HealthStatus {
  let worst: HealthStatus = 'passing';
  for (const c of checks) {
    const id = c.CheckID ?? '';
    let s: HealthStatus;
    if (id === '_node_maintenance' || id.startsWith('_service_maintenance:')) s = 'maintenance';
    else if (c.Status === 'passing' || c.Status === 'warning') s = c.Status;
    else s = 'critical';
    if (RANK[s] > RANK[worst]) worst = s;
  }
  return worst;
}
