import type { Logger } from '../core/log.js';
import type { Backoff } from '../service/policy/index.js';
import { ResolverMeshError } from './errors.js';
import { WatchLoop } from './watch-loop.js';

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

/**
 * One long-lived server stream on the resolver's mesh interface, kept alive by a {@link WatchLoop}.
 * Messages are delivered as they arrive; when the stream ends — the resolver refused, went away,
 * or the channel's PINGs went unanswered — it is reopened after a backoff delay, forever, until
 * `stop()`. Each new stream starts with the current value, so nothing that changed while the link
 * was down is lost; what the messages built stays with the caller.
 */
export class MeshWatch {
  readonly #opts: MeshWatchOptions;
  readonly #loop: WatchLoop;
  #resolver: string | undefined;

  constructor(opts: MeshWatchOptions) {
    this.#opts = opts;
    this.#loop = new WatchLoop({
      backoff: opts.backoff,
      log: opts.log,
      what: 'resolver mesh watch',
      logFields: () => ({ method: opts.method, resolver: this.#resolver }),
      attempt: (signal) => this.#attempt(signal),
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Cancels the stream and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#loop.stop();
  }

  status(): MeshWatchStatus {
    const s = this.#loop.status();
    return {
      state: s.state,
      resolver: this.#resolver ?? null,
      connectedAt: s.connectedAt,
      lastUpdateAt: s.lastUpdateAt,
      updates: s.updates,
      reconnects: s.reconnects,
      retryAt: s.retryAt,
      lastError: s.lastError,
    };
  }

  async #attempt(signal: AbortSignal): Promise<void> {
    const channel = await this.#opts.channel(signal);
    this.#resolver = channel.target;
    const end = await channel.stream(this.#opts.method, this.#opts.request, (m, bytes) => this.#deliver(m, bytes), signal);
    if (signal.aborted) return;
    const error = new ResolverMeshError(`the resolver ended ${this.#opts.method} with status ${end.code}: ${end.details}`);
    this.#loop.failed(error);
    if (end.verdict) this.#opts.onResolverError(error);
  }

  #deliver(message: unknown, bytes: Buffer): void {
    if (this.#loop.stopped) return;
    this.#loop.streaming();
    // A throw here ends the stream as a malformed message (the channel reports it).
    this.#opts.onMessage(message, bytes);
    this.#loop.delivered();
  }
}
