import type { Logger } from 'pino';
import { PrxError } from '../../core/errors.js';
import { addressKey, type Addr, type BoundName, type Closable } from '../../naming/index.js';
import type { Balancer, BalancerFactory } from '../../service/balancer/types.js';
import { RetryBudget } from '../../service/policy/index.js';
import { clientServiceStats, StatusCodeCounters, type Counter, type StatsReceiver } from '../../service/stats/index.js';
import { ExceptionCounters, transportError } from '../../service/stats/exception-stats.js';
import type { UpstreamExchange } from '../../protocol/http/upstream.js';
import { AdminTargetRefusedError, ProxyError } from '../../protocol/http/headers/proxy-errors.js';
import type { ProtectedListeners } from '../protected-listeners.js';
import { NoBrokersAvailableError } from '../binding.js';
import { Endpoint, isReplayable, type AttemptHandle, type EndpointOptions, type OutboundRequest } from './endpoint.js';
import { LoadBalancerStats } from './balancer-stats.js';
import { clientCounters, type ClientCounters } from './client-counters.js';

/** Connection to an endpoint failed before any response (refused, reset, unreachable, timed out). */
export class ConnectionFailedError extends PrxError {
  readonly address: string;
  readonly clientId: string;
  readonly addresses: readonly string[];
  constructor(address: string, clientId: string, addresses: readonly string[], cause: Error) {
    super('PRX_ERR_CONNECTION_FAILED', `Unable to establish connection to ${address}.`, { cause });
    this.address = address;
    this.clientId = clientId;
    this.addresses = addresses;
  }
}

/**
 * An endpoint's pool is full (connections and waiters): Finagle's TooManyWaiters, a rejection.
 * It is requeued on another endpoint; when none can take it the client gets a 502 saying so, with
 * `prx-retryable: true` (the request never left), not a connection failure.
 */
export class TooManyWaitersError extends ProxyError {
  constructor(address: string) {
    super('PRX_ERR_TOO_MANY_WAITERS', `too many requests waiting for a connection to ${address}`, 502, true);
  }
}

// Error codes of failures that happen before the request reached the application: safe to
// send again to another endpoint when the body can be replayed (Finagle requeues these).
const CONNECT_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'PRX_ERR_TOO_MANY_WAITERS',
  // The lean h1 client's counterparts of UND_ERR_SOCKET, _CONNECT_TIMEOUT and _DESTROYED.
  'PRX_ERR_UPSTREAM_CLOSED',
  'PRX_ERR_UPSTREAM_CONNECT_TIMEOUT',
  'PRX_ERR_UPSTREAM_POOL_CLOSED',
]);

// OpenSSL's certificate verification failures, as node names them on a TLS client socket.
const CERT_VERIFY_FAILURES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);

/**
 * Whether `err` is a failure to establish a connection (or to use it before anything was sent):
 * refused, unreachable, timed out, or a TLS handshake that failed (node's ERR_TLS_* and ERR_SSL_*
 * codes, and certificate verification), as Finagle counts a failed handshake as a failed connect.
 */
export function isConnectFailure(err: unknown): boolean {
  const code = errorCode(err);
  return CONNECT_FAILURES.has(code) || isTlsFailure(err);
}

/** Whether `err` is a failed TLS handshake (an operator's business: a certificate or name is wrong). */
function isTlsFailure(err: unknown): boolean {
  const code = errorCode(err);
  return code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || CERT_VERIFY_FAILURES.has(code);
}

/** `err.code` when it is a string, else ''. */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** How often one endpoint's failing TLS handshakes are logged. */
const TLS_WARN_INTERVAL_MS = 60_000;

// Once the request is on a connected socket, only a failed write (Finagle's WriteException) is
// requeued: a peer that closed the connection cleanly after reading may have acted on the request.
const WRITE_FAILURES = new Set(['EPIPE', 'ECONNRESET']);

/** Whether an attempt that failed with `err` is safe to send again to another endpoint. */
export function isRequeueable(err: unknown, exchange: UpstreamExchange | undefined): boolean {
  if (!isConnectFailure(err)) return false;
  if (exchange === undefined) return true;
  if (exchange.responded) return false;
  return !exchange.requestStarted || WRITE_FAILURES.has((err as { code: string }).code);
}

/** Finagle's cap on requeues of one request. */
const MAX_REQUEUES = 25;
const FAIL_FAST_MIN_MS = 1000;
const FAIL_FAST_MAX_MS = 32_000;

/** The client parameters an {@link HttpClient} needs, resolved for its id. */
export interface HttpClientParams {
  readonly endpoint: EndpointOptions;
  readonly balancer: BalancerFactory;
  readonly failFast: boolean;
  readonly requeueBudget: { readonly minRetriesPerSec: number; readonly percentCanRetry: number; readonly ttlSecs: number };
}

/** One attempt's outcome: the exchange (its head resolved) and the endpoint that served it. */
export interface Attempt {
  readonly exchange: UpstreamExchange;
  readonly endpoint: Endpoint;
  readonly started: number;
}

/**
 * The client of one concrete destination (a bound id such as `/#/io.prx.fs/cat`): a load
 * balancer over the live endpoints of its address set, with connection-level requeues under a
 * budget, failure accrual per endpoint and Finagle's client stats (`rt/<router>/client/<id>/…`).
 */
export class HttpClient implements Closable {
  readonly id: string;
  readonly #endpoints = new Map<string, Endpoint>();
  /** Endpoints discovery removed that the balancer keeps while they stay available (enableProbation). */
  readonly #probation = new Set<Endpoint>();
  /** Endpoints closed while requests were still on them: counted in `pending` until they finish. */
  readonly #draining = new Set<Endpoint>();
  readonly #balancer: Balancer<Endpoint>;
  readonly #params: HttpClientParams;
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
  readonly #lbStats: LoadBalancerStats;
  /** Finagle's `removed_for_ms`: a counter adding up the backoff of every removal. */
  readonly #removedFor: Counter;
  readonly #statuses: StatusCodeCounters;
  readonly #perService = new Map<string, ClientCounters>();
  #addr: Addr = { kind: 'pending' };
  /** Requests that arrived before the name's first address was known (see {@link HttpClient.whenResolved}). */
  #unresolvedWaiters: (() => void)[] | undefined = [];

  readonly #onClose: (() => void) | undefined;
  readonly #protected: ProtectedListeners | undefined;
  /** An address of the bound set left out as the admin listener: what a request finding no endpoint is told. */
  #refusedTarget: string | undefined;

  /**
   * `onClose` runs once the client is closed (its cache entry evicted): the owner's clean-up.
   * Requests are never sent to `protectedListeners` (the process's admin interface).
   */
  constructor(name: BoundName, params: HttpClientParams, stats: StatsReceiver, log: Logger, onClose?: () => void, protectedListeners?: ProtectedListeners) {
    this.id = name.idStr;
    this.#onClose = onClose;
    this.#protected = protectedListeners;
    this.#params = params;
    this.#stats = stats;
    this.#log = log;
    this.#balancer = params.balancer<Endpoint>();
    this.#requeueBudget = new RetryBudget(params.requeueBudget);
    this.#counters = clientCounters(stats);
    this.#statuses = new StatusCodeCounters(stats);
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
  async send(req: OutboundRequest, handle: AttemptHandle, service: string): Promise<Attempt> {
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
      let exchange: UpstreamExchange | undefined;
      try {
        if (endpoint.saturated) throw new TooManyWaitersError(endpoint.key);
        exchange = endpoint.dispatch(req);
        handle.exchange = exchange;
        await exchange.head;
        return { exchange, endpoint, started };
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        const cancelled = handle.cancelled !== undefined;
        const connectFailure = !cancelled && isRequeueable(e, exchange);
        this.#countFailure(this.#counters, e);
        this.#countFailure(this.#serviceCounters(service), e);
        const transport = transportError(e);
        if (transport !== undefined) this.#exn.recordOuter(transport);
        // A client that went away says nothing about the endpoint; a full pool is this proxy's own
        // back-pressure, not a sign of the endpoint's health.
        if (cancelled) endpoint.accrual.recordIgnored();
        else if (!(e instanceof TooManyWaitersError)) this.recordOutcome(endpoint, false, performance.now() - started);
        if (connectFailure && this.#params.failFast) {
          endpoint.markFailFast(FAIL_FAST_MIN_MS, FAIL_FAST_MAX_MS);
          this.#leaveProbationIfDown(endpoint);
        }
        // The 502 keeps Linkerd's text, which does not say why: the log does, once a minute per endpoint.
        if (isTlsFailure(e) && endpoint.warnDue(TLS_WARN_INTERVAL_MS)) {
          this.#log.warn({ client: this.id, endpoint: endpoint.key, err: e.message }, 'TLS handshake with endpoint failed');
        }
        if (!connectFailure) throw e;
        if (requeues >= MAX_REQUEUES || !isReplayable(req)) throw this.#requeueFailed(endpoint, e);
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
  record(attempt: Attempt, service: string, success: boolean): void {
    const latency = performance.now() - attempt.started;
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
    this.#statuses.record(attempt.exchange.status);
    const ex = attempt.exchange;
    if (success && !ex.finished) {
      // The body still streams: failure accrual hears of the success once it is complete
      // (#bodySucceeded), or of a failure if the body breaks (recordBodyFailure).
      ex.successPending = true;
      this.#balancer.observe(attempt.endpoint, latency, false);
      return;
    }
    this.recordOutcome(attempt.endpoint, success, latency);
  }

  /**
   * The body of a response counted at its head failed on the endpoint's side (a framing error, a
   * connection cut mid-body): a failure against the endpoint, as Finagle counts a codec failure.
   */
  recordBodyFailure(attempt: Attempt): void {
    attempt.exchange.successPending = false;
    this.#accrue(attempt.endpoint, false);
    this.#balancer.observe(attempt.endpoint, performance.now() - attempt.started, true);
    this.#leaveProbationIfDown(attempt.endpoint);
  }

  readonly #bodySucceeded = (endpoint: Endpoint): void => this.#accrue(endpoint, true);

  /** Feeds failure accrual and the balancer; counts removals (and for how long) and revivals. */
  recordOutcome(endpoint: Endpoint, success: boolean, latencyMs: number): void {
    this.#accrue(endpoint, success);
    this.#balancer.observe(endpoint, latencyMs, !success);
    if (!success) this.#leaveProbationIfDown(endpoint);
  }

  /** Failure accrual (and fail-fast) of one outcome; counts removals (and for how long) and revivals. */
  #accrue(endpoint: Endpoint, success: boolean): void {
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
  #leaveProbationIfDown(endpoint: Endpoint): void {
    if (this.#probation.size === 0 || endpoint.available || !this.#probation.delete(endpoint)) return;
    if (this.#endpoints.get(endpoint.key) === endpoint) this.#endpoints.delete(endpoint.key);
    this.#lbStats.removed();
    this.#retire(endpoint);
  }

  /** Closes an endpoint that left the set; requests on it finish first, and stay counted meanwhile. */
  #retire(endpoint: Endpoint): void {
    this.#draining.add(endpoint);
    void endpoint.close().finally(() => this.#draining.delete(endpoint));
  }

  close(): void {
    this.#observation.close();
    this.#wakeUnresolved();
    for (const e of this.#endpoints.values()) void e.close();
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
  #requeueFailed(endpoint: Endpoint, cause: Error): Error {
    return cause instanceof TooManyWaitersError ? cause : this.#connectionFailed(endpoint, cause);
  }

  #connectionFailed(endpoint: Endpoint, cause: Error): ConnectionFailedError {
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
    const next = new Map<string, Endpoint>();
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
        next.set(key, old !== undefined && old.weight === (a.weight > 0 ? a.weight : 1) ? old : new Endpoint(a, this.#params.endpoint, this.#bodySucceeded));
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
