// Failure accrual policies (Finagle `FailureAccrualPolicy`): each watches one endpoint's results
// and says when to mark it dead, and for how long (the next delay of its backoff stream).
import { type Backoff, type BackoffStream } from './backoff.js';
import { WindowedAdder, type Clock } from './windowed-adder.js';

/** One endpoint's accrual policy. `record*` are O(1) and allocation-free. */
export interface FailureAccrualPolicy {
  /** Notes a successful response. */
  recordSuccess(): void;
  /** Notes a failure; returns ms to mark the endpoint dead for, or `undefined` to keep it. */
  recordFailure(): number | undefined;
  /** The endpoint came back (a probe succeeded): forget failures, restart the backoff stream. */
  revived(): void;
  /** Back to the freshly created state. */
  reset(): void;
}

/** Makes one policy per endpoint. */
export type FailureAccrualPolicyFactory = () => FailureAccrualPolicy;

abstract class BackoffPolicy implements FailureAccrualPolicy {
  readonly #backoff: Backoff;
  #stream: BackoffStream;

  constructor(backoff: Backoff) {
    this.#backoff = backoff;
    this.#stream = backoff.stream();
  }

  abstract recordSuccess(): void;
  abstract recordFailure(): number | undefined;
  protected abstract clear(): void;

  protected nextDeadMs(): number {
    return this.#stream.nextMs();
  }

  revived(): void {
    this.clear();
    this.#stream = this.#backoff.stream();
  }

  reset(): void {
    this.revived();
  }
}

function checkTarget(successRate: number): void {
  if (!(successRate >= 0 && successRate <= 1)) throw new RangeError(`successRate must be from 0 to 1, got ${successRate}`);
}

class ConsecutiveFailures extends BackoffPolicy {
  readonly #limit: number;
  #failures = 0;

  constructor(limit: number, backoff: Backoff) {
    super(backoff);
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`failures must be a positive integer, got ${limit}`);
    this.#limit = limit;
  }

  recordSuccess(): void {
    this.#failures = 0;
  }

  recordFailure(): number | undefined {
    this.#failures++;
    return this.#failures >= this.#limit ? this.nextDeadMs() : undefined;
  }

  protected clear(): void {
    this.#failures = 0;
  }
}

/**
 * Marks the endpoint dead once `failures` results in a row failed (and on every further failure,
 * e.g. a failed probe), for the next delay of `backoff`.
 */
export function consecutiveFailures(failures: number, backoff: Backoff): FailureAccrualPolicy {
  return new ConsecutiveFailures(failures, backoff);
}

/**
 * Exponentially weighted moving average over stamped samples: the first sample sets it; a later
 * one at `Δ` stamps after the previous weighs the old average by `e^(−Δ/window)`.
 */
class Ema {
  readonly #window: number;
  #stamp = 0;
  #value = 0;
  #empty = true;

  constructor(window: number) {
    this.#window = window;
  }

  update(stamp: number, x: number): number {
    if (this.#empty) {
      this.#empty = false;
      this.#value = x;
    } else {
      const w = this.#window === 0 ? 0 : Math.exp(-Math.max(0, stamp - this.#stamp) / this.#window);
      this.#value = x * (1 - w) + this.#value * w;
    }
    this.#stamp = stamp;
    return this.#value;
  }

  reset(): void {
    this.#empty = true;
    this.#value = 0;
    this.#stamp = 0;
  }
}

class SuccessRate extends BackoffPolicy {
  readonly #target: number;
  readonly #requests: number;
  readonly #ema: Ema;
  #count = 0;

  constructor(target: number, requests: number, backoff: Backoff) {
    super(backoff);
    checkTarget(target);
    if (!Number.isInteger(requests) || requests < 1) throw new RangeError(`requests must be a positive integer, got ${requests}`);
    this.#target = target;
    this.#requests = requests;
    this.#ema = new Ema(requests);
  }

  recordSuccess(): void {
    this.#ema.update(++this.#count, 1);
  }

  recordFailure(): number | undefined {
    const rate = this.#ema.update(++this.#count, 0);
    return this.#count >= this.#requests && rate < this.#target ? this.nextDeadMs() : undefined;
  }

  protected clear(): void {
    this.#count = 0;
    this.#ema.reset();
  }
}

/**
 * Success rate as an EMA over a window of `requests` results (each result is one stamp); once at
 * least `requests` results were seen, a failure that leaves it below `successRate` marks the
 * endpoint dead.
 */
export function successRate(successRate: number, requests: number, backoff: Backoff): FailureAccrualPolicy {
  return new SuccessRate(successRate, requests, backoff);
}

/** Results a windowed success-rate policy needs inside its window before it may mark dead. */
export const MIN_REQUESTS_IN_WINDOW = 5;

class SuccessRateWindowed extends BackoffPolicy {
  readonly #target: number;
  readonly #windowMs: number;
  readonly #clock: Clock;
  readonly #ema: Ema;
  readonly #recent: WindowedAdder;
  #since: number;

  constructor(target: number, windowSecs: number, backoff: Backoff, clock: Clock) {
    super(backoff);
    checkTarget(target);
    if (!(windowSecs > 0)) throw new RangeError(`window must be > 0 seconds, got ${windowSecs}`);
    this.#target = target;
    this.#windowMs = windowSecs * 1000;
    this.#clock = clock;
    this.#ema = new Ema(this.#windowMs);
    this.#recent = new WindowedAdder(this.#windowMs, 10, clock);
    this.#since = clock();
  }

  recordSuccess(): void {
    this.#recent.add(1);
    this.#ema.update(this.#clock(), 1);
  }

  recordFailure(): number | undefined {
    this.#recent.add(1);
    const now = this.#clock();
    const rate = this.#ema.update(now, 0);
    const eligible = now - this.#since >= this.#windowMs && this.#recent.sum() >= MIN_REQUESTS_IN_WINDOW;
    return eligible && rate < this.#target ? this.nextDeadMs() : undefined;
  }

  protected clear(): void {
    this.#ema.reset();
    this.#recent.reset();
    this.#since = this.#clock();
  }
}

/**
 * Success rate as an EMA over time (window `windowSecs`, samples stamped in ms). A failure marks
 * the endpoint dead when the rate is below `successRate`, the policy has watched for at least one
 * window, and at least {@link MIN_REQUESTS_IN_WINDOW} results fell in the last window.
 */
export function successRateWindowed(
  successRate: number,
  windowSecs: number,
  backoff: Backoff,
  clock: Clock = Date.now,
): FailureAccrualPolicy {
  return new SuccessRateWindowed(successRate, windowSecs, backoff, clock);
}

const NONE: FailureAccrualPolicy = Object.freeze({
  recordSuccess(): void {},
  recordFailure(): undefined {
    return undefined;
  },
  revived(): void {},
  reset(): void {},
});

/** Failure accrual disabled: never marks an endpoint dead. */
export function none(): FailureAccrualPolicy {
  return NONE;
}
