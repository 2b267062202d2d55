/**
 * Finagle's threshold failure detector, judged from a session's pings: the round trips of the last
 * `windowSize` pings are kept, and a ping out for longer than `threshold` times the largest of them
 * marks the session busy (it answers, but slowly: new work should go elsewhere if it can). A ping
 * out longer than the close timeout is the session's end; the session's own ping timer sees to that.
 */
export class PingWindow {
  readonly #threshold: number;
  readonly #rtts: number[];
  #next = 0;
  #count = 0;
  #max = 0;

  constructor(threshold: number, windowSize: number) {
    this.#threshold = threshold;
    this.#rtts = new Array<number>(Math.max(1, windowSize)).fill(0);
  }

  /** A ping was answered after `ms`. */
  record(ms: number): void {
    const out = this.#rtts[this.#next] as number;
    this.#rtts[this.#next] = ms;
    this.#next = (this.#next + 1) % this.#rtts.length;
    if (this.#count < this.#rtts.length) this.#count++;
    if (ms >= this.#max) this.#max = ms;
    else if (out === this.#max) this.#max = Math.max(...this.#rtts.slice(0, this.#count));
  }

  /** The largest round trip in the window (0 before the first answer). */
  get maxMs(): number {
    return this.#max;
  }

  get samples(): number {
    return this.#count;
  }

  /** Whether a ping out for `outstandingMs` is over the threshold (never before the first answer). */
  busy(outstandingMs: number): boolean {
    return this.#count > 0 && outstandingMs > this.#threshold * this.#max;
  }
}
