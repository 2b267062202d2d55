// Per-endpoint failure accrual state machine (Finagle `FailureAccrualFactory`): alive → dead for
// the policy's backoff → probing (one request let through) → alive on success, dead again (for
// the next, longer backoff) on failure. Time is read lazily from the injected clock; no timers.
import type { FailureAccrualPolicy } from './failure-accrual.js';
import type { Clock } from './windowed-adder.js';

/**
 * `alive`: serving. `dead`: marked dead until {@link FailureAccrualState.deadUntil}. `probeOpen`:
 * the dead time is over and the next request may probe. `probeClosed`: a probe is in flight; no
 * other request is admitted until it completes.
 */
export type AccrualStatus = 'alive' | 'dead' | 'probeOpen' | 'probeClosed';

/**
 * One endpoint's accrual state. Callers ask {@link tryAcquire} before sending and report each
 * admitted request's outcome with {@link recordSuccess} / {@link recordFailure}. Outcomes that
 * arrive while the endpoint is dead or open for probing (late responses to requests sent while it
 * was alive) are ignored. Counters are plain numbers for the stats layer to read.
 */
export class FailureAccrualState {
  readonly #policy: FailureAccrualPolicy;
  readonly #clock: Clock;
  #status: AccrualStatus = 'alive';
  #deadUntil = 0;

  /** Times the endpoint was marked dead (`failure_accrual/removals`). */
  removals = 0;
  /** Times a probe succeeded and the endpoint came back (`failure_accrual/revivals`). */
  revivals = 0;
  /** Probe requests admitted (`failure_accrual/probes`). */
  probes = 0;
  /** The duration of the latest removal in ms (`failure_accrual/removed_for_ms`). */
  lastRemovedForMs = 0;

  /** State for one endpoint judged by `policy`, on `clock` (ms). */
  constructor(policy: FailureAccrualPolicy, clock: Clock = Date.now) {
    this.#policy = policy;
    this.#clock = clock;
  }

  /** The current status; a dead endpoint whose time is up becomes `probeOpen`. */
  get status(): AccrualStatus {
    if (this.#status === 'dead' && this.#clock() >= this.#deadUntil) this.#status = 'probeOpen';
    return this.#status;
  }

  /** When the current (or last) dead period ends, in clock ms. */
  get deadUntil(): number {
    return this.#deadUntil;
  }

  /** Whether a request may be sent now (load balancers treat `false` as busy). */
  get isAvailable(): boolean {
    const s = this.status;
    return s === 'alive' || s === 'probeOpen';
  }

  /**
   * Admits one request: always when alive; when open for probing, admits it as the probe and
   * closes probing until its outcome is recorded; otherwise refuses.
   */
  tryAcquire(): boolean {
    switch (this.status) {
      case 'alive':
        return true;
      case 'probeOpen':
        this.#status = 'probeClosed';
        this.probes++;
        return true;
      case 'dead':
      case 'probeClosed':
        return false;
    }
  }

  /** An admitted request succeeded; a successful probe revives the endpoint. */
  recordSuccess(): void {
    const s = this.status;
    if (s === 'probeClosed') {
      this.revivals++;
      this.#policy.revived();
      this.#status = 'alive';
    } else if (s !== 'alive') {
      return;
    }
    this.#policy.recordSuccess();
  }

  /**
   * An admitted request failed. The policy decides whether to mark the endpoint dead; a failed
   * probe the policy does not act on reopens probing.
   */
  recordFailure(): void {
    const s = this.status;
    if (s !== 'alive' && s !== 'probeClosed') return;
    const deadMs = this.#policy.recordFailure();
    if (deadMs !== undefined) this.#markDead(deadMs);
    else if (s === 'probeClosed') this.#status = 'probeOpen';
  }

  /**
   * An admitted request ended without saying anything about the endpoint (the client cancelled it):
   * neither a success nor a failure; a probe it was is reopened (Finagle's ignorable failures).
   */
  recordIgnored(): void {
    if (this.status === 'probeClosed') this.#status = 'probeOpen';
  }

  /** Back to alive with a fresh policy (e.g. the endpoint was re-added by discovery). */
  reset(): void {
    this.#policy.reset();
    this.#status = 'alive';
    this.#deadUntil = 0;
  }

  #markDead(ms: number): void {
    this.removals++;
    this.lastRemovedForMs = ms;
    this.#deadUntil = this.#clock() + ms;
    this.#status = 'dead';
  }
}
