import type { BoundName, Closable, Dtab } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { AttemptTimeoutError, BindingFailedError, BindingTimeoutError, NoBrokersAvailableError, TotalTimeoutError } from '../../service/failures.js';
import { NO_BACKOFF, RetryBudget, type Backoff, type BackoffStream } from '../../service/policy/index.js';
import type { Counter, Histogram, StatsReceiver } from '../../service/stats/index.js';
import { ExceptionCounters } from '../../service/stats/exception-stats.js';
import { pickLeaf, type PathBinding } from './binding.js';
import type { Lease } from './cache.js';
import type { Attempt, Client } from './client.js';
import type { AttemptHandle, ClientProtocol, Exchange } from './transport.js';

/** The parameters of one service (logical name), resolved from the router's service policy. */
export interface ServiceParams<Classifier> {
  readonly classifier: Classifier;
  readonly budget: { readonly minRetriesPerSec: number; readonly percentCanRetry: number; readonly ttlSecs: number };
  readonly backoff: Backoff | undefined;
  readonly totalTimeoutMs: number | undefined;
}

/** What a path service needs from its router: the lower caches and per-request hooks. */
export interface PathServiceHost<Req, Ex extends Exchange, Classifier> {
  /** The protocol's answers about requests, responses and failures. */
  readonly protocol: ClientProtocol<Req, Ex, unknown, Classifier>;
  /** Borrows the client of a bound name (client cache). */
  client(name: BoundName): Lease<Client<Req, Ex, unknown, Classifier>>;
  /** Client-parameter per-attempt settings (timeouts, cert forwarding) for a client id. */
  attemptTimeoutMs(clientId: string): number | undefined;
  /**
   * Called before each attempt: per-destination request state (HTTP: `prx-dst-client`, residual,
   * XFCC, Host from the address set's metadata `meta`).
   */
  prepareAttempt(req: Req, name: BoundName, clientId: string, meta: Readonly<Record<string, unknown>>): void;
}

/** The outcome of serving one request through a path service. */
export interface Served<Req, Ex extends Exchange> {
  readonly attempt: Attempt<Req, Ex>;
  readonly client: Client<Req, Ex>;
  readonly responseClass: ResponseClass;
}

interface ServiceCounters {
  readonly requests: Counter;
  readonly success: Counter;
  readonly failures: Counter;
  readonly failureClasses: ExceptionCounters;
  readonly latency: Histogram;
  readonly retriesTotal: Counter;
  readonly retriesPerRequest: Histogram;
  readonly budgetExhausted: Counter;
}

/**
 * The path stack of one logical name (Linkerd's per-`Dst.Path` service): total timeout,
 * classified retries under the service's own budget and backoff, and `rt/<r>/service/<name>`
 * stats. Each attempt picks a leaf of the current bound tree (so a re-binding applies to the next
 * attempt), borrows that destination's client and sends.
 */
export class PathService<Req, Ex extends Exchange, Classifier = unknown> implements Closable {
  readonly dst: string;
  readonly localDtab: Dtab;
  readonly binding: PathBinding;
  readonly #params: ServiceParams<Classifier>;
  readonly #host: PathServiceHost<Req, Ex, Classifier>;
  readonly #budget: RetryBudget;
  readonly #c: ServiceCounters;
  readonly #bindingTimeoutMs: number;
  readonly #onClose: () => void;

  constructor(opts: {
    dst: string;
    localDtab: Dtab;
    binding: PathBinding;
    params: ServiceParams<Classifier>;
    host: PathServiceHost<Req, Ex, Classifier>;
    stats: StatsReceiver;
    bindingTimeoutMs: number;
    onClose: () => void;
  }) {
    this.dst = opts.dst;
    this.localDtab = opts.localDtab;
    this.binding = opts.binding;
    this.#params = opts.params;
    this.#host = opts.host;
    this.#bindingTimeoutMs = opts.bindingTimeoutMs;
    this.#onClose = opts.onClose;
    this.#budget = new RetryBudget(opts.params.budget);
    const s = opts.stats;
    this.#c = {
      requests: s.counter('requests'),
      success: s.counter('success'),
      failures: s.counter('failures'),
      failureClasses: new ExceptionCounters(s),
      latency: s.stat('request_latency_ms'),
      retriesTotal: s.counter('retries', 'total'),
      retriesPerRequest: s.stat('retries', 'per_request'),
      budgetExhausted: s.counter('retries', 'budget_exhausted'),
    };
    s.gauge(['retries', 'budget'], () => this.#budget.balance);
  }

  /** The service's classifier (a protocol may read its buffering limits before sending). */
  get classifier(): Classifier {
    return this.#params.classifier;
  }

  /**
   * Sends `out` until a response is accepted (or retries run out). `bindDeadline` bounds the wait
   * for a pending binding; `started` (performance.now()) starts the total timeout.
   */
  async serve(out: Req, handle: AttemptHandle, bindDeadline: number, started: number): Promise<Served<Req, Ex>> {
    const p = this.#params;
    const protocol = this.#host.protocol;
    this.#budget.deposit();
    const totalMs = p.totalTimeoutMs;
    const totalDeadline = totalMs === undefined ? Infinity : started + totalMs;
    // Made on the first retry: most requests never need one.
    let backoff: BackoffStream | undefined;
    let retries = 0;
    try {
      for (;;) {
        const treeOrWait = this.binding.tree(bindDeadline, this.#bindingTimeoutMs);
        const tree = treeOrWait instanceof Promise ? await treeOrWait : treeOrWait;
        const pick = pickLeaf(tree);
        if (pick.kind === 'neg') throw new NoBrokersAvailableError(this.dst);
        if (pick.kind === 'fail') throw new BindingFailedError(this.dst, new Error('the name resolved to a failure (!)'));
        const name = pick.name;
        const lease = this.#host.client(name);
        const client = lease.value;
        if (client.resolving) {
          try {
            await client.whenResolved(bindDeadline, () => new BindingTimeoutError(this.#bindingTimeoutMs, this.dst));
          } catch (e) {
            lease.release();
            throw e;
          }
        }
        let attempt: Attempt<Req, Ex> | undefined;
        let responseClass: ResponseClass;
        let failure: Error | undefined;
        try {
          this.#host.prepareAttempt(out, name, client.id, client.boundMeta);
          attempt = await this.#attempt(client, out, handle, totalDeadline, totalMs);
          responseClass = protocol.classify(p.classifier, out, attempt.exchange);
          client.record(attempt, this.dst, responseClass);
        } catch (err) {
          failure = err instanceof Error ? err : new Error(String(err));
          if (failure instanceof TotalTimeoutError || failure instanceof NoBrokersAvailableError || handle.cancelled !== undefined) throw failure;
          responseClass = protocol.classifyFailure(p.classifier, out, failure);
        } finally {
          lease.release();
        }
        if (responseClass === 'retryableFailure' && protocol.isReplayable(out)) {
          backoff ??= (p.backoff ?? NO_BACKOFF).stream();
          const wait = backoff.nextMs();
          if (performance.now() + wait < totalDeadline) {
            if (this.#budget.tryWithdraw()) {
              attempt?.exchange.discard();
              retries++;
              this.#c.retriesTotal.incr();
              if (wait > 0) await sleep(wait);
              continue;
            }
            this.#c.budgetExhausted.incr();
          }
        }
        if (failure !== undefined) throw failure;
        return { attempt: attempt as Attempt<Req, Ex>, client, responseClass };
      }
    } finally {
      this.#c.retriesPerRequest.add(retries);
    }
  }

  /**
   * Records the request's final outcome in the service stats; a failure is broken down by
   * `error`'s class chain, or counted as a classified response when there is no error.
   */
  record(success: boolean, latencyMs: number, error?: unknown): void {
    const c = this.#c;
    c.requests.incr();
    (success ? c.success : c.failures).incr();
    if (!success) {
      if (error === undefined) c.failureClasses.recordSynthetic();
      else c.failureClasses.record(error);
    }
    c.latency.add(latencyMs);
  }

  /** One attempt: a plain send, or (with a deadline) one raced against its timer. */
  #attempt(client: Client<Req, Ex>, out: Req, handle: AttemptHandle, totalDeadline: number, totalMs: number | undefined): Promise<Attempt<Req, Ex>> {
    const attemptMs = this.#host.attemptTimeoutMs(client.id);
    if (attemptMs === undefined && totalDeadline === Infinity) return client.send(out, handle, this.dst);
    return this.#timedAttempt(client, out, handle, attemptMs, totalDeadline, totalMs);
  }

  async #timedAttempt(
    client: Client<Req, Ex>,
    out: Req,
    handle: AttemptHandle,
    attemptMs: number | undefined,
    totalDeadline: number,
    totalMs: number | undefined,
  ): Promise<Attempt<Req, Ex>> {
    const now = performance.now();
    const attemptDeadline = attemptMs === undefined ? Infinity : now + attemptMs;
    const deadline = Math.min(attemptDeadline, totalDeadline);
    let timedOut: Error | undefined;
    const timer = setTimeout(() => {
      timedOut =
        deadline === totalDeadline && totalMs !== undefined ? new TotalTimeoutError(totalMs, { serviceName: this.dst }) : new AttemptTimeoutError(attemptMs ?? 0, { serviceName: client.id });
      // Aborting the exchange frees its connection and rejects the send below.
      handle.abort(timedOut, false);
    }, Math.max(0, deadline - now));
    try {
      return await client.send(out, handle, this.dst);
    } catch (err) {
      throw timedOut ?? err;
    } finally {
      clearTimeout(timer);
    }
  }

  close(): void {
    this.binding.close();
    this.#onClose();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
