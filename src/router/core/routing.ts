import type { Logger } from 'pino';
import { lookupKind, type KindConfig } from '../../config/index.js';
import { leavesOf, showTree, type BoundName, type Dtab, type NameInterpreter, type Path } from '../../naming/index.js';
import { clientStats, pruneClient, pruneService, serviceStats, type StatsReceiver } from '../../service/stats/index.js';
import { PathBinding } from './binding.js';
import { BindingCache, type Closable, type Lease } from './cache.js';
import { Client, type ClientParams } from './client.js';
import { PathService, type PathServiceHost, type ServiceParams } from './path-service.js';
import type { ProtectedListeners } from './protected-listeners.js';
import type { ClientProtocol, Exchange } from './transport.js';
import type { RouterContext } from './types.js';

/** A client's parameters as the core reads them; a protocol may resolve more (HTTP: forwardClientCert). */
export interface ResolvedClient<TransportOpts> {
  readonly client: ClientParams<TransportOpts>;
  readonly attemptTimeoutMs: number | undefined;
}

/** The router's `client` and `service` policies, resolved per client id and per logical name. */
export interface RouterParams<TransportOpts, Classifier, RC extends ResolvedClient<TransportOpts>> {
  client(id: string): RC;
  service(dst: string): ServiceParams<Classifier>;
}

/** What a protocol gives the routing core of one router. */
export interface RoutingAdapter<Req, Ex extends Exchange, TransportOpts, Classifier, RC extends ResolvedClient<TransportOpts>> {
  readonly protocol: ClientProtocol<Req, Ex, TransportOpts, Classifier>;
  readonly params: RouterParams<TransportOpts, Classifier, RC>;
  /** Per-destination request state before each attempt (HTTP: `prx-dst-client`, residual, XFCC, Host from `meta`). */
  prepareAttempt(req: Req, name: BoundName, clientId: string, client: RC, meta: Readonly<Record<string, unknown>>): void;
}

/** The sizes and idle TTL of a router's binding caches (`bindingCache`). */
export interface BindingCacheSizes {
  readonly paths: number;
  readonly trees: number;
  readonly bounds: number;
  readonly clients: number;
  readonly idleTtlSecs: number;
}

/**
 * The value of a tree or bound cache entry. Finagle keeps a service factory per bound tree and per
 * bound name with residual; in prx those are stateless (a path's binding picks the leaf, the
 * client cache holds the connections), so these two caches only account for the distinct trees
 * and bound names in use, with Linkerd's sizes and stats.
 */
const NOOP_ENTRY: Closable = Object.freeze({ close() {} });

/**
 * The routing half of every router (Linkerd's `StackRouter` with its binding caches): a logical
 * name and request dtab become a path service (binding, retries, timeouts, service stats); each
 * attempt picks a bound name, whose client (balancer, requeues, accrual, client stats) sends it
 * over the protocol's transport. Four bounded caches (paths, trees, bounds, clients) whose
 * evictions prune the matching metrics.
 */
export class RoutingCore<Req, Ex extends Exchange, TransportOpts, Classifier, RC extends ResolvedClient<TransportOpts>> {
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly stats: StatsReceiver;
  readonly paths: BindingCache<PathService<Req, Ex, Classifier>, Path, Dtab>;
  readonly trees: BindingCache<Closable>;
  readonly bounds: BindingCache<Closable>;
  readonly clients: BindingCache<Client<Req, Ex, TransportOpts, Classifier>, BoundName>;
  readonly #adapter: RoutingAdapter<Req, Ex, TransportOpts, Classifier, RC>;
  readonly #log: Logger;
  readonly #bindingTimeoutMs: number;
  readonly #protected: ProtectedListeners | undefined;
  readonly #clientParams = new Map<string, RC>();
  readonly #serviceStatsUsers = new Map<string, number>();
  readonly #pathHost: PathServiceHost<Req, Ex, Classifier>;

  constructor(opts: {
    readonly adapter: RoutingAdapter<Req, Ex, TransportOpts, Classifier, RC>;
    readonly baseDtab: Dtab;
    readonly interpreter: NameInterpreter;
    /** The router's scope, `rt/<label>`. */
    readonly stats: StatsReceiver;
    readonly log: Logger;
    readonly bindingTimeoutMs: number;
    readonly cache: BindingCacheSizes;
    readonly protectedListeners?: ProtectedListeners | undefined;
  }) {
    this.#adapter = opts.adapter;
    this.baseDtab = opts.baseDtab;
    this.interpreter = opts.interpreter;
    this.stats = opts.stats;
    this.#log = opts.log;
    this.#bindingTimeoutMs = opts.bindingTimeoutMs;
    this.#protected = opts.protectedListeners;
    const cache = opts.cache;
    const ttl = cache.idleTtlSecs * 1000;
    const bindcache = this.stats.scope('bindcache');
    this.paths = new BindingCache({ capacity: cache.paths, idleTtlMs: ttl, stats: bindcache.scope('path'), build: (_k, dst, localDtab) => this.#buildPath(dst, localDtab) });
    this.trees = new BindingCache({ capacity: cache.trees, idleTtlMs: ttl, stats: bindcache.scope('tree'), build: () => NOOP_ENTRY });
    this.bounds = new BindingCache({ capacity: cache.bounds, idleTtlMs: ttl, stats: bindcache.scope('bound'), build: () => NOOP_ENTRY });
    this.clients = new BindingCache({ capacity: cache.clients, idleTtlMs: ttl, stats: bindcache.scope('client'), build: (id, name) => this.#buildClient(id, name) });
    const adapter = this.#adapter;
    this.#pathHost = {
      protocol: adapter.protocol,
      client: (name) => this.clients.acquire(name.idStr, name, undefined),
      attemptTimeoutMs: (id) => this.clientParams(id).attemptTimeoutMs,
      prepareAttempt: (req, name, id, meta) => adapter.prepareAttempt(req, name, id, this.clientParams(id), meta),
    };
  }

  /** Borrows the path service for a logical name and request dtab. */
  pathService(dst: Path, localDtab: Dtab): Lease<PathService<Req, Ex, Classifier>> {
    const key = localDtab.size === 0 ? dst.show : `${dst.show} ${localDtab.show}`;
    return this.paths.acquire(key, dst, localDtab);
  }

  /** Resolved client parameters for a client id (cached while the client is). */
  clientParams(id: string): RC {
    let p = this.#clientParams.get(id);
    if (p === undefined) {
      p = this.#adapter.params.client(id);
      this.#clientParams.set(id, p);
    }
    return p;
  }

  /** Closes every cache; resolves once every client's connections are closed. */
  async close(): Promise<void> {
    this.paths.close();
    this.trees.close();
    this.bounds.close();
    const clients = [...this.clients.values()];
    this.clients.close();
    await Promise.all(clients.map((c) => c.destroy()));
  }

  #buildPath(name: Path, localDtab: Dtab): PathService<Req, Ex, Classifier> {
    const dst = name.show;
    const dtab = localDtab.size === 0 ? this.baseDtab : this.baseDtab.concat(localDtab);
    const binding = new PathBinding(dst, this.interpreter.bind(dtab, name));
    this.#serviceStatsUsers.set(dst, (this.#serviceStatsUsers.get(dst) ?? 0) + 1);
    let leases: Lease<Closable>[] = [];
    // Trees and bound names are cached per distinct binding result: refreshed when the tree changes.
    binding.onChange = (tree) => {
      const next = [this.trees.acquire(showTree(tree, showBound), undefined, undefined)];
      for (const leaf of leavesOf(tree)) next.push(this.bounds.acquire(showBound(leaf), undefined, undefined));
      for (const l of leases) l.release();
      leases = next;
    };
    // A tree known at once came while the binding was being built, before this hook.
    if (binding.state.kind === 'ok') binding.onChange(binding.state.value);
    return new PathService({
      dst,
      localDtab,
      binding,
      params: this.#adapter.params.service(dst),
      host: this.#pathHost,
      stats: serviceStats(this.stats, dst),
      bindingTimeoutMs: this.#bindingTimeoutMs,
      onClose: () => {
        for (const l of leases) l.release();
        leases = [];
        this.#releaseServiceStats(dst);
      },
    });
  }

  /**
   * `rt/<r>/service/<dst>` is shared by every path entry of one name (one per request dtab): the
   * stats are pruned when the last of them closes, not when any one is evicted.
   */
  #releaseServiceStats(dst: string): void {
    const users = (this.#serviceStatsUsers.get(dst) ?? 1) - 1;
    if (users > 0) {
      this.#serviceStatsUsers.set(dst, users);
      return;
    }
    this.#serviceStatsUsers.delete(dst);
    pruneService(this.stats, dst);
  }

  #buildClient(id: string, name: BoundName): Client<Req, Ex, TransportOpts, Classifier> {
    const onClose = (): void => {
      this.#clientParams.delete(id);
      pruneClient(this.stats, id);
    };
    return new Client(name, this.#adapter.protocol, this.clientParams(id).client, clientStats(this.stats, id), this.#log, onClose, this.#protected);
  }
}

function showBound(b: BoundName): string {
  return b.residual.isEmpty ? b.idStr : `${b.idStr}${b.residual.show}`;
}

/** The router's interpreter, from its `interpreter` config and the process's namers. */
export function buildInterpreter(cfg: KindConfig, ctx: RouterContext, log: Logger): NameInterpreter {
  const def = lookupKind('interpreter', cfg.kind);
  if (def === undefined) throw new Error(`interpreter kind ${cfg.kind} is not registered`);
  return (def.create as (c: unknown, x: unknown) => NameInterpreter)(cfg, { namers: ctx.namers, system: ctx.system, log });
}
