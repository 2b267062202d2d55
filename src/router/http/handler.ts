import { answerDiagnostic, diagnosticFor, sendWithContext } from './diagnostic.js';
import type { Socket } from 'node:net';
import { H1Server, serverConnectionOptions, type InboundRequest, type InboundResponse, type RefusedRequestError, type ServerCallbacks, type ServerConnectionOptions } from '../../protocol/http/h1/server.js';
import type { ProtocolServer } from '../core/router-base.js';
import type { ServerAddress } from '../core/types.js';
import { StatusCodeCounters } from '../../service/stats/index.js';
import { ServerStats } from '../core/server-stats.js';
import type { HttpServerConfig } from './schema.js';
import { AttemptHandle } from '../core/transport.js';
import type { Dtab, Path } from '../../naming/index.js';
import { RequestContext } from './ingress.js';
import { renderProxyError, writeErrorResponse, writeUpstreamHead } from './egress.js';
import { writeRawError } from '../../protocol/http/h1/tunnel.js';
import type { HttpPathService, HttpRouterHost, HttpServerView, RequestScope } from './types.js';
import type { Lease } from '../core/cache.js';
import { requestDtabFailure } from '../core/binding.js';
import { ForwardedHeader } from '../../protocol/http/headers/forwarded.js';
import type { ForwardOptions } from '../../protocol/http/forward-response.js';
import type { RequestBodyLimits } from '../../protocol/http/inbound-request.js';
import { ProxyErrorResponse } from '../../protocol/http/headers/error-response.js';
import { serverTlsOptions } from '../../service/tls-settings.js';

/**
 * The inbound side of one server of an http router: limits, context headers, identification,
 * routing through the path cache, and streaming the response back. Allocation per request is
 * kept to the request context, the outbound request and the exchange.
 */
export class HttpServerHandler implements ServerCallbacks, HttpServerView, ProtocolServer {
  readonly router: HttpRouterHost;
  readonly cfg: HttpServerConfig;
  readonly serverOptions: ServerConnectionOptions;
  readonly stats: ServerStats;
  readonly #server: H1Server;
  /** `status/<code>` of the answers, once bound. */
  #statuses: StatusCodeCounters | undefined;
  /** Adds this hop's `Forwarded` header (server `addForwardedHeader`), when configured. */
  readonly forwarded: ((ctx: RequestScope) => void) | undefined;
  readonly forwarding: ForwardOptions;
  readonly bodyLimits: RequestBodyLimits;

  constructor(router: HttpRouterHost, cfg: HttpServerConfig) {
    this.router = router;
    this.cfg = cfg;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    const rc = router.cfg;
    this.serverOptions = serverConnectionOptions({ ...rc, ...cfg });
    this.forwarding = { clearContext: cfg.clearContext, compressionLevel: rc.compressionLevel };
    this.bodyLimits = { maxRequestBytes: rc.maxRequestKB * 1024, streaming: rc.streamingEnabled };
    const fwd = cfg.addForwardedHeader;
    const header = fwd === undefined ? undefined : new ForwardedHeader(fwd, { routerLabel: router.label });
    this.forwarded = header === undefined ? undefined : (ctx) => header.addTo(ctx.req.socket, ctx.req.headers, ctx.req.url);
    this.#server = new H1Server(this.serverOptions, this, cfg.tls === undefined ? undefined : serverTlsOptions(cfg.tls));
  }

  connection(socket: Socket): void {
    this.stats.track(socket);
  }

  async listen(ip: string, port: number): Promise<ServerAddress> {
    const a = await this.#server.listen(ip, port);
    // The stats scope names the real address (port 0 became the real port).
    this.#statuses = new StatusCodeCounters(this.stats.bound(a.address, a.port));
    return { ip: a.address, port: a.port };
  }

  stopAccepting(): void {
    this.#server.close();
    // Idle keep-alive connections go now; busy ones finish their request first.
    this.#server.closeIdleConnections();
  }

  closeAll(): void {
    this.#server.closeAllConnections();
  }

  request(req: InboundRequest, res: InboundResponse): void {
    const ctx = new RequestContext(this, req, res);
    this.stats.begin();
    void this.#serve(ctx);
  }

  /** A request completed (called once by its context): stats, trace, access log, drain. */
  end(ctx: RequestScope, status: number, success: boolean): void {
    const stats = this.stats;
    const traceId = ctx.traceId;
    if (stats.tracing(traceId)) {
      const h = ctx.out.headers;
      const client = h['prx-dst-client'];
      const residual = h['prx-dst-residual'];
      stats.trace({
        traceId,
        started: ctx.started,
        service: ctx.dst?.show,
        client: typeof client === 'string' ? client : undefined,
        residual: typeof residual === 'string' ? residual : '/',
        success,
        extra: [{ kind: 'binary', key: 'http.status', value: status }],
      });
    }
    if (status > 0) this.#statuses?.record(status);
    const policyRequest = ctx.policyRequest;
    if (policyRequest !== undefined) this.router.policy.completed(policyRequest, status, performance.now() - ctx.started, ctx.authorized);
    this.router.accessLog?.log(ctx.accessLogEntry(status));
    stats.end(success, performance.now() - ctx.started);
  }

  async #serve(ctx: RequestContext): Promise<void> {
    let lease: Lease<HttpPathService> | undefined;
    let discard = false;
    try {
      const maxConcurrent = this.cfg.maxConcurrentRequests;
      let ingress = maxConcurrent !== undefined && this.stats.inflight > maxConcurrent ? ctx.rejectConcurrency() : ctx.ingress();
      // Only a request whose body must be read first waits here.
      if (ingress instanceof Promise) ingress = await ingress;
      if (ingress.kind === 'answered') return;
      const policyRequest = ctx.policyRequest;
      if (policyRequest !== undefined && this.router.policy.authorizers.length > 0) {
        await this.router.policy.authorize(policyRequest);
        ctx.authorized = true;
      }
      const diagnostic = diagnosticFor(ctx);
      lease = this.router.pathService(ctx.dst as Path, ctx.localDtab as Dtab);
      const svc = lease.value;
      ctx.service = svc;
      if (diagnostic === 'answer' || diagnostic === 'answerWithContext') {
        await answerDiagnostic(ctx, svc, diagnostic === 'answerWithContext');
        return;
      }
      // The client may already have gone (the context then holds a cancelled handle).
      const handle = (ctx.handle ??= new AttemptHandle());
      const served = await svc.serve(ctx.out, handle, ctx.bindDeadline, ctx.started);
      ctx.served = served;
      const ok = served.responseClass === 'success';
      svc.record(ok, performance.now() - ctx.started);
      if (diagnostic === 'forwardWithContext') await sendWithContext(ctx, served, ok);
      else writeUpstreamHead(ctx, served, ok);
    } catch (err) {
      // A response head that could not be written (node refused a header): free its connection.
      if (ctx.served !== undefined && !ctx.res.headersSent) ctx.served.attempt.exchange.abort(err instanceof Error ? err : new Error(String(err)));
      ctx.service?.record(false, performance.now() - ctx.started, err);
      // A binding the request's own dtab broke is not kept: a client can make each one unique.
      discard = requestDtabFailure(err, ctx.localDtab) !== undefined;
      writeErrorResponse(ctx, renderProxyError(ctx, err));
    } finally {
      if (discard) lease?.discard();
      else lease?.release();
    }
  }

  rejected(err: RefusedRequestError, socket: Socket): void {
    if (!socket.writable) {
      socket.destroy();
      return;
    }
    this.router.log.debug({ err: err.message, code: err.code }, 'request refused');
    writeRawError(socket, new ProxyErrorResponse(err.status, err.message, false), this.router.cfg.maxHeadersKB);
  }
}
