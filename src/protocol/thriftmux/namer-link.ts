/**
 * A client of the resolver's thrift name interface at one address: Namer calls as thrift messages
 * in mux Tdispatches, over one session (reopened when it goes away). Its liveness is Finagle's
 * threshold failure detector: a Tping every `pingIntervalMs`; one unanswered for `closeTimeoutMs`
 * ends the session (every call on it fails, and the callers reconnect); one out longer than
 * `threshold` times the window's slowest answer marks the link busy.
 */
import { MuxServerError } from '../mux/errors.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../mux/frame.js';
import { MuxTransport, type MuxExchange, type MuxRequest } from '../mux/client-transport.js';
import { ReplyStatus } from '../mux/messages.js';
import { ThriftProtocolError } from '../thrift/errors.js';
import { decodeNamerReply, encodeNamerCall, type NamerMethod, type NamerRequest, type NamerResult } from '../thrift/name-interface/messages.js';
import { PingWindow } from '../../service/ping-window.js';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import type { Logger } from '../../core/log.js';

export interface NamerLinkOptions {
  readonly tls: ClientTlsSettings | undefined;
  readonly pingIntervalMs: number;
  readonly closeTimeoutMs: number;
  readonly threshold: number;
  readonly windowSize: number;
  /** Connection and mux handshake time limit. */
  readonly handshakeTimeoutMs: number;
  readonly log?: Logger | undefined;
}

/** What the interpreter state shows of a link. */
export interface NamerLinkStatus {
  readonly resolver: string;
  readonly connections: number;
  readonly busy: boolean;
  readonly pingRttMaxMs: number;
  readonly pings: number;
}

const NO_CONTEXTS: MuxRequest['contexts'] = [];

export class ThriftMuxNamerLink {
  readonly target: string;
  readonly #transport: MuxTransport;
  readonly #window: PingWindow;
  #pings = 0;
  #seqid = 0;

  constructor(host: string, port: number, opts: NamerLinkOptions) {
    this.target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
    this.#window = new PingWindow(opts.threshold, opts.windowSize);
    this.#transport = new MuxTransport(
      { host, port, weight: 1, meta: {} },
      {
        tls: opts.tls,
        maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
        maxFrameBytes: undefined,
        pingIntervalMs: opts.pingIntervalMs,
        pingTimeoutMs: opts.closeTimeoutMs,
        handshakeTimeoutMs: opts.handshakeTimeoutMs,
        idleTimeMs: undefined,
        lifeTimeMs: undefined,
        maxWaiters: 0,
        log: opts.log,
        onPingRtt: (ms) => {
          this.#pings++;
          this.#window.record(ms);
        },
      },
    );
  }

  /** The session answers pings, but slower than the threshold allows: send new work elsewhere if there is elsewhere. */
  get busy(): boolean {
    return this.#window.busy(this.#transport.pingOutstandingMs);
  }

  status(): NamerLinkStatus {
    return { resolver: this.target, connections: this.#transport.connections, busy: this.busy, pingRttMaxMs: Math.round(this.#window.maxMs * 1000) / 1000, pings: this.#pings };
  }

  /**
   * One call. Resolves with the method's answer or its declared failure (or a
   * TApplicationException); rejects when the call could not be made or answered (a lost or
   * refused session, a nack, an Rerr, a reply that does not read). Aborting `signal` discards it.
   */
  async call<M extends NamerMethod>(method: M, req: NamerRequest<M>, signal: AbortSignal): Promise<NamerResult<M>> {
    signal.throwIfAborted();
    const seqid = (this.#seqid = (this.#seqid + 1) | 0);
    const request: MuxRequest = { contexts: NO_CONTEXTS, dst: '', dtab: [], body: encodeNamerCall(method, seqid, req), attempts: 0 };
    let ex: MuxExchange | undefined;
    const onAbort = (): void => ex?.abort(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      ex = this.#transport.dispatch(request, noop);
      await ex.head;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    if (ex.status !== ReplyStatus.Ok) throw new MuxServerError(`the resolver answered ${method} with an error: ${ex.body.toString('utf8')}`);
    const reply = decodeNamerReply(method, ex.body);
    if (reply.seqid !== seqid) throw new ThriftProtocolError(`reply to ${method} carries seqid ${reply.seqid}, expected ${seqid}`);
    return reply.result;
  }

  /** Ends the sessions (calls in flight fail). */
  close(): void {
    void this.#transport.destroy();
  }
}

function noop(): void {}
