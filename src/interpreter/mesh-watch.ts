import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Backoff } from '../service/policy/index.js';
import { ResolverMeshError } from './errors.js';

/** The streamed methods the interpreter uses. */
export type MeshStreamMethod = 'StreamBoundTree' | 'StreamReplicas';

/** How a stream ended: its gRPC status, and whether that is the resolver's verdict on the request. */
export interface MeshStreamEnd {
  readonly code: number;
  readonly details: string;
  /** INVALID_ARGUMENT, NOT_FOUND and the like (or a malformed message): not a lost connection. */
  readonly verdict: boolean;
}

/** TLS to the resolver: the name its certificate must carry and the CA to trust (default: the system's). */
export interface MeshTls {
  readonly commonName: string;
  readonly ca?: Buffer;
}

/** How channels are built (see `MeshChannel`). */
export interface MeshChannelOptions {
  readonly keepalive: { readonly timeMs: number; readonly timeoutMs: number };
  readonly reconnect: { readonly initialMs: number; readonly maxMs: number };
  readonly maxMessageBytes: number;
  readonly tls?: MeshTls | undefined;
}

/** What a watch needs of a channel. */
export interface MeshChannelLike {
  readonly target: string;
  stream(method: MeshStreamMethod, request: object, onMessage: (message: unknown, bytes: Buffer) => void, signal: AbortSignal): Promise<MeshStreamEnd>;
}

/** One watch as `/<router>/interpreter_state/io.prx.mesh/<root>.json` shows it. */
export interface MeshWatchStatus {
  /** `connecting` (resolving the resolver or awaiting its first message), `streaming`, `waiting` to reconnect, `stopped`. */
  readonly state: 'connecting' | 'streaming' | 'waiting' | 'stopped';
  readonly resolver: string | null;
  readonly connectedAt: string | null;
  readonly lastUpdateAt: string | null;
  readonly updates: number;
  readonly reconnects: number;
  readonly retryAt: string | null;
  readonly lastError: { readonly message: string; readonly at: string } | null;
}

export interface MeshWatchOptions {
  readonly method: MeshStreamMethod;
  /** The request message (plain object), sent on every (re)connection. */
  readonly request: object;
  /** The channel to use for the next attempt (resolves the resolver's address). */
  readonly channel: (signal: AbortSignal) => Promise<MeshChannelLike>;
  /** Delays between failed attempts; a stream that delivered messages starts the sequence over. */
  readonly backoff: Backoff;
  /** Each message; a throw counts as the resolver's error. */
  readonly onMessage: (message: unknown, bytes: Buffer) => void;
  /** The resolver refused the request or sent something unreadable. */
  readonly onResolverError: (error: ResolverMeshError) => void;
  readonly log?: Logger | undefined;
}

/** A stream that lived this long reconnects at once when it ends; a shorter one backs off. */
const HEALTHY_STREAM_MS = 1000;

/**
 * One long-lived server stream on the resolver's mesh interface. Messages are delivered as they
 * arrive; when the stream ends — the resolver refused, went away, or the channel's PINGs went
 * unanswered — it is reopened after a backoff delay (at once after a stream that lived and
 * delivered), forever, until `stop()`. Each new stream starts with the current value, so nothing
 * that changed while the link was down is lost; what the messages built stays with the caller.
 */
export class MeshWatch {
  readonly #opts: MeshWatchOptions;
  readonly #abort = new AbortController();
  #started = false;
  #state: MeshWatchStatus['state'] = 'connecting';
  #resolver: string | undefined;
  #connectedAt: Date | undefined;
  #lastUpdateAt: Date | undefined;
  #updates = 0;
  #attemptUpdates = 0;
  #reconnects = 0;
  #failures = 0;
  #retryAt: Date | undefined;
  #lastError: { message: string; at: Date } | undefined;

  constructor(opts: MeshWatchOptions) {
    this.#opts = opts;
  }

  start(): void {
    if (this.#started || this.#abort.signal.aborted) return;
    this.#started = true;
    void this.#run(this.#abort.signal);
  }

  /** Cancels the stream and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#state = 'stopped';
    this.#abort.abort();
  }

  status(): MeshWatchStatus {
    return {
      state: this.#state,
      resolver: this.#resolver ?? null,
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
        const channel = await this.#opts.channel(signal);
        this.#resolver = channel.target;
        const end = await channel.stream(this.#opts.method, this.#opts.request, (m, bytes) => this.#deliver(m, bytes), signal);
        if (signal.aborted) break;
        const error = new ResolverMeshError(`the resolver ended ${this.#opts.method} with status ${end.code}: ${end.details}`);
        this.#failed(error);
        if (end.verdict) this.#opts.onResolverError(error);
      } catch (e) {
        if (signal.aborted) break;
        this.#failed(e);
      }
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

  #deliver(message: unknown, bytes: Buffer): void {
    if (this.#abort.signal.aborted) return;
    if (this.#state !== 'streaming') {
      this.#state = 'streaming';
      this.#connectedAt = new Date();
    }
    // A throw here ends the stream as a malformed message (the channel reports it).
    this.#opts.onMessage(message, bytes);
    this.#updates++;
    this.#attemptUpdates++;
    this.#failures = 0;
    this.#lastUpdateAt = new Date();
  }

  #failed(e: unknown): void {
    const message = errorMessage(e);
    this.#lastError = { message, at: new Date() };
    this.#failures++;
    // The first failure after a good stretch is news; the retries after it are not.
    const fields = { method: this.#opts.method, resolver: this.#resolver, failures: this.#failures };
    if (this.#failures === 1) this.#opts.log?.warn(fields, `resolver mesh watch failed: ${message}`);
    else this.#opts.log?.debug(fields, `resolver mesh watch failed again: ${message}`);
  }
}
