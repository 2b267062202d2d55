// A sum over a sliding time window, kept in a fixed ring of slices (Finagle's `WindowedAdder`).
// O(1) and allocation-free per operation: advancing clears at most `slices` slots.

/** Current time in milliseconds; injected so tests drive time. */
export type Clock = () => number;

/**
 * A sum of the values added during roughly the last `windowMs`. The window is split into `slices`
 * slices of `windowMs / slices` ms each (aligned to multiples of that width); a value added during
 * slice `k` stops counting when slice `k + slices` begins.
 */
export class WindowedAdder {
  readonly #slots: Float64Array;
  readonly #sliceMs: number;
  readonly #clock: Clock;
  #slice: number;
  #sum = 0;

  /** A zero sum over `windowMs` (> 0) split into `slices` (≥ 1) slices. */
  constructor(windowMs: number, slices: number, clock: Clock) {
    if (!(windowMs > 0) || !Number.isInteger(slices) || slices < 1) {
      throw new RangeError(`windowed adder needs windowMs > 0 and integer slices ≥ 1 (got ${windowMs}, ${slices})`);
    }
    this.#slots = new Float64Array(slices);
    this.#sliceMs = windowMs / slices;
    this.#clock = clock;
    this.#slice = this.#currentSlice();
  }

  /** Adds `n` (may be negative) to the current slice. */
  add(n: number): void {
    this.#advance();
    const len = this.#slots.length;
    const i = ((this.#slice % len) + len) % len;
    this.#slots[i] = (this.#slots[i] ?? 0) + n;
    this.#sum += n;
  }

  /** The sum of the values still inside the window. */
  sum(): number {
    this.#advance();
    return this.#sum;
  }

  /** Forgets every value. */
  reset(): void {
    this.#slots.fill(0);
    this.#sum = 0;
    this.#slice = this.#currentSlice();
  }

  #currentSlice(): number {
    return Math.floor(this.#clock() / this.#sliceMs);
  }

  #advance(): void {
    const now = this.#currentSlice();
    if (now <= this.#slice) return;
    const len = this.#slots.length;
    const steps = Math.min(now - this.#slice, len);
    for (let s = 1; s <= steps; s++) {
      const i = (((this.#slice + s) % len) + len) % len;
      this.#sum -= this.#slots[i] ?? 0;
      this.#slots[i] = 0;
    }
    this.#slice = now;
  }
}
