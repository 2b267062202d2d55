import type { Etcd3, IKeyValue, IOptions, IRequestOp, ITxnResponse, IWatchResponse, Watcher } from 'etcd3';
import { z } from 'zod';
import { type TlsMaterial, addIssue, ip, kindShape, loadTlsMaterial, namerTlsSchema, port, lazySchema } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import type { Dtab } from '../../naming/index.js';
import type { Backoff } from '../../service/policy/index.js';
import type { Counter } from '../../service/stats/index.js';
import { CachedDtabStore, DtabCache, type Observed } from './cache.js';
import { type StoredEntry, checkNamespace, decodeStored, dtabText, isValidNamespace, readU64Version, u64Version } from './codec.js';
import { DtabNamespaceAbsentError, DtabNamespaceExistsError, DtabVersionMismatchError, StorageUnavailableError } from './errors.js';
import { defineStorage } from './kind.js';
import { DEFAULT_WATCH_BACKOFF, RetryTimer, keyPathPrefix } from './retry.js';
import type { DtabStore, StorageContext } from './types.js';

/**
 * `io.prx.kvstore2` (experimental): dtabs in etcd through the v3 API (gRPC). Namespace `ns` is the
 * key `<pathPrefix>/<ns>` holding the dtab text; its version is the key's `mod_revision` as 8
 * bytes big-endian. Writes are transactions comparing `mod_revision` (create: `create_revision`
 * 0), so concurrent writers never overwrite each other unseen. One prefix watch keeps every
 * namespace current; after a disconnect it resumes from the last revision it applied, and when
 * that revision has been compacted away it lists the prefix again and watches from there.
 *
 * (namerd's etcd store spoke the v2 API, which etcd 3.4 keeps apart from v3 and 3.6 removed; the
 * layout is the same, the data is not shared with a v2 namerd.)
 *
 * ```yaml
 * storage:
 *   kind: io.prx.kvstore2
 *   experimental: true
 *   host: localhost
 *   port: 2379
 *   pathPrefix: /namerd/dtabs
 *   tls: {commonName: etcd.example.org, trustCertsBundle: /etc/ssl/etcd-ca.pem}
 * ```
 */
export const etcdStorageSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.kvstore2'),
  host: ip.default('localhost'),
  port: port.default(2379),
  pathPrefix: keyPathPrefix.default('/namerd/dtabs'),
  tls: namerTlsSchema
    .superRefine((tls, ctx) => {
      // gRPC offers no way to skip the host-name check; commonName names the expected server instead.
      if (tls.disableValidation) addIssue(ctx, ['disableValidation'], 'is not supported by io.prx.kvstore2 (gRPC); set commonName');
    })
    .optional(),
}));

export type EtcdStorageConfig = z.output<typeof etcdStorageSchema>;

/** Knobs outside the config (tests shorten them). */
export interface EtcdStoreOptions {
  /** Delays between retries of a failed listing. */
  readonly retryBackoff?: Backoff;
  /** Deadline of each read or write request. */
  readonly requestTimeoutMs?: number;
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type Policy = NonNullable<FaultHandling['global']>;
type WatchBackoff = NonNullable<FaultHandling['watchBackoff']>;

// etcd3's default policies retry failed calls three times and open a circuit breaker for 5 s.
// A retried transaction could report "exists" for its own first, lost-ack attempt, and the breaker
// would refuse writes for seconds after etcd is back, so every call goes through exactly once and
// the store decides what to retry.
const passThrough = {
  // async: etcd3 reports stream failures by executing a function that throws, and expects a rejection.
  execute: async <T>(fn: (ctx: { signal: AbortSignal }) => PromiseLike<T> | T): Promise<T> =>
    fn({ signal: new AbortController().signal }),
} as unknown as Policy;

/** The watch stream's reconnect delays: 100 ms doubling to 5 s. */
function watchBackoff(ms = 100): WatchBackoff {
  return { duration: ms, next: () => watchBackoff(Math.min(ms * 2, 5000)) };
}

function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

export class EtcdDtabStore extends CachedDtabStore implements DtabStore {
  readonly #ctx: StorageContext;
  readonly #dir: string;
  readonly #dirBytes: Buffer;
  readonly #client: Promise<Etcd3>;
  readonly #retry: RetryTimer;
  readonly #timeoutMs: number;
  readonly #events: Counter;
  readonly #resyncs: Counter;
  #watcher: Watcher | undefined;
  /** The highest revision whose changes under the prefix are in the cache. */
  #rev = 0n;
  #closed = false;

  constructor(cfg: EtcdStorageConfig, ctx: StorageContext, opts: EtcdStoreOptions = {}) {
    super(new DtabCache(ctx.log));
    this.#ctx = ctx;
    this.#dir = `${cfg.pathPrefix}/`;
    this.#dirBytes = Buffer.from(this.#dir);
    this.#retry = new RetryTimer(opts.retryBackoff ?? DEFAULT_WATCH_BACKOFF);
    this.#timeoutMs = opts.requestTimeoutMs ?? 10_000;
    this.#events = ctx.stats.counter('watch', 'events');
    this.#resyncs = ctx.stats.counter('watch', 'resyncs');
    ctx.stats.gauge(['connected'], () => (this.cache.health().ok ? 1 : 0));
    const tls = cfg.tls === undefined ? undefined : loadTlsMaterial(cfg.tls);
    // The gRPC client costs ~100 ms and ~20 MB to load: only a configured etcd store pays for it.
    this.#client = import('etcd3').then((m) => new m.Etcd3(this.#options(cfg, tls)));
    this.#client.then(
      () => this.#sync(),
      (e: unknown) => this.cache.unhealthy(e),
    );
  }

  async create(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns);
    const key = this.#key(ns);
    const res = await this.#call('create', (c) =>
      c.kv.txn({
        compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
        success: [{ request_put: { key, value: Buffer.from(dtabText(dtab)) } }],
        failure: [],
      }),
    );
    if (res.succeeded !== true) throw new DtabNamespaceExistsError(ns);
    this.#wrote(ns, dtab, BigInt(res.header.revision));
  }

  async update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void> {
    checkNamespace(ns);
    const res = await this.#casTxn(ns, version, 'update', { request_put: { key: this.#key(ns), value: Buffer.from(dtabText(dtab)) } });
    this.#wrote(ns, dtab, BigInt(res.header.revision));
  }

  async put(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns);
    const key = this.#key(ns);
    const res = await this.#call('put', (c) => c.kv.put({ key, value: Buffer.from(dtabText(dtab)) }));
    this.#wrote(ns, dtab, BigInt(res.header.revision));
  }

  async delete(ns: string, version?: Uint8Array): Promise<void> {
    checkNamespace(ns);
    const key = this.#key(ns);
    if (version !== undefined) {
      const res = await this.#casTxn(ns, version, 'delete', { request_delete_range: { key } });
      this.cache.apply(ns, undefined, BigInt(res.header.revision));
      return;
    }
    const res = await this.#call('delete', (c) => c.kv.deleteRange({ key }));
    if (res.deleted === '0' || Number(res.deleted) === 0) throw new DtabNamespaceAbsentError(ns);
    this.cache.apply(ns, undefined, BigInt(res.header.revision));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.close();
    this.cache.close();
    const w = this.#watcher;
    this.#watcher = undefined;
    const client = await this.#client.catch(() => undefined);
    if (w !== undefined) {
      // Cancelling waits for etcd's acknowledgement, which a dead server never sends.
      await Promise.race([w.cancel().catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
    }
    client?.close();
  }

  #options(cfg: EtcdStorageConfig, tls: TlsMaterial | undefined): IOptions {
    const timeoutMs = this.#timeoutMs;
    return {
      hosts: `${cfg.host}:${cfg.port}`,
      faultHandling: { host: () => passThrough, global: passThrough, watchBackoff: watchBackoff() },
      defaultCallOptions: (c) => (c.isStream ? {} : { deadline: Date.now() + timeoutMs }),
      grpcOptions: {
        // gRPC's reconnect delay otherwise grows to 2 minutes while etcd is down.
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 5000,
        ...(tls?.commonName === undefined ? {} : { 'grpc.ssl_target_name_override': tls.commonName, 'grpc.default_authority': tls.commonName }),
      },
      ...(tls === undefined
        ? {}
        : {
            // etcd3 passes these to grpc.credentials.createSsl, where a missing root means the system CAs.
            credentials: {
              rootCertificate: tls.ca as Buffer,
              ...(tls.key === undefined ? {} : { privateKey: tls.key }),
              ...(tls.cert === undefined ? {} : { certChain: tls.cert }),
            },
          }),
    };
  }

  /**
   * One operation on `ns` if its mod_revision is `version`; DtabNamespaceAbsentError or
   * DtabVersionMismatchError (with the cache brought up to date) otherwise.
   */
  async #casTxn(ns: string, version: Uint8Array, what: string, op: IRequestOp): Promise<ITxnResponse> {
    const rev = readU64Version(version);
    // A version that is no revision can only mismatch, unless the namespace is absent.
    const expected = rev === undefined || rev === 0n ? -1n : rev;
    const key = this.#key(ns);
    const res = await this.#call(what, (c) =>
      c.kv.txn({
        compare: [
          { key, target: 'Create', result: 'Greater', create_revision: 0 },
          { key, target: 'Mod', result: 'Equal', mod_revision: expected.toString() },
        ],
        success: [op],
        failure: [{ request_range: { key } }],
      }),
    );
    if (res.succeeded === true) return res;
    const kv = res.responses[0]?.response_range.kvs[0];
    if (kv === undefined) throw new DtabNamespaceAbsentError(ns);
    this.cache.apply(ns, this.#entry(ns, kv), BigInt(kv.mod_revision));
    throw new DtabVersionMismatchError(ns);
  }

  #key(ns: string): Buffer {
    return Buffer.from(this.#dir + ns);
  }

  #nsOf(key: Buffer): string | undefined {
    if (!key.subarray(0, this.#dirBytes.length).equals(this.#dirBytes)) return undefined;
    const ns = key.subarray(this.#dirBytes.length).toString();
    // Deeper keys ("sub-directories") and foreign names are not namespaces.
    return isValidNamespace(ns) ? ns : undefined;
  }

  #entry(ns: string, kv: IKeyValue): StoredEntry {
    return decodeStored(ns, kv.value, u64Version(BigInt(kv.mod_revision)));
  }

  #wrote(ns: string, dtab: Dtab, rev: bigint): void {
    this.cache.apply(ns, { kind: 'dtab', value: { dtab, version: u64Version(rev) } }, rev);
  }

  /** Runs one request; failures of the backend become StorageUnavailableError. */
  async #call<T>(what: string, f: (c: Etcd3) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StorageUnavailableError('dtab storage is closed');
    try {
      return await f(await this.#client);
    } catch (e) {
      this.cache.unhealthy(e);
      throw new StorageUnavailableError(`etcd ${what} failed: ${errorMessage(e)}`, { cause: e });
    }
  }

  /** Lists the prefix, replaces the cache's view with it, and watches from the listing's revision. */
  #sync(): void {
    if (this.#closed) return;
    this.#resyncs.incr();
    void this.#client
      .then((c) => c.kv.range({ key: this.#dirBytes, range_end: prefixEnd(this.#dirBytes) }))
      .then(
        (res) => {
          if (this.#closed) return;
          const listed: Observed[] = [];
          for (const kv of res.kvs) {
            const ns = this.#nsOf(kv.key);
            if (ns !== undefined) listed.push({ ns, entry: this.#entry(ns, kv), order: BigInt(kv.mod_revision) });
          }
          const at = BigInt(res.header.revision);
          this.cache.reconcile(listed, at);
          if (at > this.#rev) this.#rev = at;
          this.#retry.reset();
          this.#watch(this.#rev + 1n);
        },
        (e: unknown) => {
          this.cache.unhealthy(e);
          this.#retry.schedule(() => this.#sync());
        },
      );
  }

  #watch(from: bigint): void {
    void this.#client.then((c) => {
      if (this.#closed) return;
      const w = c.watch().prefix(this.#dirBytes).startRevision(from.toString()).watcher();
      this.#watcher = w;
      w.on('connected', () => {
        if (w !== this.#watcher) return;
        this.#pin(w);
        this.cache.healthy();
      });
      w.on('data', (res: IWatchResponse) => {
        if (w !== this.#watcher) return;
        this.#onWatch(res);
        this.#pin(w);
      });
      w.on('disconnected', (e: Error) => {
        if (w === this.#watcher) this.cache.unhealthy(e);
      });
      w.on('error', (e: Error) => {
        // etcd cancelled the watch: its start revision was compacted (or access was revoked).
        // The watcher is gone from the client; list again and watch from the listing.
        if (w !== this.#watcher) return;
        this.#watcher = undefined;
        this.#ctx.log.info({ err: errorMessage(e) }, 'etcd watch cancelled; listing again');
        this.#sync();
      });
    });
  }

  /**
   * etcd3 resumes a watcher after a reconnect from the revision after the last response's header,
   * which can be past events not yet delivered; resume from what was applied instead.
   */
  #pin(w: Watcher): void {
    w.request.start_revision = (this.#rev + 1n).toString();
  }

  #onWatch(res: IWatchResponse): void {
    const events = res.events;
    if (events.length === 0) {
      // A progress notification: everything up to the header's revision has been delivered.
      if (!res.created && !res.canceled) {
        const at = BigInt(res.header.revision);
        if (at > this.#rev) this.#rev = at;
      }
      return;
    }
    for (const ev of events) {
      const rev = BigInt(ev.kv.mod_revision);
      if (rev > this.#rev) this.#rev = rev;
      const ns = this.#nsOf(ev.kv.key);
      if (ns === undefined) continue;
      this.#events.incr();
      this.cache.apply(ns, ev.type === 'Delete' ? undefined : this.#entry(ns, ev.kv), rev);
    }
  }
}

defineStorage({
  kind: 'io.prx.kvstore2',
  schema: etcdStorageSchema,
  experimental: true,
  create: (cfg: EtcdStorageConfig, ctx) => new EtcdDtabStore(cfg, ctx),
});
