import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Backoff } from '../service/policy/index.js';

/** A stream that lived this long reconnects at once when it ends; a shorter one backs off. */
const HEALTHY_STREAM_MS = 1000;

/** What every resolver link's watch shows on `/<router>/interpreter_state/…`, whatever its wire. */
export interface WatchLoopStatus {
  /** `connecting` (resolving the resolver or awaiting its answer), `streaming`, `waiting` to reconnect, `stopped`. */
  readonly state: 'connecting' | 'streaming' | 'waiting' | 'stopped';
  readonly connectedAt: string | null;
  readonly lastUpdateAt: string | null;
  readonly updates: number;
  readonly reconnects: number;
  readonly retryAt: string | null;
  readonly lastError: { readonly message: string; readonly at: string } | null;
}

export interface WatchLoopOptions {
  /** Delays between failed attempts; a stream that delivered updates starts the sequence over. */
  readonly backoff: Backoff;
  readonly log?: Logger | undefined;
  /** Names the watch in its log lines (`resolver watch`, `resolver mesh watch`). */
  readonly what: string;
  /** Log fields of a failure (the watch's target, its peer). */
  readonly logFields: () => Record<string, unknown>;
  /** One stream: resolves when it ends, rejects when it fails; reports through the loop's methods. */
  readonly attempt: (signal: AbortSignal) => Promise<void>;
}

/**
 * The life of one long-lived watch on the resolver, whatever carries it (the HTTP controller's
 * chunked stream, a gRPC server stream): each stream runs until it ends or fails, then another is
 * opened after a backoff delay — at once after a stream that lived and delivered — forever, until
 * `stop()` aborts the stream and any wait. It keeps the counters the admin shows; what the updates
 * built stays with the caller, so the last good value outlives a disconnection.
 */
export class WatchLoop {
  readonly #opts: WatchLoopOptions;
  readonly #abort = new AbortController();
  #started = false;
  #state: WatchLoopStatus['state'] = 'connecting';
  #connectedAt: Date | undefined;
  #lastUpdateAt: Date | undefined;
  #updates = 0;
  #attemptUpdates = 0;
  #reconnects = 0;
  #failures = 0;
  #retryAt: Date | undefined;
  #lastError: { message: string; at: Date } | undefined;

  constructor(opts: WatchLoopOptions) {
    this.#opts = opts;
  }

  get stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  start(): void {
    if (this.#started || this.#abort.signal.aborted) return;
    this.#started = true;
    void this.#run(this.#abort.signal);
  }

  /** Aborts the stream in flight and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#state = 'stopped';
    this.#abort.abort();
  }

  /** The current stream is up (its first answer or message came). */
  streaming(): void {
    if (this.#state === 'streaming') return;
    this.#state = 'streaming';
    this.#connectedAt = new Date();
  }

  /** The current stream delivered an update the caller took. */
  delivered(): void {
    this.#updates++;
    this.#attemptUpdates++;
    this.#failures = 0;
    this.#lastUpdateAt = new Date();
  }

  /** Records a failure: the first after a good stretch is logged as news, the retries after it quietly. */
  failed(e: unknown): void {
    const message = errorMessage(e);
    this.#lastError = { message, at: new Date() };
    this.#failures++;
    const fields = { ...this.#opts.logFields(), failures: this.#failures };
    if (this.#failures === 1) this.#opts.log?.warn(fields, `${this.#opts.what} failed: ${message}`);
    else this.#opts.log?.debug(fields, `${this.#opts.what} failed again: ${message}`);
  }

  status(): WatchLoopStatus {
    return {
      state: this.#state,
      connectedAt: this.#connectedAt?.toISOString() ?? null,
      lastUpdateAt: this.#lastUpdateAt?.toISOString() ?? null,
      updates: this.#updates,
      reconnects: this.#reconnects,
      retryAt: this.#state === 'waiting' ? (this.#retryAt?.toISOString() ?? null) : null,
      lastError: this.#lastError ? { message: this.#lastError.message, at: this.#lastError.at.toISOString() } : null,
    };
  }

  async #run(signal: AbortSignal): Promise<void> {
    let delays = this.#opts.backoff.stream();
    while (!signal.aborted) {
      this.#state = 'connecting';
      this.#attemptUpdates = 0;
      const startedAt = Date.now();
      try {
        await this.#opts.attempt(signal);
      } catch (e) {
        if (signal.aborted) break;
        this.failed(e);
      }
      if (signal.aborted) break;
      let delay: number;
      if (this.#attemptUpdates > 0) {
        delays = this.#opts.backoff.stream();
        delay = Date.now() - startedAt >= HEALTHY_STREAM_MS ? 0 : delays.nextMs();
      } else {
        delay = delays.nextMs();
      }
      this.#state = 'waiting';
      this.#retryAt = new Date(Date.now() + delay);
      try {
        await sleep(delay, undefined, { signal, ref: false });
      } catch {
        break;
      }
      this.#reconnects++;
    }
    this.#state = 'stopped';
  }
}
