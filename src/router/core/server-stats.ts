import type { Socket } from 'node:net';
import { serverStats, type Counter, type Histogram, type SettableGauge, type StatsReceiver } from '../../service/stats/index.js';
import { ExceptionCounters } from '../../service/stats/exception-stats.js';
import { isActivelyTracing, type Annotation, type TraceId, type Tracer } from '../../service/tracing.js';

interface ServerCounters {
  readonly scope: StatsReceiver;
  readonly requests: Counter;
  readonly success: Counter;
  readonly failures: Counter;
  /** `failures/<class>`: errors are already answers here, so only the synthetic class (as in Linkerd). */
  readonly failureClasses: ExceptionCounters;
  /** `exn/<class>`: socket errors on accepted (downstream) connections (Finagle's channel stats). */
  readonly exn: ExceptionCounters;
  readonly latency: Histogram;
  readonly pending: SettableGauge;
  readonly connections: SettableGauge;
}

/** What a completed request tells the trace (Linkerd's server-side annotations). */
export interface ServedTrace {
  readonly traceId: TraceId;
  /** performance.now() when the request arrived. */
  readonly started: number;
  /** The logical name, once identified. */
  readonly service: string | undefined;
  /** The bound client id, once an attempt was made. */
  readonly client: string | undefined;
  readonly residual: string;
  readonly success: boolean;
  /** The protocol's own annotations (HTTP: `http.status`). */
  readonly extra?: readonly Annotation[];
}

/**
 * One listening server of any router: requests in flight and the drain that waits for them, and
 * Finagle's server stats under `rt/<router>/server/<ip>/<port>/` (requests, success, failures,
 * latency, pending, connections, load, exn). The counters exist once the server is bound: its
 * scope names the real port.
 */
export class ServerStats {
  readonly #router: StatsReceiver;
  readonly #label: string;
  readonly #tracer: Tracer;
  #c: ServerCounters | undefined;
  #inflight = 0;
  #drainWaiters: (() => void)[] = [];
  readonly onSocketError = (err: Error): void => this.#c?.exn.recordOuter(err);

  constructor(router: StatsReceiver, label: string, tracer: Tracer) {
    this.#router = router;
    this.#label = label;
    this.#tracer = tracer;
  }

  /** The server listens on `ip:port`; returns its scope for a protocol's own server stats. */
  bound(ip: string, port: number): StatsReceiver {
    const scope = serverStats(this.#router, ip, port);
    this.#c = {
      scope,
      requests: scope.counter('requests'),
      success: scope.counter('success'),
      failures: scope.counter('failures'),
      failureClasses: new ExceptionCounters(scope),
      exn: new ExceptionCounters(scope, 'exn'),
      latency: scope.stat('request_latency_ms'),
      pending: scope.settableGauge('pending'),
      connections: scope.settableGauge('connections'),
    };
    scope.gauge(['load'], () => this.#inflight);
    return scope;
  }

  get inflight(): number {
    return this.#inflight;
  }

  /** Open client connections (closed by force once a drain runs out of time). */
  readonly sockets = new Set<Socket>();

  /** Counts an accepted connection while it is open, and its socket errors under `exn/`. */
  track(socket: Socket): void {
    const sockets = this.sockets;
    sockets.add(socket);
    this.#c?.connections.add(1);
    socket.on('error', this.onSocketError);
    socket.once('close', () => {
      sockets.delete(socket);
      this.#c?.connections.add(-1);
    });
  }

  /** A request arrived. */
  begin(): void {
    this.#inflight++;
    const c = this.#c;
    if (c !== undefined) {
      c.requests.incr();
      c.pending.add(1);
    }
  }

  /** A request completed (once per {@link begin}); wakes the drain when it was the last. */
  end(success: boolean, latencyMs: number): void {
    this.#inflight--;
    const c = this.#c;
    if (c !== undefined) {
      c.pending.add(-1);
      (success ? c.success : c.failures).incr();
      if (!success) c.failureClasses.recordSynthetic();
      c.latency.add(latencyMs);
    }
    if (this.#inflight === 0 && this.#drainWaiters.length > 0) {
      const ws = this.#drainWaiters;
      this.#drainWaiters = [];
      for (const w of ws) w();
    }
  }

  /** Resolves when no request is in flight. */
  drained(): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /** Whether `traceId` is sampled: only then is {@link trace} worth its allocations. */
  tracing(traceId: TraceId | undefined): traceId is TraceId {
    return traceId !== undefined && isActivelyTracing(this.#tracer, traceId);
  }

  /** Linkerd's trace annotations of one routed request (router label, service, client, residual; the outcome). */
  trace(t: ServedTrace): void {
    const tracer = this.#tracer;
    const id = t.traceId;
    const now = Date.now();
    const start = now - (performance.now() - t.started);
    const rec = (annotation: Annotation, timestamp = now): void => tracer.record({ traceId: id, timestamp, annotation });
    rec({ kind: 'serverRecv' }, start);
    rec({ kind: 'binary', key: 'router.label', value: this.#label }, start);
    if (t.service !== undefined) rec({ kind: 'binary', key: 'service', value: t.service }, start);
    if (t.client !== undefined) rec({ kind: 'binary', key: 'client', value: t.client });
    rec({ kind: 'binary', key: 'residual', value: t.residual });
    for (const a of t.extra ?? []) rec(a);
    rec({ kind: 'message', content: t.success ? 'prx.success' : 'prx.failure' });
    rec({ kind: 'serverSend' });
  }
}
