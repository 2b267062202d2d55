import { answerDiagnostic, diagnosticFor, sendWithContext } from './diagnostic.js';
import type { Socket } from 'node:net';
import type { InboundRequest, InboundResponse, RefusedRequestError, ServerCallbacks, ServerConnectionOptions } from '../../protocol/http/h1/server.js';
import { serverStats, StatusCodeCounters, type Counter, type Histogram, type SettableGauge } from '../../service/stats/index.js';
import { ExceptionCounters } from '../../service/stats/exception-stats.js';
import type { HttpRouter } from './router.js';
import type { HttpServerConfig } from './schema.js';
import { AttemptHandle } from '../core/transport.js';
import type { Dtab, Path } from '../../naming/index.js';
import { RequestContext } from './ingress.js';
import { renderProxyError, writeErrorResponse, writeRawError, writeUpstreamHead } from './egress.js';
import type { HttpPathService } from './types.js';
import type { Lease } from '../core/cache.js';
import { isActivelyTracing, type Annotation, type TraceId } from '../../service/tracing.js';
import { ForwardedHeader, type ForwardedConnection } from '../../protocol/http/headers/forwarded.js';
import { ProxyErrorResponse } from '../../protocol/http/headers/error-response.js';
import { InvalidDtabHeaderError } from '../../protocol/http/headers/proxy-errors.js';

interface ServerCounters {
  readonly requests: Counter;
  readonly success: Counter;
  readonly failures: Counter;
  /** `failures/<class>`: errors are already responses here, so only the synthetic class (as in Linkerd). */
  readonly failureClasses: ExceptionCounters;
  /** `exn/<class>`: socket errors on accepted (downstream) connections (Finagle's channel stats). */
  readonly exn: ExceptionCounters;
  readonly latency: Histogram;
  readonly pending: SettableGauge;
  readonly connections: SettableGauge;
  readonly statuses: StatusCodeCounters;
}

/** How long an idle keep-alive connection may stay (Node's default). */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * The inbound side of one server of an http router: limits, context headers, identification,
 * routing through the path cache, and streaming the response back. Allocation per request is
 * kept to the request context, the outbound request and the exchange.
 */
export class HttpServerHandler implements ServerCallbacks {
  readonly router: HttpRouter;
  readonly cfg: HttpServerConfig;
  readonly serverOptions: ServerConnectionOptions;
  /** Open client connections (closed by force once a drain runs out of time). */
  readonly sockets = new Set<Socket>();
  #c: ServerCounters | undefined;
  #inflight = 0;
  #drainWaiters: (() => void)[] = [];
  localIp = '';
  localPort = 0;
  /** Adds this hop's `Forwarded` header (server `addForwardedHeader`), when configured. */
  readonly forwarded: ((ctx: RequestContext) => void) | undefined;
  readonly #forwardedHeader: ForwardedHeader | undefined;
  readonly #forwardedBySocket = new WeakMap<object, ForwardedConnection>();
  readonly #onSocketError = (err: Error): void => this.#c?.exn.recordOuter(err);

  constructor(router: HttpRouter, cfg: HttpServerConfig) {
    this.router = router;
    this.cfg = cfg;
    const rc = router.cfg;
    this.serverOptions = {
      maxInitialLineBytes: rc.maxInitialLineKB * 1024,
      maxHeaderBytes: rc.maxHeadersKB * 1024,
      maxChunkBytes: rc.maxChunkKB * 1024,
      headersTimeoutMs: cfg.requestHeadTimeoutMs,
      bodyIdleTimeoutMs: cfg.requestBodyIdleTimeoutMs,
      keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
    };
    const fwd = cfg.addForwardedHeader;
    this.#forwardedHeader = fwd === undefined ? undefined : new ForwardedHeader(fwd, { routerLabel: router.label });
    this.forwarded = fwd === undefined ? undefined : (ctx) => this.#addForwarded(ctx);
  }

  #addForwarded(ctx: RequestContext): void {
    const socket = ctx.req.socket;
    let conn = this.#forwardedBySocket.get(socket);
    if (conn === undefined) {
      conn = (this.#forwardedHeader as ForwardedHeader).forConnection(
        { address: socket.localAddress, port: socket.localPort },
        { address: socket.remoteAddress, port: socket.remotePort },
      );
      this.#forwardedBySocket.set(socket, conn);
    }
    conn.add(ctx.req.headers, ctx.req.url ?? '/');
  }

  connection(socket: Socket): void {
    const sockets = this.sockets;
    sockets.add(socket);
    this.#c?.connections.add(1);
    socket.on('error', this.#onSocketError);
    socket.once('close', () => {
      sockets.delete(socket);
      this.#c?.connections.add(-1);
    });
  }

  /** Called once the server listens: its stats scope names the real address. */
  bound(ip: string, port: number): void {
    this.localIp = ip;
    this.localPort = port;
    const scope = serverStats(this.router.stats, ip, port);
    this.#c = {
      requests: scope.counter('requests'),
      success: scope.counter('success'),
      failures: scope.counter('failures'),
      failureClasses: new ExceptionCounters(scope),
      exn: new ExceptionCounters(scope, 'exn'),
      latency: scope.stat('request_latency_ms'),
      pending: scope.settableGauge('pending'),
      connections: scope.settableGauge('connections'),
      statuses: new StatusCodeCounters(scope),
    };
    scope.gauge(['load'], () => this.#inflight);
  }

  /** Resolves when no request is in flight. */
  drained(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  request(req: InboundRequest, res: InboundResponse): void {
    const ctx = new RequestContext(this, req, res);
    this.#begin();
    void this.#serve(ctx);
  }

  #begin(): void {
    this.#inflight++;
    const c = this.#c;
    if (c !== undefined) {
      c.requests.incr();
      c.pending.add(1);
    }
  }

  /** A request completed (called once by its context): stats, trace, access log, drain. */
  end(ctx: RequestContext, status: number, success: boolean): void {
    this.#inflight--;
    const traceId = ctx.traceId;
    if (traceId !== undefined && isActivelyTracing(this.router.tracer, traceId)) this.#trace(ctx, traceId, status, success);
    const c = this.#c;
    if (c !== undefined) {
      c.pending.add(-1);
      (success ? c.success : c.failures).incr();
      if (!success) c.failureClasses.recordSynthetic();
      c.latency.add(performance.now() - ctx.started);
      if (status > 0) {
        c.statuses.record(status);
      }
    }
    this.router.accessLog?.log(ctx.accessLogEntry(status));
    if (this.#inflight === 0 && this.#drainWaiters.length > 0) {
      const ws = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const w of ws) w();
    }
  }

  /** Linkerd's trace annotations of one routed request (binaries service, client, residual; the outcome). */
  #trace(ctx: RequestContext, id: TraceId, status: number, success: boolean): void {
    const tracer = this.router.tracer;
    const now = Date.now();
    const start = now - (performance.now() - ctx.started);
    const rec = (annotation: Annotation, timestamp = now): void => tracer.record({ traceId: id, timestamp, annotation });
    rec({ kind: 'serverRecv' }, start);
    rec({ kind: 'binary', key: 'router.label', value: this.router.label }, start);
    if (ctx.dst !== undefined) rec({ kind: 'binary', key: 'service', value: ctx.dst.show }, start);
    const client = ctx.out.headers['prx-dst-client'];
    if (typeof client === 'string') rec({ kind: 'binary', key: 'client', value: client });
    const residual = ctx.out.headers['prx-dst-residual'];
    rec({ kind: 'binary', key: 'residual', value: typeof residual === 'string' ? residual : '/' });
    rec({ kind: 'binary', key: 'http.status', value: status });
    rec({ kind: 'message', content: success ? 'prx.success' : 'prx.failure' });
    rec({ kind: 'serverSend' });
  }

  async #serve(ctx: RequestContext): Promise<void> {
    let lease: Lease<HttpPathService> | undefined;
    let discard = false;
    try {
      const maxConcurrent = this.cfg.maxConcurrentRequests;
      let ingress = maxConcurrent !== undefined && this.#inflight > maxConcurrent ? ctx.rejectConcurrency() : ctx.ingress();
      // Only a request whose body must be read first waits here.
      if (ingress instanceof Promise) ingress = await ingress;
      if (ingress.kind === 'answered') return;
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
      const e = renderProxyError(ctx, err);
      // A binding the request's own dtab broke is not kept: a client can make each one unique.
      if (e instanceof InvalidDtabHeaderError) discard = true;
      writeErrorResponse(ctx, e);
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
