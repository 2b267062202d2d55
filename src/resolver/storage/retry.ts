import { z } from 'zod';
import { addIssue } from '../../config/index.js';
import { type Backoff, type BackoffStream, jittered } from '../../service/policy/index.js';

/** How long watch loops wait before retrying a failed backend: 100 ms growing to 10 s (decorrelated jitter). */
export const DEFAULT_WATCH_BACKOFF: Backoff = jittered(100, 10_000);

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

/**
 * A key prefix for the key-value stores: absolute, without a trailing `/` or empty segments
 * (`/namerd/dtabs`); a namespace's key is `<pathPrefix>/<ns>`.
 */
export const keyPathPrefix = z.string().superRefine((text, ctx) => {
  if (!/^(\/[^/\s]+)+$/.test(text)) {
    addIssue(ctx, [], 'expected an absolute key prefix such as /namerd/dtabs (no trailing "/", no empty segments)', {
      value: text,
    });
  }
});
