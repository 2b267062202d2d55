import type { Logger } from '../core/log.js';
import { errorMessage } from '../core/errors.js';
import type { NamerLinkStatus, ThriftMuxNamerLink } from '../protocol/thriftmux/namer-link.js';
import type { NamerMethod, NamerReply, NamerRequest } from '../protocol/thrift/name-interface/messages.js';
import type { Backoff } from '../service/policy/index.js';
import { ResolverThriftError } from './errors.js';
import { WatchLoop, type WatchLoopStatus } from './watch-loop.js';

/** The long-polled methods. */
export type PolledMethod = Exclude<NamerMethod, 'delegate'>;

/** One watch as `/<router>/interpreter_state/io.prx.resolver/<namespace>.json` shows it. */
export interface PollWatchStatus extends WatchLoopStatus {
  readonly link: NamerLinkStatus | null;
  /** The stamp of the value held (hex), as the resolver named it. */
  readonly stamp: string | null;
}

export interface PollWatchOptions<M extends PolledMethod> {
  readonly method: M;
  /** The request carrying `stamp` (empty: "the current value, now"). */
  readonly request: (stamp: Buffer) => NamerRequest<M>;
  /** The link to use for the next attempt (resolves the resolver's address). */
  readonly link: (signal: AbortSignal) => Promise<ThriftMuxNamerLink>;
  readonly backoff: Backoff;
  /** Each new value; a throw counts as the resolver's error (a reply that does not hold together). */
  readonly onValue: (reply: NamerReply<M>) => void;
  /** The resolver refused the request (a BindFailure, AddrFailure, DtabFailure, or a reply that does not read). */
  readonly onResolverError: (error: ResolverThriftError) => void;
  readonly log?: Logger | undefined;
}

const EMPTY_STAMP: Buffer = Buffer.alloc(0);

/**
 * One name watched through the resolver's long polls (namerd's thrift client loop): the first
 * request carries no stamp and is answered at once; each next one carries the stamp of the value
 * last received and is answered when the value changes. A failed call, a refusal or a lost session
 * ends the attempt; the {@link WatchLoop} starts another after its backoff, again without a stamp,
 * so the first answer after a reconnection is the current value and nothing changed meanwhile is
 * lost. What the values built stays with the caller while the link is down.
 */
export class ThriftPollWatch<M extends PolledMethod> {
  readonly #opts: PollWatchOptions<M>;
  readonly #loop: WatchLoop;
  #link: ThriftMuxNamerLink | undefined;
  #stamp: Buffer | undefined;

  constructor(opts: PollWatchOptions<M>) {
    this.#opts = opts;
    this.#loop = new WatchLoop({
      backoff: opts.backoff,
      log: opts.log,
      what: `resolver ${opts.method} watch`,
      logFields: () => ({ method: opts.method, resolver: this.#link?.target }),
      attempt: (signal) => this.#attempt(signal),
    });
  }

  start(): void {
    this.#loop.start();
  }

  /** Withdraws the poll in flight (Tdiscarded) and any wait; nothing is delivered afterwards. */
  stop(): void {
    this.#loop.stop();
  }

  status(): PollWatchStatus {
    return { ...this.#loop.status(), link: this.#link?.status() ?? null, stamp: this.#stamp?.toString('hex') ?? null };
  }

  async #attempt(signal: AbortSignal): Promise<void> {
    const link = await this.#opts.link(signal);
    this.#link = link;
    let stamp: Buffer = EMPTY_STAMP;
    for (;;) {
      const result = await link.call(this.#opts.method, this.#opts.request(stamp), signal);
      if (signal.aborted) return;
      if ('ok' in result) {
        this.#loop.streaming();
        const reply = result.ok;
        try {
          this.#opts.onValue(reply);
        } catch (e) {
          throw this.#refused(`the resolver's ${this.#opts.method} answer does not hold together: ${errorMessage(e)}`);
        }
        stamp = reply.stamp;
        this.#stamp = stamp;
        this.#loop.delivered();
        continue;
      }
      if ('failure' in result) throw this.#refused(`the resolver refused ${this.#opts.method}: ${result.failure.reason}`);
      throw this.#refused(`the resolver failed ${this.#opts.method}: ${result.appException.message}`);
    }
  }

  /** The resolver's verdict on the request: the caller hears of it (and the loop retries after its backoff). */
  #refused(message: string): ResolverThriftError {
    const e = new ResolverThriftError(message);
    this.#opts.onResolverError(e);
    return e;
  }
}
