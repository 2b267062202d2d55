import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { H1Server } from '../../protocol/http/h1/server.js';
import type { Logger } from 'pino';
import { lookupKind, type KindConfig } from '../../config/index.js';
import type { Dtab} from '../../naming/index.js';
import { readDtab, readPath, showTree, leavesOf, type BoundName, type NameInterpreter, type Path } from '../../naming/index.js';
import { routerStats, clientStats, pruneClient, pruneService, serviceStats, type StatsReceiver } from '../../service/stats/index.js';
import type { Tracer } from '../../service/tracing.js';
import { AccessLog, parseRollPolicy } from '../../protocol/http/access-log.js';
import { identifierFromConfig, type HttpIdentifier } from '../../protocol/http/identifiers/index.js';
import { PathBinding } from '../binding.js';
import { BindingCache, type Closable, type Lease } from '../cache.js';
import type { RouterContext, RunningRouter, ServerAddress } from '../types.js';
import { HttpClient } from './client.js';
import { HttpServerHandler } from './handler.js';
import { HttpParams, type ResolvedClient } from './params.js';
import { PathService, type PathServiceHost } from './path-service.js';
import type { HttpRouterConfig, HttpServerConfig } from './schema.js';
import type { RequestContext } from './ingress.js';
import { clientSpan, serverSpan, type TracePropagator } from '../../protocol/http/headers/trace-propagator.js';
import { ViaStamp } from '../../protocol/http/headers/via.js';

/**
 * The value of a tree or bound cache entry. Finagle keeps a service factory per bound tree and per
 * bound name with residual; in prx those are stateless (a path's binding picks the leaf, the
 * client cache holds the connections), so these two caches only account for the distinct trees
 * and bound names in use, with Linkerd's sizes and stats.
 */
const NOOP_ENTRY: Closable = Object.freeze({ close() {} });

/** One listening server of the router. */
interface ServerHandle {
  readonly cfg: HttpServerConfig;
  readonly server: H1Server;
  readonly handler: HttpServerHandler;
}

/**
 * The `http` router: servers that identify each request, bind its name through the dtab, and
 * forward it through balanced, failure-aware clients. Binding state lives in four bounded caches
 * (paths, trees, bounds, clients) whose evictions prune the matching metrics.
 */
export class HttpRouter implements RunningRouter {
  readonly label: string;
  readonly protocol = 'http';
  readonly dstPrefix: Path;
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly identifier: HttpIdentifier;
  readonly cfg: HttpRouterConfig;
  readonly stats: StatsReceiver;
  readonly log: Logger;
  readonly tracer: Tracer;
  readonly params: HttpParams;
  readonly accessLog: AccessLog | undefined;
  readonly paths: BindingCache<PathService, Path, Dtab>;
  readonly trees: BindingCache<Closable>;
  readonly bounds: BindingCache<Closable>;
  readonly clients: BindingCache<HttpClient, BoundName>;
  /** Trace propagation on each routed request (the router's `tracePropagator`). */
  readonly trace: (ctx: RequestContext, headers: IncomingHttpHeaders) => void;
  /**
   * This router's Via entry, with a token made once per router: a request that comes back to the
   * router is a loop (508). Per router, not per process: `outgoing` → `incoming` of the same
   * process (linker-to-linker on one host) is two routers and no loop.
   */
  readonly via = new ViaStamp();
  readonly #clientParams = new Map<string, ResolvedClient>();
  readonly #serviceStatsUsers = new Map<string, number>();
  readonly #protected: RouterContext['protectedListeners'];
  readonly #servers: ServerHandle[] = [];
  #closing: Promise<void> | undefined;

  constructor(cfg: HttpRouterConfig, ctx: RouterContext) {
    this.cfg = cfg;
    this.label = cfg.label;
    this.dstPrefix = readPath(cfg.dstPrefix);
    this.baseDtab = readDtab(cfg.dtab);
    this.log = ctx.log.child({ router: cfg.label });
    this.tracer = ctx.tracer;
    this.#protected = ctx.protectedListeners;
    this.stats = routerStats(ctx.stats, cfg.label);
    if (cfg.originator) this.stats.gauge(['originator'], () => 1);
    this.interpreter = buildInterpreter(cfg.interpreter, ctx, this.log);
    const propagator = buildPropagator(cfg.tracePropagator);
    const tracer = ctx.tracer;
    this.trace = (rctx, headers) => {
      const server = serverSpan(propagator, headers, { tracer });
      rctx.traceId = clientSpan(propagator, headers, server, { tracer });
    };
    this.identifier = identifierFromConfig(cfg.identifier, { dstPrefix: this.dstPrefix, routerLabel: cfg.label });
    this.params = new HttpParams(cfg.client, cfg.service, {
      maxHeaderBytes: (cfg.maxHeadersKB + cfg.maxInitialLineKB) * 1024,
      responseBody: { maxResponseBytes: cfg.maxResponseKB * 1024, aggregate: !cfg.streamingEnabled, maxChunkBytes: cfg.maxChunkKB * 1024 },
    });
    this.accessLog =
      cfg.httpAccessLog === undefined
        ? undefined
        : new AccessLog({
            path: cfg.httpAccessLog,
            rollPolicy: parseRollPolicy(cfg.httpAccessLogRollPolicy),
            append: cfg.httpAccessLogAppend,
            rotateCount: cfg.httpAccessLogRotateCount,
            onError: (err) => this.log.error({ err: err.message }, 'access log write failed'),
          });
    const cache = cfg.bindingCache;
    const ttl = cache.idleTtlSecs * 1000;
    const bindcache = this.stats.scope('bindcache');
    this.paths = new BindingCache({ capacity: cache.paths, idleTtlMs: ttl, stats: bindcache.scope('path'), build: (_k, dst, localDtab) => this.#buildPath(dst, localDtab) });
    this.trees = new BindingCache({ capacity: cache.trees, idleTtlMs: ttl, stats: bindcache.scope('tree'), build: () => NOOP_ENTRY });
    this.bounds = new BindingCache({ capacity: cache.bounds, idleTtlMs: ttl, stats: bindcache.scope('bound'), build: () => NOOP_ENTRY });
    this.clients = new BindingCache({ capacity: cache.clients, idleTtlMs: ttl, stats: bindcache.scope('client'), build: (id, name) => this.#buildClient(id, name) });
    for (const s of cfg.servers) {
      const handler = new HttpServerHandler(this, s);
      const server = new H1Server(handler.serverOptions, handler, s.tls === undefined ? undefined : tlsOptions(s.tls));
      this.#servers.push({ cfg: s, server, handler });
    }
  }

  get usage(): RunningRouter['usage'] {
    const interp = this.cfg.interpreter as KindConfig & { transformers?: readonly KindConfig[] };
    return {
      protocol: 'http',
      interpreter: interp.kind,
      identifiers: this.cfg.identifier.map((i) => i.kind),
      transformers: (interp.transformers ?? []).map((t) => t.kind),
    };
  }

  /** Borrows the path service for a logical name and request dtab. */
  pathService(dst: Path, localDtab: Dtab): Lease<PathService> {
    const key = localDtab.size === 0 ? dst.show : `${dst.show} ${localDtab.show}`;
    return this.paths.acquire(key, dst, localDtab);
  }

  /** Resolved client parameters for a client id (cached while the client is). */
  clientParams(id: string): ResolvedClient {
    let p = this.#clientParams.get(id);
    if (p === undefined) {
      p = this.params.client(id);
      this.#clientParams.set(id, p);
    }
    return p;
  }

  async listen(): Promise<readonly ServerAddress[]> {
    const out: ServerAddress[] = [];
    for (const h of this.#servers) {
      const a = await h.server.listen(h.cfg.ip, h.cfg.port);
      h.handler.bound(a.address, a.port);
      out.push({ ip: a.address, port: a.port });
    }
    return out;
  }

  identify(req: IncomingMessage): Promise<unknown> {
    const id = this.identifier.identify({ method: req.method ?? 'GET', url: req.url ?? '/', httpVersion: req.httpVersion, headers: req.headers });
    return Promise.resolve(
      id.kind === 'identified' ? { path: id.dst.show, ...(id.url === undefined ? {} : { url: id.url }) } : { error: id.reason },
    );
  }

  close(deadline: number): Promise<void> {
    this.#closing ??= this.#close(deadline);
    return this.#closing;
  }

  async #close(deadline: number): Promise<void> {
    for (const h of this.#servers) h.server.close();
    // Idle keep-alive connections go now; busy ones finish their request first.
    for (const h of this.#servers) h.server.closeIdleConnections();
    const drained = Promise.all(this.#servers.map((h) => h.handler.drained()));
    const left = deadline - Date.now();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drained, new Promise((r) => (timer = setTimeout(r, Math.max(0, left))))]);
    clearTimeout(timer);
    for (const h of this.#servers) {
      h.server.closeAllConnections();
      // Upgraded (tunnelled) connections are no longer the server's.
      for (const s of h.handler.sockets) s.destroy();
    }
    this.paths.close();
    this.trees.close();
    this.bounds.close();
    const clients = [...this.clients.values()];
    this.clients.close();
    await Promise.all(clients.map((c) => c.destroy()));
    await this.accessLog?.close();
  }

  #buildPath(name: Path, localDtab: Dtab): PathService {
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
    return new PathService({
      dst,
      localDtab,
      binding,
      params: this.params.service(dst),
      host: this.#pathHost,
      stats: serviceStats(this.stats, dst),
      bindingTimeoutMs: this.cfg.bindingTimeoutMs,
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

  readonly #pathHost: PathServiceHost = {
    client: (name) => {
      return this.clients.acquire(name.idStr, name, undefined);
    },
    attemptTimeoutMs: (id) => this.clientParams(id).attemptTimeoutMs,
    prepareAttempt: (out, name, id) => {
      const h = out.headers;
      h['prx-dst-client'] = id;
      if (name.residual.isEmpty) delete h['prx-dst-residual'];
      else h['prx-dst-residual'] = name.residual.show;
      // Forward the inbound client certificate only to clients configured for it (anti-spoofing).
      if (this.clientParams(id).forwardClientCert && out.clientCert !== undefined) h['x-forwarded-client-cert'] = out.clientCert;
      else delete h['x-forwarded-client-cert'];
    },
  };

  #buildClient(id: string, name: BoundName): HttpClient {
    const onClose = (): void => {
      this.#clientParams.delete(id);
      pruneClient(this.stats, id);
    };
    return new HttpClient(name, this.clientParams(id).client, clientStats(this.stats, id), this.log, onClose, this.#protected);
  }
}

function showBound(b: BoundName): string {
  return b.residual.isEmpty ? b.idStr : `${b.idStr}${b.residual.show}`;
}

function buildInterpreter(cfg: KindConfig, ctx: RouterContext, log: Logger): NameInterpreter {
  const def = lookupKind('interpreter', cfg.kind);
  if (def === undefined) throw new Error(`interpreter kind ${cfg.kind} is not registered`);
  return (def.create as (c: unknown, x: unknown) => NameInterpreter)(cfg, { namers: ctx.namers, system: ctx.system, log });
}

function buildPropagator(cfg: KindConfig): TracePropagator {
  const def = lookupKind('tracePropagator', cfg.kind);
  if (def === undefined) throw new Error(`trace propagator kind ${cfg.kind} is not registered`);
  return (def.create as (c: unknown, x: unknown) => TracePropagator)(cfg, undefined);
}

function tlsOptions(tls: NonNullable<HttpServerConfig['tls']>): { cert: Buffer; key: Buffer; ca?: Buffer; requestCert: boolean; rejectUnauthorized: boolean } {
  const cert = readFileSync(tls.certPath);
  const key = readFileSync(tls.keyPath);
  if (tls.caCertPath === undefined) return { cert, key, requestCert: false, rejectUnauthorized: false };
  return { cert, key, ca: readFileSync(tls.caCertPath), requestCert: true, rejectUnauthorized: true };
}
