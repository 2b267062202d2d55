import { writeDestinationHeaders } from '../../protocol/http/headers/client-cert.js';
import type { IncomingHttpHeaders } from 'node:http2';
import { H2ClientProtocol } from '../../protocol/h2/client-protocol.js';
import type { H2Classification, H2EndpointOptions, H2Exchange, H2Request } from '../../protocol/h2/client-transport.js';
import { h2IdentifierFromConfig, type H2Identifier } from '../../protocol/h2/identifiers.js';
import { identificationJson } from '../../protocol/http/identifiers/index.js';
import { RequestPolicy } from '../../protocol/http/policies.js';
import { routerAccessLog, type AccessLog } from '../../protocol/http/access-log.js';
import { clientSpan, propagatorFromConfig, serverSpan } from '../../protocol/http/headers/trace-propagator.js';
import { ViaStamp } from '../../protocol/http/headers/via.js';
import type { TraceId } from '../../service/tracing.js';
import { RouterBase } from '../core/router-base.js';
import type { RoutingAdapter } from '../core/routing.js';
import type { IdentifiableRequest, RouterContext } from '../core/types.js';
import { H2Params, type ResolvedH2Client } from './params.js';
import type { H2RouterConfig } from './schema.js';
import { H2ServerHandler } from './server.js';
import type { H2PathService, H2RouterHost } from './types.js';
import { GrpcStatusCounters } from '../../protocol/h2/stats.js';
import { serviceStats } from '../../service/stats/index.js';

/**
 * The `h2` router (HTTP/2 and gRPC): servers that identify each stream, bind its name through the
 * dtab and forward it, streaming both ways, through the routing core's balanced, failure-aware
 * clients, one multiplexed session per endpoint.
 */
export class H2Router extends RouterBase<H2Request, H2Exchange, H2EndpointOptions, H2Classification, ResolvedH2Client> implements H2RouterHost {
  readonly cfg: H2RouterConfig;
  readonly identifier: H2Identifier;
  /** The router's `requestAuthorizers` and `loggers`. */
  readonly policy: RequestPolicy;
  readonly accessLog: AccessLog | undefined;
  readonly via = new ViaStamp();
  readonly #trace: (headers: IncomingHttpHeaders) => TraceId;
  readonly #serviceGrpc = new WeakMap<H2PathService, GrpcStatusCounters>();

  constructor(cfg: H2RouterConfig, ctx: RouterContext) {
    super('h2', cfg, ctx, h2RoutingAdapter(new H2Params(cfg.client, cfg.service)));
    this.cfg = cfg;
    const propagator = propagatorFromConfig(cfg.tracePropagator);
    const tracer = ctx.tracer;
    this.#trace = (headers) => {
      const h = headers as Record<string, string | string[] | undefined>;
      return clientSpan(propagator, h, serverSpan(propagator, h, { tracer }), { tracer });
    };
    this.identifier = h2IdentifierFromConfig(cfg.identifier, { dstPrefix: this.dstPrefix, routerLabel: cfg.label, log: this.log });
    this.policy = new RequestPolicy(cfg.requestAuthorizers, cfg.loggers, { stats: this.stats });
    this.accessLog = routerAccessLog(
      { path: cfg.h2AccessLog, rollPolicy: cfg.h2AccessLogRollPolicy, append: cfg.h2AccessLogAppend, rotateCount: cfg.h2AccessLogRotateCount },
      this.log,
    );
    for (const s of cfg.servers) this.addServer(s.ip, s.port, new H2ServerHandler(this, s));
  }

  /**
   * Per path service, so they go with it: a name's service scope is pruned when its last path
   * service closes, and a later one makes new counters.
   */
  serviceGrpc(svc: H2PathService): GrpcStatusCounters {
    let c = this.#serviceGrpc.get(svc);
    if (c === undefined) {
      c = new GrpcStatusCounters(serviceStats(this.stats, svc.dst));
      this.#serviceGrpc.set(svc, c);
    }
    return c;
  }

  trace(headers: IncomingHttpHeaders): TraceId {
    return this.#trace(headers);
  }

  identify(req: IdentifiableRequest): Promise<unknown> {
    const headers = { ...req.headers, ':method': req.method ?? 'GET', ':path': req.url ?? '/', ':authority': firstOf(req.headers['host']) ?? '' };
    const id = this.identifier.identify({ method: req.method ?? 'GET', url: req.url ?? '/', httpVersion: '2.0', headers });
    return Promise.resolve(identificationJson(id));
  }

  protected override async closed(): Promise<void> {
    this.identifier.close?.();
    this.policy.close();
    await this.accessLog?.close();
  }
}

function firstOf(v: string | string[] | undefined): string | undefined {
  return typeof v === 'string' ? v : v?.[0];
}

const H2_CLIENT_PROTOCOL = new H2ClientProtocol();

/** h2's part of the routing core: its protocol object, its policies, and the `prx-dst-*` headers of each attempt. */
function h2RoutingAdapter(params: H2Params): RoutingAdapter<H2Request, H2Exchange, H2EndpointOptions, H2Classification, ResolvedH2Client> {
  return {
    protocol: H2_CLIENT_PROTOCOL,
    params,
    prepareAttempt(req, name, id, client) {
      const h = req.headers;
      writeDestinationHeaders(h as Record<string, string | string[] | undefined>, id, name.residual.isEmpty ? undefined : name.residual.show, req.clientCert, client.forwardClientCert);
      h[':scheme'] = client.client.transport.tls === undefined ? 'http' : 'https';
    },
  };
}
