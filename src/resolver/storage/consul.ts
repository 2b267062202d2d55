import { z } from 'zod';
import { choice, durationMs, ip, kindShape, loadTlsMaterial, namerTlsSchema, port, lazySchema } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import type { Dtab } from '../../naming/index.js';
import { type Backoff, constant, exponentialJittered, jittered } from '../../service/policy/index.js';
import { CachedDtabStore, DtabCache, type Observed } from './cache.js';
import { type StoredEntry, checkNamespace, decodeStored, dtabText, isValidNamespace, readDecimalVersion, textVersion } from './codec.js';
import {
  DtabNamespaceAbsentError,
  DtabNamespaceExistsError,
  DtabVersionMismatchError,
  StorageForbiddenError,
  StorageUnavailableError,
} from './errors.js';
import { type HttpResult, StorageHttpClient, header, refusedBeforeSending } from './http-client.js';
import { defineStorage } from './kind.js';
import { RetryTimer, keyPathPrefix } from './retry.js';
import type { DtabStore, StorageContext } from './types.js';

const consistency = lazySchema(() => z.enum(['default', 'stale', 'consistent']));

/**
 * Delays between retries: `exponential` (the default: Finagle's exponential jitter from `minMs` 1
 * to `maxMs` 60000, i.e. 1 ms growing to 1 minute), `jittered` (decorrelated jitter between
 * `minMs` and `maxMs`, what namerd used) or `constant` (`ms`).
 */
export const consulBackoffSchema = lazySchema(() => choice(
  'kind',
  {
    exponential: z.strictObject({ kind: z.literal('exponential'), minMs: durationMs.default(1), maxMs: durationMs.default(60_000) }),
    jittered: z.strictObject({ kind: z.literal('jittered'), minMs: durationMs.default(1), maxMs: durationMs.default(60_000) }),
    constant: z.strictObject({ kind: z.literal('constant'), ms: durationMs }),
  },
  { default: 'exponential' },
));

export type ConsulBackoffConfig = z.output<typeof consulBackoffSchema>;

export function consulBackoff(cfg: ConsulBackoffConfig): Backoff {
  switch (cfg.kind) {
    case 'exponential':
      return exponentialJittered(Math.min(cfg.minMs, cfg.maxMs), cfg.maxMs);
    case 'jittered':
      return jittered(Math.min(cfg.minMs, cfg.maxMs), cfg.maxMs);
    case 'constant':
      return constant(cfg.ms);
  }
}

/**
 * `io.prx.kvstore`: dtabs in Consul's KV store. Namespace `ns` (letters, digits, `_`, `-`) is the
 * key `<pathPrefix>/<ns>` (`/v1/kv/namerd/dtabs/<ns>`) holding the dtab text; its version is the
 * key's ModifyIndex in decimal (ETag `MTc=` for 17), as namerd had it. Writes use check-and-set
 * (`?cas=<index>`; create: `cas=0`). One blocking query over the prefix (`?recurse&index=`) keeps
 * every namespace current.
 *
 * `token` is sent as `X-Consul-Token`, `datacenter` as `dc`, the consistency modes as
 * `stale`/`consistent`. Failed reads are retried after `backoff`; a write whose connection is
 * refused is retried the same way for up to `writeTimeoutMs` unless `failFast` (for a highly
 * available API behind a load balancer, where retrying elsewhere is the caller's business).
 *
 * ```yaml
 * storage:
 *   kind: io.prx.kvstore
 *   host: localhost
 *   port: 8500
 *   pathPrefix: /namerd/dtabs
 *   token: 0b8c…
 *   readConsistencyMode: stale
 *   backoff: {kind: exponential, minMs: 1, maxMs: 60000}
 * ```
 */
export const consulStorageSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.kvstore'),
  host: ip.default('localhost'),
  port: port.default(8500),
  pathPrefix: keyPathPrefix.default('/namerd/dtabs'),
  token: z.string().min(1).optional(),
  datacenter: z.string().min(1).optional(),
  readConsistencyMode: consistency.default('default'),
  writeConsistencyMode: consistency.default('default'),
  failFast: z.boolean().default(false),
  backoff: consulBackoffSchema,
  /** How long a write keeps retrying a refused connection (unless failFast). */
  writeTimeoutMs: durationMs.default(10_000),
  /** How long one blocking query waits for a change (Consul's `wait`; it caps it at 10 minutes). */
  blockingWaitMs: durationMs.default(300_000),
  tls: namerTlsSchema.optional(),
}));

export type ConsulStorageConfig = z.output<typeof consulStorageSchema>;

const CONSUL_NS = { pattern: /^[A-Za-z0-9_-]+$/, rule: 'Consul storage takes letters, digits, "_" and "-" only' };

interface KvEntry {
  readonly Key: string;
  readonly Value: string | null;
  readonly ModifyIndex: number;
}

export class ConsulDtabStore extends CachedDtabStore implements DtabStore {
  readonly #cfg: ConsulStorageConfig;
  readonly #ctx: StorageContext;
  readonly #http: StorageHttpClient;
  readonly #keyBase: string;
  readonly #backoff: Backoff;
  readonly #retry: RetryTimer;
  readonly #abort = new AbortController();
  #index = 0n;
  #closed = false;

  constructor(cfg: ConsulStorageConfig, ctx: StorageContext) {
    super(new DtabCache(ctx.log, CONSUL_NS));
    this.#cfg = cfg;
    this.#ctx = ctx;
    const tls = cfg.tls === undefined ? undefined : loadTlsMaterial(cfg.tls);
    this.#http = new StorageHttpClient(cfg.host, cfg.port, tls, { headersTimeoutMs: Math.ceil(cfg.blockingWaitMs * 1.1) + 30_000 });
    this.#keyBase = `/v1/kv${cfg.pathPrefix}/`;
    this.#backoff = consulBackoff(cfg.backoff);
    this.#retry = new RetryTimer(this.#backoff);
    ctx.stats.gauge(['connected'], () => (this.cache.health().ok ? 1 : 0));
    this.#poll();
  }

  async create(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns, CONSUL_NS);
    if (!(await this.#put(ns, dtab, 0n))) throw new DtabNamespaceExistsError(ns);
    await this.#reread(ns);
  }

  async update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void> {
    checkNamespace(ns, CONSUL_NS);
    const index = readDecimalVersion(version);
    // cas=0 would mean "create if absent": a zero or unreadable version can only mismatch.
    if (index !== undefined && index > 0n && (await this.#put(ns, dtab, index))) {
      await this.#reread(ns);
      return;
    }
    const now = await this.#reread(ns);
    throw now === undefined ? new DtabNamespaceAbsentError(ns) : new DtabVersionMismatchError(ns);
  }

  async put(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns, CONSUL_NS);
    await this.#put(ns, dtab, undefined);
    await this.#reread(ns);
  }

  async delete(ns: string, version?: Uint8Array): Promise<void> {
    checkNamespace(ns, CONSUL_NS);
    if (version !== undefined) {
      const index = readDecimalVersion(version);
      // cas=0 would delete nothing; a zero or unreadable version can only mismatch.
      if (index !== undefined && index > 0n) {
        const res = await this.#write('DELETE', `${this.#key(ns)}?${this.#query(this.#cfg.writeConsistencyMode, { cas: index.toString() })}`);
        if (res.body.trim() === 'true') {
          await this.#reread(ns);
          return;
        }
      }
      const now = await this.#reread(ns);
      throw now === undefined ? new DtabNamespaceAbsentError(ns) : new DtabVersionMismatchError(ns);
    }
    // Delete exactly the value read, so that "absent" is decided atomically with the delete.
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.#read(ns);
      if (cur === undefined) throw new DtabNamespaceAbsentError(ns);
      const res = await this.#write('DELETE', `${this.#key(ns)}?${this.#query(this.#cfg.writeConsistencyMode, { cas: cur.modifyIndex.toString() })}`);
      if (res.body.trim() === 'true') {
        await this.#reread(ns);
        return;
      }
    }
    throw new StorageUnavailableError(`Consul delete of ${ns} kept racing with other writers; try again`);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.close();
    this.cache.close();
    this.#abort.abort();
    await this.#http.close();
  }

  #key(ns: string): string {
    return this.#keyBase + ns;
  }

  #headers(): Record<string, string> {
    return this.#cfg.token === undefined ? {} : { 'X-Consul-Token': this.#cfg.token };
  }

  #query(mode: 'default' | 'stale' | 'consistent', extra: Record<string, string> = {}): string {
    const q = new URLSearchParams(extra);
    if (this.#cfg.datacenter !== undefined) q.set('dc', this.#cfg.datacenter);
    if (mode !== 'default') q.set(mode, 'true');
    return q.toString();
  }

  /** PUT with optional check-and-set; true when Consul applied it. */
  async #put(ns: string, dtab: Dtab, cas: bigint | undefined): Promise<boolean> {
    const q = this.#query(this.#cfg.writeConsistencyMode, cas === undefined ? {} : { cas: cas.toString() });
    const res = await this.#write('PUT', `${this.#key(ns)}?${q}`, dtabText(dtab));
    return res.body.trim() === 'true';
  }

  /** A write, retried while the connection is refused (nothing was sent) unless failFast. */
  async #write(method: 'PUT' | 'DELETE', path: string, body?: string): Promise<HttpResult> {
    const deadline = Date.now() + this.#cfg.writeTimeoutMs;
    const delays = this.#backoff.stream();
    for (;;) {
      if (this.#closed) throw new StorageUnavailableError('dtab storage is closed');
      try {
        const res = await this.#http.call(method, path, { headers: this.#headers(), ...(body === undefined ? {} : { body }) });
        return this.#checked(res, `${method} ${path}`);
      } catch (e) {
        const wait = delays.nextMs();
        if (this.#cfg.failFast || !refusedBeforeSending(e) || Date.now() + wait > deadline) {
          if (!(e instanceof StorageForbiddenError)) this.cache.unhealthy(e);
          throw e;
        }
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  #checked(res: HttpResult, what: string): HttpResult {
    if (res.status === 403) throw new StorageForbiddenError(`Consul refused ${what}: ${res.body.trim() || '403'}`);
    if (res.status >= 300 && res.status !== 404) throw new StorageUnavailableError(`Consul ${what} answered ${res.status}: ${res.body.trim()}`);
    return res;
  }

  /** The key's current value, straight from Consul. */
  async #read(ns: string): Promise<{ entry: StoredEntry; modifyIndex: bigint } | undefined> {
    const path = `${this.#key(ns)}?${this.#query(this.#cfg.writeConsistencyMode)}`;
    const res = this.#checked(await this.#http.call('GET', path, { headers: this.#headers() }), `GET ${path}`);
    if (res.status === 404) {
      this.cache.apply(ns, undefined, indexOf(res) ?? 0n);
      return undefined;
    }
    const kv = (JSON.parse(res.body) as KvEntry[])[0];
    if (kv === undefined) return undefined;
    const modifyIndex = BigInt(kv.ModifyIndex);
    return { entry: this.#entry(ns, kv), modifyIndex };
  }

  /** Reads a key after our write and records it, so the writer reads its own write at once. */
  async #reread(ns: string): Promise<StoredEntry | undefined> {
    const cur = await this.#read(ns);
    if (cur !== undefined) this.cache.apply(ns, cur.entry, cur.modifyIndex);
    return cur?.entry;
  }

  #entry(ns: string, kv: KvEntry): StoredEntry {
    const data = kv.Value === null ? Buffer.alloc(0) : Buffer.from(kv.Value, 'base64');
    return decodeStored(ns, data, textVersion(String(kv.ModifyIndex)));
  }

  /** The watch: blocking queries over the prefix, each from the index of the previous answer. */
  #poll(): void {
    if (this.#closed) return;
    const extra: Record<string, string> = { recurse: 'true' };
    if (this.#index > 0n) {
      extra['index'] = this.#index.toString();
      extra['wait'] = `${Math.ceil(this.#cfg.blockingWaitMs / 1000)}s`;
    }
    const path = `${this.#keyBase}?${this.#query(this.#cfg.readConsistencyMode, extra)}`;
    this.#http
      .call('GET', path, { headers: this.#headers(), signal: this.#abort.signal })
      .then((res) => this.#onList(this.#checked(res, `GET ${path}`)))
      .then(
        (next) => {
          if (next === 'now') this.#poll();
          else this.#retry.schedule(() => this.#poll());
        },
        (e: unknown) => {
          if (this.#closed) return;
          this.#ctx.log.debug({ err: errorMessage(e) }, 'consul blocking query failed');
          this.cache.unhealthy(e);
          this.#retry.schedule(() => this.#poll());
        },
      );
  }

  #onList(res: HttpResult): 'now' | 'later' {
    if (this.#closed) return 'later';
    const index = indexOf(res);
    const entries = res.status === 404 ? [] : (JSON.parse(res.body) as KvEntry[]);
    const listed: Observed[] = [];
    let newest = 0n;
    for (const kv of entries) {
      const ns = kv.Key.startsWith(this.#keyBase.slice('/v1/kv/'.length)) ? kv.Key.slice(this.#keyBase.length - '/v1/kv/'.length) : '';
      const order = BigInt(kv.ModifyIndex);
      if (order > newest) newest = order;
      // The prefix itself, "sub-directories" and foreign names are not namespaces.
      if (!isValidNamespace(ns, CONSUL_NS)) continue;
      listed.push({ ns, entry: this.#entry(ns, kv), order });
    }
    // An index going backwards (a restored or new Consul) restarts everything from scratch.
    const restart = index !== undefined && index < this.#index;
    if (restart) this.#ctx.log.warn({ index: index.toString(), was: this.#index.toString() }, 'consul index went backwards; re-reading');
    this.cache.reconcile(listed, index ?? newest, { restart });
    this.#retry.reset();
    if (index === undefined || index <= 0n) {
      // Without an index a blocking query cannot block: poll again after a delay instead of spinning.
      this.#index = 0n;
      return 'later';
    }
    this.#index = index;
    return 'now';
  }
}

function indexOf(res: HttpResult): bigint | undefined {
  const text = header(res.headers, 'x-consul-index');
  return text !== undefined && /^[0-9]{1,20}$/.test(text) ? BigInt(text) : undefined;
}

defineStorage({
  kind: 'io.prx.kvstore',
  schema: consulStorageSchema,
  create: (cfg: ConsulStorageConfig, ctx) => new ConsulDtabStore(cfg, ctx),
});
