// Backoff streams (Finagle `Backoff` semantics) as infinite iterators of milliseconds. A `Backoff`
// is an immutable recipe; `stream()` starts a fresh, independent sequence. Randomness is injected
// (`random() ∈ [0, 1)`) so sequences are reproducible; draws are integral: `floor(random() * n)`.
import type { BackoffConfig } from '../../config/index.js';

/** A random source returning values in `[0, 1)` (the shape of `Math.random`). */
export type Random = () => number;

/**
 * One running backoff sequence. Infinite: `next()` never reports `done`. `nextMs()` is the
 * allocation-free form for hot paths.
 */
export interface BackoffStream extends IterableIterator<number> {
  /** The next delay in milliseconds, advancing the stream. */
  nextMs(): number;
}

/** A backoff recipe; every `stream()` call starts over from the first delay. */
export interface Backoff {
  /** A fresh stream positioned at the first delay. */
  stream(): BackoffStream;
}

abstract class BaseStream implements BackoffStream {
  abstract nextMs(): number;

  next(): IteratorResult<number, undefined> {
    return { done: false, value: this.nextMs() };
  }

  [Symbol.iterator](): BackoffStream {
    return this;
  }
}

function checkMs(name: string, v: number): void {
  if (!Number.isFinite(v) || v < 0) throw new RangeError(`backoff ${name} must be a finite number ≥ 0, got ${v}`);
}

function checkRange(minMs: number, maxMs: number): void {
  checkMs('start', minMs);
  checkMs('maximum', maxMs);
  if (minMs > maxMs) throw new RangeError(`backoff start (${minMs}) must not exceed maximum (${maxMs})`);
}

/** `floor(random() * n)`: an integer in `[0, n)` (0 when `n` is 0). */
function draw(random: Random, n: number): number {
  return n <= 0 ? 0 : Math.min(n - 1, Math.floor(random() * n));
}

class ConstantStream extends BaseStream {
  readonly #ms: number;
  constructor(ms: number) {
    super();
    this.#ms = ms;
  }
  nextMs(): number {
    return this.#ms;
  }
}

/** Every delay is `ms`. */
export function constant(ms: number): Backoff {
  checkMs('ms', ms);
  return { stream: () => new ConstantStream(ms) };
}

/** No delay at all (constant 0): the default between application retries. */
export const NO_BACKOFF: Backoff = constant(0);

class DecorrelatedStream extends BaseStream {
  readonly #max: number;
  readonly #random: Random;
  #cur: number;
  #started = false;
  constructor(min: number, max: number, random: Random) {
    super();
    this.#cur = min;
    this.#max = max;
    this.#random = random;
  }
  nextMs(): number {
    if (!this.#started) {
      this.#started = true;
      return this.#cur;
    }
    const cur = this.#cur;
    const upper = Math.min(this.#max, cur * 3);
    const range = upper - cur;
    this.#cur = range === 0 ? cur : cur + draw(this.#random, range);
    return this.#cur;
  }
}

/**
 * Finagle's decorrelated jitter: the first delay is `minMs`; each later one is drawn from
 * `[prev, min(3·prev, maxMs))`, so delays never shrink and settle at `maxMs`
 * (`Backoff.decorrelatedJittered`).
 */
export function jittered(minMs: number, maxMs: number, random: Random = Math.random): Backoff {
  checkRange(minMs, maxMs);
  return { stream: () => new DecorrelatedStream(minMs, maxMs, random) };
}

class ExponentialJitteredStream extends BaseStream {
  readonly #max: number;
  readonly #random: Random;
  #cur: number;
  #attempt = 0;
  #capped = false;
  constructor(start: number, max: number, random: Random) {
    super();
    this.#cur = start;
    this.#max = max;
    this.#random = random;
  }
  nextMs(): number {
    if (this.#attempt === 0 || this.#capped) {
      if (this.#attempt === 0) this.#attempt = 1;
      return this.#cur;
    }
    const bound = Math.min(this.#max, this.#cur * 2 ** Math.min(this.#attempt, 62));
    if (bound === this.#max) {
      this.#capped = true;
      this.#cur = this.#max;
    } else {
      this.#cur = draw(this.#random, bound);
      this.#attempt++;
    }
    return this.#cur;
  }
}

/**
 * Finagle's exponential jitter: the first delay is `startMs`; the n-th later one is drawn from
 * `[0, prev·2ⁿ)`; once that bound reaches `maxMs` every further delay is `maxMs`
 * (`Backoff.exponentialJittered`).
 */
export function exponentialJittered(startMs: number, maxMs: number, random: Random = Math.random): Backoff {
  checkRange(startMs, maxMs);
  return { stream: () => new ExponentialJitteredStream(startMs, maxMs, random) };
}

/**
 * The runtime backoff for a validated `backoff` config object: `constant` → {@link constant},
 * `jittered` → {@link jittered} (decorrelated jitter, Linkerd 1's `jittered` kind). `undefined`
 * (no backoff configured) gives {@link NO_BACKOFF}.
 */
export function backoffFromConfig(cfg: BackoffConfig | undefined, random: Random = Math.random): Backoff {
  if (cfg === undefined) return NO_BACKOFF;
  switch (cfg.kind) {
    case 'constant':
      return constant(cfg.ms);
    case 'jittered':
      return jittered(cfg.minMs, cfg.maxMs, random);
  }
}
