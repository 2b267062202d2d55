// Finagle's token retry budget: every request deposits, every retry withdraws, deposits and
// withdrawals expire after `ttlSecs`, and a reserve allows `minRetriesPerSec` retries per second
// even without traffic. Used for both service retries and client requeues.
import type { z } from 'zod';
import type { retryBudget } from '../../config/index.js';
import { WindowedAdder, type Clock } from './windowed-adder.js';

/** A validated `budget` / `requeueBudget` config object. */
export type RetryBudgetConfig = z.output<typeof retryBudget>;

/** Parameters of a {@link RetryBudget}; each defaults to Finagle's value. */
export interface RetryBudgetOptions {
  /** How long a deposit (or withdrawal) counts, 1–60 s. Default 10. */
  readonly ttlSecs?: number;
  /** Retries allowed per second regardless of traffic, an integer ≥ 0. Default 10. */
  readonly minRetriesPerSec?: number;
  /** Retries allowed as a fraction of requests, 0–1000. Default 0.2. */
  readonly percentCanRetry?: number;
}

/** Finagle's budget defaults: 10 s ttl, 10 retries per second, 20 % of requests. */
export const RETRY_BUDGET_DEFAULTS = Object.freeze({ ttlSecs: 10, minRetriesPerSec: 10, percentCanRetry: 0.2 });

/** Fixed-point scale: a deposit is worth this many tokens. */
const SCALE = 1000;
/** Slices of the ttl window (Finagle's leaky bucket uses 10). */
const SLICES = 10;

/**
 * A retry budget. Token math (all integers): a deposit adds 1000 tokens; a withdrawal costs
 * `trunc(1000 / percentCanRetry)` tokens; the reserve is `minRetriesPerSec · ttlSecs ·
 * withdrawal` tokens. With `percentCanRetry` 0 deposits add nothing and a withdrawal costs 1.
 * Deposits and withdrawals leave the window `ttlSecs` after the 1/10-ttl slice they fell in.
 */
export class RetryBudget {
  readonly #window: WindowedAdder;
  readonly #deposit: number;
  readonly #withdrawal: number;
  readonly #reserve: number;

  /** A budget on `clock` (ms) with `options` (Finagle defaults for absent ones). */
  constructor(options: RetryBudgetOptions = {}, clock: Clock = Date.now) {
    const ttlSecs = options.ttlSecs ?? RETRY_BUDGET_DEFAULTS.ttlSecs;
    const minPerSec = options.minRetriesPerSec ?? RETRY_BUDGET_DEFAULTS.minRetriesPerSec;
    const percent = options.percentCanRetry ?? RETRY_BUDGET_DEFAULTS.percentCanRetry;
    if (!Number.isInteger(ttlSecs) || ttlSecs < 1 || ttlSecs > 60) {
      throw new RangeError(`retry budget ttlSecs must be an integer from 1 to 60, got ${ttlSecs}`);
    }
    if (!Number.isInteger(minPerSec) || minPerSec < 0) {
      throw new RangeError(`retry budget minRetriesPerSec must be an integer ≥ 0, got ${minPerSec}`);
    }
    if (!(percent >= 0 && percent <= 1000)) {
      throw new RangeError(`retry budget percentCanRetry must be from 0 to 1000, got ${percent}`);
    }
    this.#deposit = percent === 0 ? 0 : SCALE;
    this.#withdrawal = percent === 0 ? 1 : Math.trunc(SCALE / percent);
    this.#reserve = minPerSec * ttlSecs * this.#withdrawal;
    this.#window = new WindowedAdder(ttlSecs * 1000, SLICES, clock);
  }

  /** Credits one request. */
  deposit(): void {
    if (this.#deposit !== 0) this.#window.add(this.#deposit);
  }

  /** Takes one retry if the balance allows it; `false` leaves the balance untouched. */
  tryWithdraw(): boolean {
    if (this.#window.sum() + this.#reserve < this.#withdrawal) return false;
    this.#window.add(-this.#withdrawal);
    return true;
  }

  /** Whole retries currently available. */
  get balance(): number {
    return Math.max(0, Math.floor((this.#window.sum() + this.#reserve) / this.#withdrawal));
  }
}

/** A budget for a validated `retries.budget` or `client.requeueBudget` config object. */
export function retryBudgetFromConfig(cfg: RetryBudgetConfig, clock: Clock = Date.now): RetryBudget {
  return new RetryBudget(
    { ttlSecs: cfg.ttlSecs, minRetriesPerSec: cfg.minRetriesPerSec, percentCanRetry: cfg.percentCanRetry },
    clock,
  );
}
