import type { Address } from '../../naming/index.js';
import { addressKey } from '../../naming/index.js';
import type { BalancerNode } from '../../service/balancer/types.js';
import { FailureAccrualState, type FailureAccrualPolicyFactory } from '../../service/policy/index.js';
import type { Exchange, Transport } from './transport.js';

/**
 * One upstream address: its transport (connections or session), its load (requests in flight,
 * including those the transport queues), its failure-accrual and fail-fast state. What load
 * balancers pick from.
 */
export class Endpoint<Req, Ex extends Exchange> implements BalancerNode {
  readonly key: string;
  readonly address: Address;
  readonly weight: number;
  load = 0;
  readonly accrual: FailureAccrualState;
  readonly #transport: Transport<Req, Ex>;
  #closed = false;
  /** Fail-fast: after a connection failure the endpoint sits out until this time (epoch ms). */
  #failFastUntil = 0;
  #failFastMs = 0;
  /** When a warning about this endpoint was last logged (epoch ms). */
  #warnedAt = -Infinity;
  /** Told when an exchange whose outcome was pending ends (see {@link Exchange.outcomePending}). */
  readonly #onOutcome: ((e: Endpoint<Req, Ex>, ex: Ex) => void) | undefined;
  readonly #onDone = (ex: Ex): void => {
    this.load--;
    if (!ex.outcomePending) return;
    ex.outcomePending = false;
    // The client decides (an exchange that ended for a reason that is not the endpoint's is
    // ignored by accrual, which still releases a probe it held).
    if (this.#onOutcome !== undefined) this.#onOutcome(this, ex);
    else this.accrual.recordIgnored();
  };

  constructor(address: Address, transport: Transport<Req, Ex>, accrual: FailureAccrualPolicyFactory, onOutcome?: (e: Endpoint<Req, Ex>, ex: Ex) => void) {
    this.#onOutcome = onOutcome;
    this.address = address;
    this.key = addressKey(address);
    this.weight = address.weight > 0 ? address.weight : 1;
    this.accrual = new FailureAccrualState(accrual());
    this.#transport = transport;
  }

  get available(): boolean {
    return !this.#closed && this.accrual.isAvailable && (this.#failFastUntil === 0 || Date.now() >= this.#failFastUntil);
  }

  /** Takes the endpoint out after a connection failure, doubling the pause each time (failFast). */
  markFailFast(minMs: number, maxMs: number): void {
    this.#failFastMs = this.#failFastMs === 0 ? minMs : Math.min(maxMs, this.#failFastMs * 2);
    this.#failFastUntil = Date.now() + this.#failFastMs;
  }

  clearFailFast(): void {
    this.#failFastUntil = 0;
    this.#failFastMs = 0;
  }

  /** True at most once per `intervalMs`: rate-limits warnings about this endpoint. */
  warnDue(intervalMs: number): boolean {
    const now = Date.now();
    if (now - this.#warnedAt < intervalMs) return false;
    this.#warnedAt = now;
    return true;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Open connections (also after close: those under requests still running stay open until they finish). */
  get connections(): number {
    return this.#transport.connections;
  }

  /** True when one more request would exceed what the transport may queue. */
  get saturated(): boolean {
    return this.#transport.saturated(this.load);
  }

  /** Sends `req`; the exchange's `head` settles with the response head or the failure. */
  dispatch(req: Req): Ex {
    this.load++;
    return this.#transport.dispatch(req, this.#onDone);
  }

  /** Stops taking requests; in-flight ones finish, then connections close. */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    return this.#transport.close();
  }

  /** Closes every connection now, failing in-flight requests. */
  destroy(): Promise<void> {
    this.#closed = true;
    return this.#transport.destroy();
  }
}
