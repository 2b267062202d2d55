import type { Backoff, BackoffStream } from './backoff.js';

/**
 * Runs a retry of a failed watch or listing after the next delay of a backoff stream; `reset`
 * after a success starts the delays over. At most one retry is pending at a time, and none
 * after `close`.
 */
export class RetryTimer {
  readonly #backoff: Backoff;
  #stream: BackoffStream;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(backoff: Backoff) {
    this.#backoff = backoff;
    this.#stream = backoff.stream();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Calls `f` after the next delay, replacing a retry already pending. */
  schedule(f: () => void): void {
    if (this.#closed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#closed) f();
    }, this.#stream.nextMs());
    // A backend being down must not keep the process alive on its own.
    this.#timer.unref();
  }

  reset(): void {
    this.#stream = this.#backoff.stream();
  }

  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
