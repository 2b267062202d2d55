import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { H1Server } from '../../protocol/http/h1/server.js';
import type { Logger } from 'pino';
import { lookupKind, type KindConfig } from '../../config/index.js';
import type { BoundName, Dtab } from '../../naming/index.js';
import { readDtab, readPath, type NameInterpreter, type Path } from '../../naming/index.js';
import type { ResponseClassifier } from '../../service/classifier.js';
import { routerStats, type StatsReceiver } from '../../service/stats/index.js';
import type { Tracer } from '../../service/tracing.js';
import { AccessLog, parseRollPolicy } from '../../protocol/http/access-log.js';
import { identifierFromConfig, type HttpIdentifier } from '../../protocol/http/identifiers/index.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import type { BindingCache, Lease } from '../core/cache.js';
import { buildInterpreter, RoutingCore, type RoutingAdapter } from '../core/routing.js';
import type { RouterContext, RunningRouter, ServerAddress } from '../core/types.js';
import { HttpServerHandler } from './handler.js';
import { HttpParams, type ResolvedClient } from './params.js';
import { HTTP_CLIENT_PROTOCOL } from './protocol.js';
import type { EndpointOptions, OutboundRequest } from '../../protocol/http/client-transport.js';
import type { HttpRouterConfig, HttpServerConfig } from './schema.js';
import type { HttpClient, HttpPathService, HttpRouterHost, HttpRoutingCore, RequestScope } from './types.js';
import { clientSpan, serverSpan, type TracePropagator } from '../../protocol/http/headers/trace-propagator.js';
import { ViaStamp } from '../../protocol/http/headers/via.js';

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
export class HttpRouter implements RunningRouter, HttpRouterHost {
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
  /** Binding, the path and client stacks and their caches: the protocol-free router. */
  readonly routing: HttpRoutingCore;
  /** Trace propagation on each routed request (the router's `tracePropagator`). */
  readonly trace: (ctx: RequestScope, headers: IncomingHttpHeaders) => void;
  /**
   * This router's Via entry, with a token made once per router: a request that comes back to the
   * router is a loop (508). Per router, not per process: `outgoing` → `incoming` of the same
   * process (linker-to-linker on one host) is two routers and no loop.
   */
  readonly via = new ViaStamp();
  readonly #servers: ServerHandle[] = [];
  #closing: Promise<void> | undefined;

  constructor(cfg: HttpRouterConfig, ctx: RouterContext) {
    this.cfg = cfg;
    this.label = cfg.label;
    this.dstPrefix = readPath(cfg.dstPrefix);
    const baseDtab = readDtab(cfg.dtab);
    this.baseDtab = baseDtab;
    this.log = ctx.log.child({ router: cfg.label });
    this.tracer = ctx.tracer;
    this.stats = routerStats(ctx.stats, cfg.label);
    if (cfg.originator) this.stats.gauge(['originator'], () => 1);
    const interpreter = buildInterpreter(cfg.interpreter, ctx, this.log);
    this.interpreter = interpreter;
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
    this.routing = new RoutingCore({
      adapter: httpRoutingAdapter(this.params),
      baseDtab,
      interpreter,
      stats: this.stats,
      log: this.log,
      bindingTimeoutMs: cfg.bindingTimeoutMs,
      cache: cfg.bindingCache,
      protectedListeners: ctx.protectedListeners,
    });
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
  pathService(dst: Path, localDtab: Dtab): Lease<HttpPathService> {
    return this.routing.pathService(dst, localDtab);
  }

  get paths(): BindingCache<HttpPathService, Path, Dtab> {
    return this.routing.paths;
  }

  get clients(): BindingCache<HttpClient, BoundName> {
    return this.routing.clients;
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
    await this.routing.close();
    await this.accessLog?.close();
  }

}

/** HTTP/1.1's part of the routing core: its protocol object, its policies, and the `prx-dst-*` headers of each attempt. */
function httpRoutingAdapter(params: HttpParams): RoutingAdapter<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier, ResolvedClient> {
  return {
    protocol: HTTP_CLIENT_PROTOCOL,
    params,
    prepareAttempt(out, name, id, client) {
      const h = out.headers;
      h['prx-dst-client'] = id;
      if (name.residual.isEmpty) delete h['prx-dst-residual'];
      else h['prx-dst-residual'] = name.residual.show;
      // Forward the inbound client certificate only to clients configured for it (anti-spoofing).
      if (client.forwardClientCert && out.clientCert !== undefined) h['x-forwarded-client-cert'] = out.clientCert;
      else delete h['x-forwarded-client-cert'];
    },
  };
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
