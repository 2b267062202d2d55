import { writeDestinationHeaders } from '../../protocol/http/headers/client-cert.js';
import { rewriteHostForAttempt } from '../../protocol/http/headers/host-rewrite.js';
import type { IncomingHttpHeaders } from 'node:http';
import type { ResponseClassifier } from '../../protocol/http/classifiers.js';
import { routerAccessLog, type AccessLog } from '../../protocol/http/access-log.js';
import type { EndpointOptions, OutboundRequest } from '../../protocol/http/client-transport.js';
import { clientSpan, propagatorFromConfig, serverSpan } from '../../protocol/http/headers/trace-propagator.js';
import { ViaStamp } from '../../protocol/http/headers/via.js';
import { identificationJson, identifierFromConfig, type HttpIdentifier } from '../../protocol/http/identifiers/index.js';
import { RequestPolicy } from '../../protocol/http/policies.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import { RouterBase } from '../core/router-base.js';
import type { RoutingAdapter } from '../core/routing.js';
import type { ClientProtocol } from '../core/transport.js';
import { HttpClientProtocol } from '../../protocol/http/client-protocol.js';
import type { IdentifiableRequest, RouterContext } from '../core/types.js';
import { HttpServerHandler } from './handler.js';
import { HttpParams, type ResolvedClient } from './params.js';
import type { HttpRouterConfig } from './schema.js';
import type { HttpRouterHost, RequestScope } from './types.js';

/**
 * The `http` router (HTTP/1.1): servers that identify each request, bind its name through the dtab
 * and forward it through the routing core's balanced, failure-aware clients.
 */
export class HttpRouter extends RouterBase<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier, ResolvedClient> implements HttpRouterHost {
  readonly cfg: HttpRouterConfig;
  readonly identifier: HttpIdentifier;
  /** The router's `requestAuthorizers` and `loggers`. */
  readonly policy: RequestPolicy;
  readonly accessLog: AccessLog | undefined;
  /** Trace propagation on each routed request (the router's `tracePropagator`). */
  readonly trace: (ctx: RequestScope, headers: IncomingHttpHeaders) => void;
  /**
   * This router's Via entry, with a token made once per router: a request that comes back to the
   * router is a loop (508). Per router, not per process: `outgoing` → `incoming` of the same
   * process (linker-to-linker on one host) is two routers and no loop.
   */
  readonly via = new ViaStamp();

  constructor(cfg: HttpRouterConfig, ctx: RouterContext) {
    const params = new HttpParams(cfg.client, cfg.service, {
      maxHeaderBytes: (cfg.maxHeadersKB + cfg.maxInitialLineKB) * 1024,
      responseBody: { maxResponseBytes: cfg.maxResponseKB * 1024, aggregate: !cfg.streamingEnabled, maxChunkBytes: cfg.maxChunkKB * 1024 },
    });
    super('http', cfg, ctx, httpRoutingAdapter(params));
    this.cfg = cfg;
    const propagator = propagatorFromConfig(cfg.tracePropagator);
    const tracer = ctx.tracer;
    this.trace = (rctx, headers) => {
      const server = serverSpan(propagator, headers, { tracer });
      rctx.traceId = clientSpan(propagator, headers, server, { tracer });
    };
    this.identifier = identifierFromConfig(cfg.identifier, { dstPrefix: this.dstPrefix, routerLabel: cfg.label, log: this.log });
    this.policy = new RequestPolicy(cfg.requestAuthorizers, cfg.loggers, { stats: this.stats });
    this.accessLog = routerAccessLog(
      { path: cfg.httpAccessLog, rollPolicy: cfg.httpAccessLogRollPolicy, append: cfg.httpAccessLogAppend, rotateCount: cfg.httpAccessLogRotateCount },
      this.log,
    );
    for (const s of cfg.servers) this.addServer(s.ip, s.port, new HttpServerHandler(this, s));
  }

  identify(req: IdentifiableRequest): Promise<unknown> {
    const id = this.identifier.identify({ method: req.method ?? 'GET', url: req.url ?? '/', httpVersion: req.httpVersion, headers: req.headers });
    return Promise.resolve(identificationJson(id));
  }

  protected override async closed(): Promise<void> {
    this.identifier.close?.();
    this.policy.close();
    await this.accessLog?.close();
  }
}

/** The HTTP/1.1 client protocol, as the core sees it (stateless: one for every router). */
const HTTP_CLIENT_PROTOCOL: ClientProtocol<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier> = new HttpClientProtocol();

/** HTTP/1.1's part of the routing core: its protocol object, its policies, and the `prx-dst-*` headers and Host of each attempt. */
function httpRoutingAdapter(params: HttpParams): RoutingAdapter<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier, ResolvedClient> {
  return {
    protocol: HTTP_CLIENT_PROTOCOL,
    params,
    prepareAttempt(out, name, id, client, meta) {
      writeDestinationHeaders(out.headers, id, name.residual.isEmpty ? undefined : name.residual.show, out.clientCert, client.forwardClientCert);
      rewriteHostForAttempt(out, meta);
    },
  };
}
