import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { Dtab, NameInterpreter, Path } from '../../naming/index.js';
import type { ResponseClassifier } from '../../protocol/http/classifiers.js';
import type { TraceId, Tracer } from '../../service/tracing.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import type { AccessLog, AccessLogEntry } from '../../protocol/http/access-log.js';
import type { ForwardOptions } from '../../protocol/http/forward-response.js';
import type { RequestBodyLimits } from '../../protocol/http/inbound-request.js';
import type { Lease } from '../core/cache.js';
import type { InboundRequest, InboundResponse } from '../../protocol/http/h1/server.js';
import type { HttpIdentifier } from '../../protocol/http/identifiers/index.js';
import type { PolicyRequest, RequestPolicy } from '../../protocol/http/policies.js';
import type { ViaStamp } from '../../protocol/http/headers/via.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import type { Client } from '../core/client.js';
import type { PathService, Served } from '../core/path-service.js';
import type { RoutingCore } from '../core/routing.js';
import type { ResolvedClient } from './params.js';
import type { EndpointOptions, OutboundRequest } from '../../protocol/http/client-transport.js';
import type { HttpRouterConfig, HttpServerConfig } from './schema.js';

/** The HTTP/1.1 instances of the router core's generic parts. */
export type HttpPathService = PathService<OutboundRequest, UpstreamExchange, ResponseClassifier>;
export type HttpClient = Client<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier>;
export type HttpServed = Served<OutboundRequest, UpstreamExchange>;
export type HttpRoutingCore = RoutingCore<OutboundRequest, UpstreamExchange, EndpointOptions, ResponseClassifier, ResolvedClient>;

/**
 * What a request sees of its router: settings and naming, no caches and no servers. Requests hold
 * this view instead of a back-pointer into the router (which kept the http folder one import cycle).
 */
export interface HttpRouterView {
  readonly label: string;
  readonly cfg: HttpRouterConfig;
  readonly log: Logger;
  readonly baseDtab: Dtab;
  readonly interpreter: NameInterpreter;
  readonly identifier: HttpIdentifier;
  /** The router's `requestAuthorizers` and `loggers`. */
  readonly policy: RequestPolicy;
  readonly via: ViaStamp;
  /** Trace propagation on a routed request (the router's `tracePropagator`). */
  trace(ctx: RequestScope, headers: IncomingHttpHeaders): void;
}

/** What a request sees of the server that accepted it. */
export interface HttpServerView {
  readonly router: HttpRouterView;
  readonly cfg: HttpServerConfig;
  /** Adds this hop's `Forwarded` header (server `addForwardedHeader`), when configured. */
  readonly forwarded: ((ctx: RequestScope) => void) | undefined;
  /** How this server forwards responses, and its request-body limits (made once). */
  readonly forwarding: ForwardOptions;
  readonly bodyLimits: RequestBodyLimits;
  /** The request completed: stats, trace, access log, drain (once per request). */
  end(ctx: RequestScope, status: number, success: boolean): void;
}

/** One inbound request as the response writers see it (implemented by `RequestContext`). */
export interface RequestScope {
  readonly server: HttpServerView;
  readonly req: InboundRequest;
  readonly res: InboundResponse;
  readonly started: number;
  readonly bindDeadline: number;
  readonly out: OutboundRequest;
  readonly dst: Path | undefined;
  readonly localDtab: Dtab | undefined;
  readonly served: HttpServed | undefined;
  /** What the router's authorizers and loggers see of the request (undefined: not identified, or none configured). */
  readonly policyRequest: PolicyRequest | undefined;
  /** Every authorizer let the request through. */
  readonly authorized: boolean;
  traceId: TraceId | undefined;
  /** Status sent to the client (0 until the head is written). */
  status: number;
  /** The response's Content-Length as sent, for the access log. */
  responseLength: number | undefined;
  /** The forwarded response is being written: once it is all out, the request completes as `success`. */
  succeedOnFinish(success: boolean): void;
  /** Completes the request once (stats, access log). */
  finish(status: number, success: boolean): void;
  /** The access-log line of this request. */
  accessLogEntry(status: number): AccessLogEntry;
}

/** What a server of the router needs of it beyond the request's view: routing, stats, the access log. */
export interface HttpRouterHost extends HttpRouterView {
  readonly stats: StatsReceiver;
  readonly tracer: Tracer;
  readonly accessLog: AccessLog | undefined;
  /** Borrows the path service for a logical name and request dtab. */
  pathService(dst: Path, localDtab: Dtab): Lease<HttpPathService>;
}
