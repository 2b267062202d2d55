import type * as Zk from 'node-zookeeper-client';
import { type ZkCallback, zkCall } from '../../namer/zk-call.js';
import { z } from 'zod';
import { addIssue, ip, kindShape, nonEmptyString, port, positiveInt, lazySchema } from '../../config/index.js';
import { errorMessage } from '../../core/errors.js';
import type { Dtab } from '../../naming/index.js';
import type { Backoff } from '../../service/policy/index.js';
import { CachedDtabStore, DtabCache, type Observed } from './cache.js';
import { checkNamespace, decodeStored, dtabText, i32Version, isValidNamespace, readI32Version } from './codec.js';
import {
  DtabNamespaceAbsentError,
  DtabNamespaceExistsError,
  DtabVersionMismatchError,
  StorageForbiddenError,
  StorageUnavailableError,
} from './errors.js';
import { defineStorage } from './kind.js';
import { DEFAULT_WATCH_BACKOFF, RetryTimer, keyPathPrefix } from './retry.js';
import { closeClient, codeOf, hardenConnection } from './zk-client.js';
import type { DtabStore, StorageContext } from './types.js';

const PERMS = /^(?!.*(.).*\1)[crwda]+$/;

/**
 * `io.prx.coord`: dtabs in ZooKeeper. Namespace `ns` is the persistent znode `<pathPrefix>/<ns>`
 * holding the dtab text; its version is the znode's `stat.version` as 4 bytes big-endian (a new
 * node is `AAAAAA==`). Updates are `setData` with that version, so a stale writer fails instead
 * of overwriting. New nodes (and a missing prefix, created on the first write) get `acls`
 * (default: `world:anyone` with every permission); `authInfo` is sent on every connection.
 *
 * The prefix's children and every namespace node are watched; a reconnect re-reads everything
 * (watches are re-armed), and an expired session is replaced by a new one.
 *
 * ```yaml
 * storage:
 *   kind: io.prx.coord
 *   zkAddrs: [{host: zk-1, port: 2181}, {host: zk-2, port: 2181}]
 *   pathPrefix: /dtabs
 *   sessionTimeoutMs: 10000
 *   authInfo: {scheme: digest, auth: "prx:secret"}
 *   acls: [{scheme: digest, id: "prx:<base64 sha1>", perms: crwda}, {scheme: world, id: anyone, perms: r}]
 * ```
 */
export const zkStorageSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.coord'),
  zkAddrs: z.array(z.strictObject({ host: ip, port })).min(1, { error: 'expected at least one address' }),
  pathPrefix: keyPathPrefix.default('/dtabs'),
  sessionTimeoutMs: positiveInt.default(10_000),
  authInfo: z.strictObject({ scheme: nonEmptyString, auth: z.string() }).optional(),
  acls: z
    .array(
      z.strictObject({
        scheme: nonEmptyString,
        id: z.string(),
        perms: z.string().superRefine((p, ctx) => {
          if (!PERMS.test(p)) addIssue(ctx, [], 'expected letters of "crwda" (create, read, write, delete, admin), each at most once', { value: p });
        }),
      }),
    )
    .default([]),
}));

export type ZkStorageConfig = z.output<typeof zkStorageSchema>;

/** Knobs outside the config (tests shorten them). */
export interface ZkStoreOptions {
  /** Delay before a new session after expiry or a failed listing. */
  readonly retryBackoff?: Backoff;
  /** How long one request may take (default: the session timeout). */
  readonly requestTimeoutMs?: number;
}

type ZkModule = typeof Zk;


export class ZkDtabStore extends CachedDtabStore implements DtabStore {
  readonly #cfg: ZkStorageConfig;
  readonly #ctx: StorageContext;
  readonly #prefix: string;
  readonly #zk: Promise<ZkModule>;
  readonly #retry: RetryTimer;
  readonly #timeoutMs: number;
  #client: Zk.Client | undefined;
  /** Bumped for every new session; callbacks of an older one are ignored. */
  #gen = 0;
  /**
   * ZooKeeper answers one session's requests and watch events in order, so the order in which
   * answers arrive is the order of the states they describe: that count orders the cache.
   */
  #order = 0n;
  #dataWatchers = new Map<string, (e: Zk.Event) => void>();
  #childWatcher: ((e: Zk.Event) => void) | undefined;
  #refreshing = false;
  #refreshAgain = false;
  #connectedWaiters: (() => void)[] = [];
  #watchdog: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(cfg: ZkStorageConfig, ctx: StorageContext, opts: ZkStoreOptions = {}) {
    super(new DtabCache(ctx.log));
    this.#cfg = cfg;
    this.#ctx = ctx;
    this.#prefix = cfg.pathPrefix;
    this.#retry = new RetryTimer(opts.retryBackoff ?? DEFAULT_WATCH_BACKOFF);
    this.#timeoutMs = opts.requestTimeoutMs ?? cfg.sessionTimeoutMs;
    ctx.stats.gauge(['connected'], () => (this.cache.health().ok ? 1 : 0));
    this.#zk = import('node-zookeeper-client');
    this.#zk.then(
      () => this.#connect(),
      (e: unknown) => this.cache.unhealthy(e),
    );
  }

  async create(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns);
    const { zk, client, gen } = await this.#live();
    const data = Buffer.from(dtabText(dtab));
    try {
      await this.#createNode(zk, client, this.#path(ns), data);
    } catch (e) {
      if (codeOf(e) === zk.Exception.NODE_EXISTS) throw new DtabNamespaceExistsError(ns);
      throw this.#failure(zk, 'create', e);
    }
    this.#wrote(gen, ns, dtab, 0);
  }

  async update(ns: string, dtab: Dtab, version: Uint8Array): Promise<void> {
    checkNamespace(ns);
    const { zk, client, gen } = await this.#live();
    const path = this.#path(ns);
    const v = readI32Version(version);
    // -1 would mean "any version" to ZooKeeper: such a version can only mismatch.
    if (v === undefined || v < 0) {
      const exists = await this.#request<Zk.Stat | null>('exists', (cb) => client.exists(path, cb)).catch((e: unknown) => {
        throw this.#failure(zk, 'update', e);
      });
      throw exists ? new DtabVersionMismatchError(ns) : new DtabNamespaceAbsentError(ns);
    }
    try {
      const stat = await this.#request<Zk.Stat>('setData', (cb) => client.setData(path, Buffer.from(dtabText(dtab)), v, cb));
      this.#wrote(gen, ns, dtab, stat.version);
    } catch (e) {
      if (codeOf(e) === zk.Exception.BAD_VERSION) throw new DtabVersionMismatchError(ns);
      if (codeOf(e) === zk.Exception.NO_NODE) throw new DtabNamespaceAbsentError(ns);
      throw this.#failure(zk, 'update', e);
    }
  }

  async put(ns: string, dtab: Dtab): Promise<void> {
    checkNamespace(ns);
    const { zk, client, gen } = await this.#live();
    const path = this.#path(ns);
    const data = Buffer.from(dtabText(dtab));
    // Set if present, else create; a concurrent create or delete in between makes us go round again.
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        const stat = await this.#request<Zk.Stat>('setData', (cb) => client.setData(path, data, -1, cb));
        return this.#wrote(gen, ns, dtab, stat.version);
      } catch (e) {
        if (codeOf(e) !== zk.Exception.NO_NODE) throw this.#failure(zk, 'put', e);
      }
      try {
        await this.#createNode(zk, client, path, data);
        return this.#wrote(gen, ns, dtab, 0);
      } catch (e) {
        if (codeOf(e) !== zk.Exception.NODE_EXISTS) throw this.#failure(zk, 'put', e);
      }
    }
    throw new StorageUnavailableError(`ZooKeeper put of ${path} kept racing with other writers; try again`);
  }

  async delete(ns: string, version?: Uint8Array): Promise<void> {
    checkNamespace(ns);
    const { zk, client, gen } = await this.#live();
    const path = this.#path(ns);
    const v = version === undefined ? -1 : readI32Version(version);
    // -1 means "any version" to ZooKeeper: a given version that is none can only mismatch.
    if (v === undefined || (version !== undefined && v < 0)) {
      const exists = await this.#request<Zk.Stat | null>('exists', (cb) => client.exists(path, cb)).catch((e: unknown) => {
        throw this.#failure(zk, 'delete', e);
      });
      throw exists ? new DtabVersionMismatchError(ns) : new DtabNamespaceAbsentError(ns);
    }
    try {
      await this.#request<void>('remove', (cb) => client.remove(path, v, cb));
    } catch (e) {
      if (codeOf(e) === zk.Exception.NO_NODE) throw new DtabNamespaceAbsentError(ns);
      if (codeOf(e) === zk.Exception.BAD_VERSION) throw new DtabVersionMismatchError(ns);
      throw this.#failure(zk, 'delete', e);
    }
    if (gen === this.#gen) this.cache.apply(ns, undefined, ++this.#order);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#retry.close();
    this.cache.close();
    clearTimeout(this.#watchdog);
    this.#gen++;
    for (const w of this.#connectedWaiters.splice(0)) w();
    const client = this.#client;
    this.#client = undefined;
    if (client !== undefined) await closeClient(client);
  }

  #path(ns: string): string {
    return `${this.#prefix}/${ns}`;
  }

  #wrote(gen: number, ns: string, dtab: Dtab, version: number): void {
    if (gen === this.#gen) this.cache.apply(ns, { kind: 'dtab', value: { dtab, version: i32Version(version) } }, ++this.#order);
  }

  /**
   * The connected client. While (re)connecting, a write waits for the connection up to the
   * request timeout, then fails with StorageUnavailableError (rather than sitting in the client's
   * queue until some later reconnect).
   */
  async #live(): Promise<{ zk: ZkModule; client: Zk.Client; gen: number }> {
    const zk = await this.#zk;
    const deadline = Date.now() + this.#timeoutMs;
    for (;;) {
      if (this.#closed) throw new StorageUnavailableError('dtab storage is closed');
      const client = this.#client;
      if (client !== undefined && client.getState() === zk.State.SYNC_CONNECTED) return { zk, client, gen: this.#gen };
      const left = deadline - Date.now();
      if (left <= 0) throw new StorageUnavailableError(`ZooKeeper is not connected (${this.cache.health().detail ?? 'connecting'})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left);
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.#connectedWaiters.push(done);
      });
    }
  }

  #failure(zk: ZkModule, what: string, e: unknown): Error {
    if (e instanceof StorageUnavailableError) return e;
    if (codeOf(e) === zk.Exception.NO_AUTH) return new StorageForbiddenError(`ZooKeeper ${what} not authorized: ${errorMessage(e)}`, { cause: e });
    return new StorageUnavailableError(`ZooKeeper ${what} failed: ${errorMessage(e)}`, { cause: e });
  }

  #acls(zk: ZkModule): Zk.ACL[] {
    if (this.#cfg.acls.length === 0) return [new zk.ACL(zk.Permission.ALL, new zk.Id('world', 'anyone'))];
    const bits: Readonly<Record<string, number>> = {
      c: zk.Permission.CREATE,
      r: zk.Permission.READ,
      w: zk.Permission.WRITE,
      d: zk.Permission.DELETE,
      a: zk.Permission.ADMIN,
    };
    return this.#cfg.acls.map((a) => new zk.ACL([...a.perms].reduce((p, c) => p | (bits[c] ?? 0), 0), new zk.Id(a.scheme, a.id)));
  }

  /** Creates a dtab node; a missing prefix is created first, with the same ACLs. */
  async #createNode(zk: ZkModule, client: Zk.Client, path: string, data: Buffer): Promise<void> {
    const acls = this.#acls(zk);
    const create = (): Promise<string> =>
      this.#request<string>('create', (cb) => client.create(path, data, acls, zk.CreateMode.PERSISTENT, cb));
    try {
      await create();
    } catch (e) {
      if (codeOf(e) !== zk.Exception.NO_NODE) throw e;
      await this.#request<string>('mkdirp', (cb) => client.mkdirp(this.#prefix, acls, zk.CreateMode.PERSISTENT, cb));
      await create();
    }
  }

  /** One callback-style request as a promise, failing after the request timeout. */
  #request<T>(what: string, start: (cb: ZkCallback<T>) => void): Promise<T> {
    return zkCall(this.#timeoutMs, what, start);
  }

  /** A new session: the first one, or after expiry or an authentication failure. */
  #connect(): void {
    if (this.#closed) return;
    void this.#zk.then((zk) => {
      if (this.#closed) return;
      const gen = ++this.#gen;
      this.#dataWatchers = new Map();
      this.#childWatcher = undefined;
      const connect = this.#cfg.zkAddrs.map((a) => `${a.host}:${a.port}`).join(',');
      const client = zk.createClient(connect, { sessionTimeout: this.#cfg.sessionTimeoutMs, spinDelay: 200, retries: 0 });
      hardenConnection(client, this.#ctx.log);
      const auth = this.#cfg.authInfo;
      // Credentials added before connect are sent on every (re)connection of this session.
      if (auth !== undefined) client.addAuthInfo(auth.scheme, Buffer.from(auth.auth));
      const old = this.#client;
      this.#client = client;
      if (old !== undefined) void closeClient(old);
      this.#armWatchdog(gen);
      client.on('state', (state: Zk.State) => {
        if (gen !== this.#gen) return;
        if (state === zk.State.SYNC_CONNECTED) {
          clearTimeout(this.#watchdog);
          this.#retry.reset();
          const waiters = this.#connectedWaiters;
          this.#connectedWaiters = [];
          for (const w of waiters) w();
          this.#refresh(zk, gen);
        } else if (state === zk.State.DISCONNECTED) {
          this.cache.unhealthy(new StorageUnavailableError('disconnected from ZooKeeper'));
          this.#armWatchdog(gen);
        } else if (state === zk.State.EXPIRED || state === zk.State.AUTH_FAILED) {
          clearTimeout(this.#watchdog);
          const why = state === zk.State.EXPIRED ? 'ZooKeeper session expired' : 'ZooKeeper authentication failed';
          this.cache.unhealthy(new StorageUnavailableError(why));
          this.#ctx.log.warn(`${why}; starting a new session`);
          this.#retry.schedule(() => this.#connect());
        }
      });
      client.connect();
    });
  }

  /**
   * Starts a new session when this one has not connected for a session timeout. The client
   * library waits forever for the answer to its connect request, and a server that is still
   * starting may accept the connection and never answer; by then the old session is as good as
   * expired anyway.
   */
  #armWatchdog(gen: number): void {
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (gen !== this.#gen || this.#closed) return;
      this.#ctx.log.warn(`no ZooKeeper connection for ${this.#cfg.sessionTimeoutMs} ms; starting a new session`);
      this.#connect();
    }, this.#cfg.sessionTimeoutMs);
    this.#watchdog.unref();
  }

  /**
   * Re-reads the prefix's children and every child's data, arming their watches, then replaces the
   * cache's view. Runs after each (re)connection and whenever the children change; overlapping
   * calls are folded into one more run.
   */
  #refresh(zk: ZkModule, gen: number): void {
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return;
    }
    this.#refreshing = true;
    this.#refreshAgain = false;
    void this.#readAll(zk, gen)
      .then(
        (ok) => {
          if (!ok && gen === this.#gen) this.#retry.schedule(() => this.#refresh(zk, gen));
        },
        (e: unknown) => {
          if (gen !== this.#gen) return;
          // Connection loss is reported by the state change and followed by a reconnect, which
          // refreshes; anything else is reported and retried here.
          if (codeOf(e) === zk.Exception.CONNECTION_LOSS) return;
          this.cache.unhealthy(e);
          this.#retry.schedule(() => this.#refresh(zk, gen));
        },
      )
      .finally(() => {
        this.#refreshing = false;
        if (this.#refreshAgain && gen === this.#gen) this.#refresh(zk, gen);
      });
  }

  /** One refresh; false when the prefix could not even be watched. */
  async #readAll(zk: ZkModule, gen: number): Promise<boolean> {
    const client = this.#client;
    if (client === undefined || gen !== this.#gen) return true;
    this.#childWatcher ??= () => {
      if (gen === this.#gen) this.#refresh(zk, gen);
    };
    let children: string[];
    try {
      children = await this.#request<string[]>('getChildren', (cb) => client.getChildren(this.#prefix, this.#childWatcher as (e: Zk.Event) => void, cb));
    } catch (e) {
      if (codeOf(e) !== zk.Exception.NO_NODE) throw e;
      // No prefix yet: no dtabs. Its creation (by our first write or anyone's) triggers a refresh.
      const listedAt = ++this.#order;
      const stat = await this.#request<Zk.Stat | null>('exists', (cb) => client.exists(this.#prefix, this.#childWatcher as (e: Zk.Event) => void, cb));
      if (gen !== this.#gen) return true;
      if (stat) return false; // created in between: go round again
      this.cache.reconcile([], listedAt);
      return true;
    }
    const listedAt = ++this.#order;
    const reads = await Promise.all(children.filter((c) => isValidNamespace(c)).map((ns) => this.#readNode(zk, client, gen, ns)));
    if (gen !== this.#gen) return true;
    this.cache.reconcile(
      reads.filter((r): r is Observed => r !== undefined),
      listedAt,
    );
    return true;
  }

  /** Reads one namespace node with a data watch; undefined when it is gone. */
  async #readNode(zk: ZkModule, client: Zk.Client, gen: number, ns: string): Promise<Observed | undefined> {
    let watcher = this.#dataWatchers.get(ns);
    if (watcher === undefined) {
      watcher = (e: Zk.Event) => {
        if (gen !== this.#gen) return;
        // A deletion is picked up by the children watch; a change is read again (re-arming the watch).
        if (e.getType() === zk.Event.NODE_DELETED) {
          this.#dataWatchers.delete(ns);
          return;
        }
        void this.#readNode(zk, client, gen, ns).then(
          (o) => {
            if (o !== undefined && gen === this.#gen) this.cache.apply(o.ns, o.entry, o.order);
          },
          (err: unknown) => {
            if (gen === this.#gen) this.cache.unhealthy(err);
          },
        );
      };
      this.#dataWatchers.set(ns, watcher);
    }
    const path = this.#path(ns);
    try {
      const w = watcher;
      const [data, stat] = await this.#request<[Buffer, Zk.Stat]>('getData', (cb) => client.getData(path, w, (err, d, s) => cb(err, [d, s])));
      return { ns, entry: decodeStored(ns, data ?? Buffer.alloc(0), i32Version(stat.version)), order: ++this.#order };
    } catch (e) {
      if (codeOf(e) !== zk.Exception.NO_NODE) throw e;
      this.#dataWatchers.delete(ns);
      if (gen === this.#gen) this.cache.apply(ns, undefined, ++this.#order);
      return undefined;
    }
  }
}

defineStorage({
  kind: 'io.prx.coord',
  schema: zkStorageSchema,
  create: (cfg: ZkStorageConfig, ctx) => new ZkDtabStore(cfg, ctx),
});
