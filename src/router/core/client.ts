import type { Logger } from 'pino';
import { addressKey, type Addr, type BoundName, type Closable } from '../../naming/index.js';
import type { Balancer, BalancerFactory } from '../../service/balancer/types.js';
import type { ResponseClass } from '../../service/classifier.js';
import { AdminTargetRefusedError, ConnectionFailedError, NoBrokersAvailableError, TooManyWaitersError } from '../../service/failures.js';
import type { FailureAccrualPolicyFactory } from '../../service/policy/index.js';
import { RetryBudget } from '../../service/policy/index.js';
import { clientServiceStats, type Counter, type StatsReceiver } from '../../service/stats/index.js';
import { ExceptionCounters, transportError } from '../../service/stats/exception-stats.js';
import type { ProtectedListeners } from './protected-listeners.js';
import { Endpoint } from './endpoint.js';
import { LoadBalancerStats } from './balancer-stats.js';
import { clientCounters, type ClientCounters } from './client-counters.js';
import type { AttemptHandle, ClientProtocol, Exchange, ResponseStats } from './transport.js';

/** How often one endpoint's failing TLS handshakes are logged. */
const TLS_WARN_INTERVAL_MS = 60_000;

/** Finagle's cap on requeues of one request. */
const MAX_REQUEUES = 25;
const FAIL_FAST_MIN_MS = 1000;
const FAIL_FAST_MAX_MS = 32_000;

/** The client parameters a {@link Client} needs, resolved for its id. */
export interface ClientParams<TransportOpts> {
  /** How the protocol's transport connects to each endpoint. */
  readonly transport: TransportOpts;
  readonly accrual: FailureAccrualPolicyFactory;
  readonly balancer: BalancerFactory;
  readonly failFast: boolean;
  readonly requeueBudget: { readonly minRetriesPerSec: number; readonly percentCanRetry: number; readonly ttlSecs: number };
}

/** One attempt's outcome: the exchange (its head resolved) and the endpoint that served it. */
export interface Attempt<Req, Ex extends Exchange> {
  readonly exchange: Ex;
  readonly endpoint: Endpoint<Req, Ex>;
  readonly started: number;
}

/**
 * The client of one concrete destination (a bound id such as `/#/io.prx.fs/cat`): a load
 * balancer over the live endpoints of its address set, with connection-level requeues under a
 * budget, failure accrual per endpoint and Finagle's client stats (`rt/<router>/client/<id>/…`).
 */
export class Client<Req, Ex extends Exchange, TransportOpts = unknown, Classifier = unknown> implements Closable {
  readonly id: string;
  readonly #endpoints = new Map<string, Endpoint<Req, Ex>>();
  /** Endpoints discovery removed that the balancer keeps while they stay available (enableProbation). */
  readonly #probation = new Set<Endpoint<Req, Ex>>();
  /** Endpoints closed while requests were still on them: counted in `pending` until they finish. */
  readonly #draining = new Set<Endpoint<Req, Ex>>();
  readonly #balancer: Balancer<Endpoint<Req, Ex>>;
  readonly #params: ClientParams<TransportOpts>;
  readonly #protocol: ClientProtocol<Req, Ex, TransportOpts, Classifier>;
  readonly #requeueBudget: RetryBudget;
  readonly #stats: StatsReceiver;
  readonly #log: Logger;
  readonly #observation: Closable;
  readonly #counters: ClientCounters;
  readonly #requeues: Counter;
  /** `exn/<class>`: socket errors on established connections (Finagle's channel stats). */
  readonly #exn: ExceptionCounters;
  readonly #requeueExhausted: Counter;
  readonly #removals: Counter;
  readonly #revivals: Counter;
  readonly #probes: Counter;
  readonly #lbStats: LoadBalancerStats<Endpoint<Req, Ex>>;
  /** Finagle's `removed_for_ms`: a counter adding up the backoff of every removal. */
  readonly #removedFor: Counter;
  readonly #responseStats: ResponseStats<Ex>;
  readonly #perService = new Map<string, ClientCounters>();
  #addr: Addr = { kind: 'pending' };
  #boundMeta: Readonly<Record<string, unknown>> = {};
  /** Requests that arrived before the name's first address was known (see {@link Client.whenResolved}). */
  #unresolvedWaiters: (() => void)[] | undefined = [];

  readonly #onClose: (() => void) | undefined;
  readonly #protected: ProtectedListeners | undefined;
  /** An address of the bound set left out as the admin listener: what a request finding no endpoint is told. */
  #refusedTarget: string | undefined;

  /**
   * `onClose` runs once the client is closed (its cache entry evicted): the owner's clean-up.
   * Requests are never sent to `protectedListeners` (the process's admin interface).
   */
  constructor(
    name: BoundName,
    protocol: ClientProtocol<Req, Ex, TransportOpts, Classifier>,
    params: ClientParams<TransportOpts>,
    stats: StatsReceiver,
    log: Logger,
    onClose?: () => void,
    protectedListeners?: ProtectedListeners,
  ) {
    this.id = name.idStr;
    this.#protocol = protocol;
    this.#onClose = onClose;
    this.#protected = protectedListeners;
    this.#params = params;
    this.#stats = stats;
    this.#log = log;
    this.#balancer = params.balancer<Endpoint<Req, Ex>>();
    this.#requeueBudget = new RetryBudget(params.requeueBudget);
    this.#counters = clientCounters(stats);
    this.#responseStats = protocol.responseStats(stats);
    this.#requeues = stats.counter('retries', 'requeues');
    this.#exn = new ExceptionCounters(stats, 'exn');
    this.#requeueExhausted = stats.counter('retries', 'budget_exhausted');
    this.#removals = stats.counter('failure_accrual', 'removals');
    this.#revivals = stats.counter('failure_accrual', 'revivals');
    this.#probes = stats.counter('failure_accrual', 'probes');
    this.#removedFor = stats.counter('failure_accrual', 'removed_for_ms');
    stats.gauge(['retries', 'budget'], () => this.#requeueBudget.balance);
    this.#lbStats = new LoadBalancerStats(stats, this.#balancer);
    stats.gauge(['connections'], () => {
      let n = 0;
      for (const e of this.#endpoints.values()) n += e.connections;
      for (const e of this.#draining) n += e.connections;
      return n;
    });
    stats.gauge(['pending'], () => {
      let n = 0;
      for (const e of this.#endpoints.values()) n += e.load;
      for (const e of this.#draining) n += e.load;
      return n;
    });
    this.#observation = name.addr.observe((addr) => this.#update(addr));
  }

  get addr(): Addr {
    return this.#addr;
  }

  /** The metadata of the address set balanced over (the last bound one: pending and failed keep it). */
  get boundMeta(): Readonly<Record<string, unknown>> {
    return this.#boundMeta;
  }

  /** True until the name's address has been known once (a new bound name, e.g. after a dtab change). */
  get resolving(): boolean {
    return this.#unresolvedWaiters !== undefined;
  }

  /**
   * Waits for the name's first address, so a request that follows a freshly bound name is not
   * failed with "no hosts" while its namer answers (Finagle's pending Addr); `deadline` (epoch ms)
   * is the binding deadline, and `onTimeout` makes its error.
   */
  whenResolved(deadline: number, onTimeout: () => Error): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiters = this.#unresolvedWaiters;
      const wait = deadline - Date.now();
      if (waiters === undefined) return resolve();
      if (wait <= 0) return reject(onTimeout());
      const timer = setTimeout(() => {
        const i = waiters.indexOf(wake);
        if (i >= 0) waiters.splice(i, 1);
        reject(onTimeout());
      }, wait);
      const wake = (): void => {
        clearTimeout(timer);
        resolve();
      };
      waiters.push(wake);
    });
  }

  #wakeUnresolved(): void {
    const waiters = this.#unresolvedWaiters;
    this.#unresolvedWaiters = undefined;
    if (waiters !== undefined) for (const w of waiters) w();
  }

  /** The endpoint addresses currently balanced over (`ip:port`). */
  get addresses(): string[] {
    return [...this.#endpoints.keys()];
  }

  /**
   * Sends `req` to an endpoint picked by the balancer, requeueing connection failures on other
   * endpoints while the body can be replayed and the requeue budget allows. Resolves once a
   * response head arrives. A failed attempt is counted here, for the client and for `service`
   * (the logical name it was sent for); a response is counted by {@link record}.
   */
  async send(req: Req, handle: AttemptHandle, service: string): Promise<Attempt<Req, Ex>> {
    this.#requeueBudget.deposit();
    for (let requeues = 0; ; requeues++) {
      if (handle.cancelled !== undefined) throw handle.cancelled;
      const endpoint = this.#balancer.pick();
      if (endpoint === undefined) {
        // Refused before accrual and stats: no endpoint did anything wrong, the routing did.
        if (this.#refusedTarget !== undefined) throw new AdminTargetRefusedError(service, this.#refusedTarget);
        throw new NoBrokersAvailableError(this.id, `No hosts are available for client ${this.id}`);
      }
      const probes = endpoint.accrual.probes;
      endpoint.accrual.tryAcquire();
      if (endpoint.accrual.probes !== probes) this.#probes.incr();
      const started = performance.now();
      let exchange: Ex | undefined;
      try {
        if (endpoint.saturated) throw new TooManyWaitersError(endpoint.key);
        exchange = endpoint.dispatch(req);
        handle.exchange = exchange;
        await exchange.head;
        return { exchange, endpoint, started };
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        const cancelled = handle.cancelled !== undefined;
        const protocol = this.#protocol;
        // A full pool (a rejection: the request never left) is requeued like a failed connect.
        const rejected = e instanceof TooManyWaitersError;
        const connectFailure = !cancelled && (rejected || protocol.isRequeueable(e, exchange));
        this.#countFailure(this.#counters, e);
        this.#countFailure(this.#serviceCounters(service), e);
        const transport = transportError(e);
        if (transport !== undefined) this.#exn.recordOuter(transport);
        // A client that went away says nothing about the endpoint; a full pool is this proxy's own
        // back-pressure, not a sign of the endpoint's health. Either releases a probe it was given.
        if (cancelled || rejected) endpoint.accrual.recordIgnored();
        else this.recordOutcome(endpoint, false, performance.now() - started);
        // Fail-fast hears of failed connections only: Finagle's pool rejects above it.
        if (connectFailure && !rejected && this.#params.failFast) {
          endpoint.markFailFast(FAIL_FAST_MIN_MS, FAIL_FAST_MAX_MS);
          this.#leaveProbationIfDown(endpoint);
        }
        // The 502 keeps Linkerd's text, which does not say why: the log does, once a minute per endpoint.
        if (protocol.isTlsFailure(e) && endpoint.warnDue(TLS_WARN_INTERVAL_MS)) {
          this.#log.warn({ client: this.id, endpoint: endpoint.key, err: e.message }, 'TLS handshake with endpoint failed');
        }
        if (!connectFailure) throw e;
        if (requeues >= MAX_REQUEUES || !protocol.isReplayable(req)) throw this.#requeueFailed(endpoint, e);
        if (!this.#requeueBudget.tryWithdraw()) {
          this.#requeueExhausted.incr();
          throw this.#requeueFailed(endpoint, e);
        }
        this.#requeues.incr();
        this.#log.debug({ client: this.id, endpoint: endpoint.key, err: e.message }, 'requeueing after connection failure');
      }
    }
  }

  /**
   * Records a classified response: client stats, the per-service breakdown, the status code,
   * failure accrual and the balancer's latency view.
   */
  record(attempt: Attempt<Req, Ex>, service: string, cls: ResponseClass): void {
    const success = cls === 'success';
    const latency = performance.now() - attempt.started;
    const ex = attempt.exchange;
    if (success && !ex.finished && this.#protocol.classifiesAtEnd === true) {
      // Counted when it ends, in its final class (#outcome).
      ex.pendingService = service;
      ex.outcomePending = true;
      ex.headClass = cls;
      this.#responseStats.record(ex);
      this.#balancer.observe(attempt.endpoint, latency, false);
      return;
    }
    this.#count(service, success, latency);
    this.#responseStats.record(ex);
    if (success && !ex.finished) {
      // The response still streams: failure accrual hears of its outcome once it has ended
      // (#outcome, where the protocol may still call it a failure), or of a failure if it breaks
      // (recordBodyFailure).
      ex.outcomePending = true;
      ex.headClass = cls;
      this.#balancer.observe(attempt.endpoint, latency, false);
      return;
    }
    this.recordOutcome(attempt.endpoint, success, latency);
  }

  /** The client's and the service's request/success/failure counters and latency. */
  #count(service: string, success: boolean, latency: number): void {
    const c = this.#counters;
    c.requests.incr();
    (success ? c.success : c.failures).incr();
    c.latency.add(latency);
    const s = this.#serviceCounters(service);
    s.requests.incr();
    (success ? s.success : s.failures).incr();
    if (!success) {
      c.failureClasses.recordSynthetic();
      s.failureClasses.recordSynthetic();
    }
    s.latency.add(latency);
  }

  /** Counters deferred to the end of the exchange (classifiesAtEnd), now in its final class. */
  #countDeferred(attempt: { readonly exchange: Ex; readonly started: number } | Ex, success: boolean): void {
    const ex = 'exchange' in attempt ? attempt.exchange : attempt;
    const service = ex.pendingService;
    if (service === undefined) return;
    ex.pendingService = undefined;
    this.#count(service, success, 'started' in attempt ? performance.now() - attempt.started : 0);
  }

  /**
   * The body of a response counted at its head failed on the endpoint's side (a framing error, a
   * connection cut mid-body): a failure against the endpoint, as Finagle counts a codec failure.
   */
  recordBodyFailure(attempt: Attempt<Req, Ex>): void {
    attempt.exchange.outcomePending = false;
    this.#countDeferred(attempt, false);
    this.#accrue(attempt.endpoint, false);
    this.#balancer.observe(attempt.endpoint, performance.now() - attempt.started, true);
    this.#leaveProbationIfDown(attempt.endpoint);
  }

  /** A streamed response whose outcome was pending has ended: its final class (the protocol's, or the head's). */
  readonly #outcome = (endpoint: Endpoint<Req, Ex>, ex: Ex): void => {
    if (ex.error !== undefined) {
      // Ended for a reason that is not the endpoint's (the client left, its head could not be
      // written; the endpoint's own body failures are recorded before this): ignored by accrual.
      endpoint.accrual.recordIgnored();
      this.#countDeferred(ex, false);
      return;
    }
    const success = (this.#protocol.endClass(ex) ?? ex.headClass) === 'success';
    this.#countDeferred(ex, success);
    this.#accrue(endpoint, success);
    if (!success) {
      this.#balancer.observe(endpoint, 0, true);
      this.#leaveProbationIfDown(endpoint);
    }
  };

  /** Feeds failure accrual and the balancer; counts removals (and for how long) and revivals. */
  recordOutcome(endpoint: Endpoint<Req, Ex>, success: boolean, latencyMs: number): void {
    this.#accrue(endpoint, success);
    this.#balancer.observe(endpoint, latencyMs, !success);
    if (!success) this.#leaveProbationIfDown(endpoint);
  }

  /** Failure accrual (and fail-fast) of one outcome; counts removals (and for how long) and revivals. */
  #accrue(endpoint: Endpoint<Req, Ex>, success: boolean): void {
    const a = endpoint.accrual;
    const removals = a.removals;
    const revivals = a.revivals;
    if (success) {
      a.recordSuccess();
      endpoint.clearFailFast();
    } else {
      a.recordFailure();
    }
    if (a.removals !== removals) {
      this.#removals.incr();
      this.#removedFor.incr(a.lastRemovedForMs);
    }
    if (a.revivals !== revivals) this.#revivals.incr();
  }

  /** An endpoint on probation that is no longer available leaves the set for good (the balancer drops it too): close it. */
  #leaveProbationIfDown(endpoint: Endpoint<Req, Ex>): void {
    if (this.#probation.size === 0 || endpoint.available || !this.#probation.delete(endpoint)) return;
    if (this.#endpoints.get(endpoint.key) === endpoint) this.#endpoints.delete(endpoint.key);
    this.#lbStats.removed();
    this.#retire(endpoint);
  }

  /** Closes an endpoint that left the set; requests on it finish first, and stay counted meanwhile. */
  #retire(endpoint: Endpoint<Req, Ex>): void {
    this.#draining.add(endpoint);
    void endpoint.close().finally(() => this.#draining.delete(endpoint));
  }

  close(): void {
    this.#observation.close();
    this.#wakeUnresolved();
    // Draining, not forgotten: a forced shutdown (destroy) still reaches requests in flight.
    for (const e of this.#endpoints.values()) this.#retire(e);
    this.#endpoints.clear();
    this.#balancer.update([]);
    this.#onClose?.();
  }

  /** Closes every connection now (forced shutdown). */
  destroy(): Promise<void> {
    this.#observation.close();
    return Promise.all([...this.#endpoints.values(), ...this.#draining].map((e) => e.destroy())).then(() => undefined);
  }

  /** The failure a request gets once it cannot be requeued again: a rejection stays one. */
  #requeueFailed(endpoint: Endpoint<Req, Ex>, cause: Error): Error {
    if (cause instanceof TooManyWaitersError || this.#protocol.isConnectFailure?.(cause) === false) return cause;
    return this.#connectionFailed(endpoint, cause);
  }

  #connectionFailed(endpoint: Endpoint<Req, Ex>, cause: Error): ConnectionFailedError {
    return new ConnectionFailedError(endpoint.key, this.id, this.addresses, cause);
  }

  #update(addr: Addr): void {
    this.#addr = addr;
    // Waiters resume in a later microtask, after the endpoints below are in place.
    if (addr.kind !== 'pending') this.#wakeUnresolved();
    // Pending and failed keep the last endpoints: routing on the last good state beats failing.
    if (addr.kind === 'pending' || addr.kind === 'failed') {
      if (addr.kind === 'failed') this.#log.warn({ client: this.id, err: addr.error.message }, 'address resolution failed; keeping last endpoints');
      return;
    }
    this.#boundMeta = addr.kind === 'bound' ? addr.meta : {};
    const next = new Map<string, Endpoint<Req, Ex>>();
    this.#refusedTarget = undefined;
    if (addr.kind === 'bound') {
      for (const a of addr.addresses) {
        const key = addressKey(a);
        // The process's own admin listener never joins the balancer: a request would otherwise
        // be refused or served depending on which endpoint the balancer picked.
        if (this.#protected?.covers(a.host, a.port) === true) {
          if (this.#refusedTarget === undefined) this.#log.warn({ client: this.id, address: key }, 'address is this process\'s admin listener; not routed to (admin.allowProxiedAccess)');
          this.#refusedTarget = key;
          continue;
        }
        const old = this.#endpoints.get(key);
        next.set(key, old !== undefined && old.weight === (a.weight > 0 ? a.weight : 1) ? old : new Endpoint<Req, Ex>(a, this.#protocol.transport(a, this.#params.transport), this.#params.accrual, this.#outcome));
      }
    }
    const before = new Set(this.#balancer.nodes);
    this.#balancer.update([...next.values()]);
    this.#lbStats.updated(before);
    // With probation the balancer keeps removed endpoints while they are healthy: keep those open.
    const kept = new Set(this.#balancer.nodes);
    this.#probation.clear();
    for (const [key, e] of this.#endpoints) {
      if (next.get(key) === e) continue;
      if (kept.has(e) && !next.has(key)) {
        next.set(key, e);
        this.#probation.add(e);
      } else this.#retire(e);
    }
    this.#endpoints.clear();
    for (const [k, e] of next) this.#endpoints.set(k, e);
  }

  #countFailure(c: ClientCounters, e: Error): void {
    c.requests.incr();
    c.failures.incr();
    c.failureClasses.record(e);
  }

  #serviceCounters(service: string): ClientCounters {
    let c = this.#perService.get(service);
    if (c === undefined) {
      c = clientCounters(clientServiceStats(this.#stats, service));
      this.#perService.set(service, c);
    }
    return c;
  }
}
