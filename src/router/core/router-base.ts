import type { Logger } from 'pino';
import type { KindConfig, RouterConfig } from '../../config/index.js';
import { readDtab, readPath, type BoundName, type Dtab, type NameInterpreter, type Path } from '../../naming/index.js';
import { routerStats, type StatsReceiver } from '../../service/stats/index.js';
import type { Tracer } from '../../service/tracing.js';
import type { BindingCache, Lease } from './cache.js';
import type { Client } from './client.js';
import type { PathService } from './path-service.js';
import { buildInterpreter, RoutingCore, type ResolvedClient, type RoutingAdapter } from './routing.js';
import type { ServerStats } from './server-stats.js';
import type { Exchange } from './transport.js';
import type { RouterContext, RunningRouter, RouterUsage, ServerAddress } from './types.js';

/**
 * One listening server of a router, in its protocol (an h1 server, an h2 session server…). Its
 * {@link ServerStats} count its requests (the drain waits for them) and track its connections.
 */
export interface ProtocolServer {
  readonly stats: ServerStats;
  /** Opens the listener; port 0 becomes the real port. */
  listen(ip: string, port: number): Promise<ServerAddress>;
  /** Stops accepting; idle connections close now, busy ones after their request. */
  stopAccepting(): void;
  /** Closes every remaining connection the protocol owns (the drain ran out of time). */
  closeAll(): void;
}

/**
 * What every router is, whatever its protocol: its naming (dst prefix, dtab, interpreter), its
 * routing core, its stats scope and log, and the lifecycle of its servers (listen; close = stop
 * accepting, drain until the deadline, then close what is left and the clients). A protocol
 * subclass builds its servers and supplies its routing adapter.
 */
export abstract class RouterBase<Req, Ex extends Exchange, TransportOpts, Classifier, RC extends ResolvedClient<TransportOpts>> implements RunningRouter {
  readonly label: string;
  readonly protocol: string;
  readonly dstPrefix: Path;
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly stats: StatsReceiver;
  readonly log: Logger;
  readonly tracer: Tracer;
  /** `bindingTimeoutMs`: how long a request waits for its name to bind. */
  readonly bindingTimeoutMs: number;
  /** Binding, the path and client stacks and their caches: the protocol-free router. */
  readonly routing: RoutingCore<Req, Ex, TransportOpts, Classifier, RC>;
  readonly #cfg: RouterConfig;
  readonly #servers: { readonly ip: string; readonly port: number; readonly server: ProtocolServer }[] = [];
  #closing: Promise<void> | undefined;

  constructor(protocol: string, cfg: RouterConfig, ctx: RouterContext, adapter: RoutingAdapter<Req, Ex, TransportOpts, Classifier, RC>) {
    this.protocol = protocol;
    this.#cfg = cfg;
    this.label = cfg.label;
    this.dstPrefix = readPath(cfg.dstPrefix);
    this.baseDtab = readDtab(cfg.dtab);
    this.log = ctx.log.child({ router: cfg.label });
    this.tracer = ctx.tracer;
    this.bindingTimeoutMs = cfg.bindingTimeoutMs;
    this.stats = routerStats(ctx.stats, cfg.label);
    if (cfg.originator) this.stats.gauge(['originator'], () => 1);
    this.interpreter = buildInterpreter(cfg.interpreter, ctx, this.log);
    this.routing = new RoutingCore({
      adapter,
      baseDtab: this.baseDtab,
      interpreter: this.interpreter,
      stats: this.stats,
      log: this.log,
      bindingTimeoutMs: cfg.bindingTimeoutMs,
      cache: cfg.bindingCache,
      protectedListeners: ctx.protectedListeners,
    });
  }

  /** Adds a server; it listens with {@link listen}. */
  protected addServer(ip: string, port: number, server: ProtocolServer): void {
    this.#servers.push({ ip, port, server });
  }

  get usage(): RouterUsage {
    const interp = this.#cfg.interpreter as KindConfig & { transformers?: readonly KindConfig[] };
    const identifier = this.#cfg['identifier'];
    const identifiers = Array.isArray(identifier) ? (identifier as readonly KindConfig[]) : [];
    return {
      protocol: this.protocol,
      interpreter: interp.kind,
      identifiers: identifiers.map((i) => i.kind),
      transformers: (interp.transformers ?? []).map((t) => t.kind),
    };
  }

  /** Borrows the path service for a logical name and request dtab. */
  pathService(dst: Path, localDtab: Dtab): Lease<PathService<Req, Ex, Classifier>> {
    return this.routing.pathService(dst, localDtab);
  }

  get paths(): BindingCache<PathService<Req, Ex, Classifier>, Path, Dtab> {
    return this.routing.paths;
  }

  get clients(): BindingCache<Client<Req, Ex, TransportOpts, Classifier>, BoundName> {
    return this.routing.clients;
  }

  async listen(): Promise<readonly ServerAddress[]> {
    const out: ServerAddress[] = [];
    for (const s of this.#servers) out.push(await s.server.listen(s.ip, s.port));
    return out;
  }

  close(deadline: number): Promise<void> {
    this.#closing ??= this.#close(deadline);
    return this.#closing;
  }

  /** The protocol's own clean-up once servers and clients are closed (an access log). */
  protected closed(): Promise<void> {
    return Promise.resolve();
  }

  async #close(deadline: number): Promise<void> {
    const servers = this.#servers.map((s) => s.server);
    for (const s of servers) s.stopAccepting();
    const drained = Promise.all(servers.map((s) => s.stats.drained()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drained, new Promise((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    for (const s of servers) {
      s.closeAll();
      // Connections the protocol handed off (an upgrade's tunnel) are still tracked: cut them too.
      for (const socket of s.stats.sockets) socket.destroy();
    }
    await this.routing.close();
    await this.closed();
  }
}
