/**
 * The client side of one mux session: Finagle's handshake (an Rerr "tinit check" on tag 1 that a
 * Tinit-aware server echoes, then Tinit/Rinit with the fragment sizes), many dispatches in flight
 * by tag (tags reused smallest-first, and held after a discard until the server answers), Tping
 * liveness, a server's Tdrain acknowledged with Rdrain (the session takes no new requests and
 * closes once idle), and Tlease honoured (an expired lease makes the session refuse new requests).
 */
import { IntMap } from '../../core/int-map.js';
import type { Socket } from 'node:net';
import { MuxConnection, type MuxConnectionOptions } from './connection.js';
import { MuxBadMessageError, MuxHandshakeError, MuxServerError, MuxSessionClosedError, MuxSessionLostError } from './errors.js';
import { CONTROL_TAG, MuxType } from './frame.js';
import { TagPool } from './tag-pool.js';
import { decodeRdispatch, decodeTlease, encodeTdiscarded, encodeTdispatchHead, MUX_VERSION, TINIT_CHECK, type MuxContextEntry, type MuxDelegation, type ReplyStatusCode } from './messages.js';

/** A dispatch as the session writes it. */
export interface MuxDispatch {
  readonly contexts: readonly MuxContextEntry[];
  readonly dst: string;
  readonly dtab: readonly MuxDelegation[];
  readonly body: Buffer;
}

/** Where a dispatch's outcome goes (the exchange). */
export interface MuxReplyHandler {
  /** The request's tag once written (0 before). */
  tag: number;
  /** Rdispatch: its status, contexts and body. */
  replied(status: ReplyStatusCode, contexts: MuxContextEntry[], body: Buffer): void;
  /** The dispatch failed: `written` says whether it had left. */
  failed(err: Error, written: boolean): void;
}

export interface MuxClientOptions extends MuxConnectionOptions {
  /** How often a Tping checks the server (0: never). */
  readonly pingIntervalMs: number;
  /** How long a Tping may go unanswered before the session is considered lost. */
  readonly pingTimeoutMs: number;
  /**
   * How long the connection and handshake (tinit check, Tinit/Rinit) may take before the session
   * fails as a connection that could not be made (its requests are sent elsewhere); 0: no limit.
   * Default {@link DEFAULT_HANDSHAKE_TIMEOUT_MS}.
   */
  readonly handshakeTimeoutMs?: number | undefined;
  /**
   * How long the session may sit with nothing in flight before it closes itself (the client's
   * `clientSession.idleTimeMs`); undefined: no limit. Pings do not count as use.
   */
  readonly idleTimeMs?: number | undefined;
  /** Told each answered Tping's round trip (a failure detector judges the session by them). */
  readonly onPingRtt?: ((ms: number) => void) | undefined;
}

/** The handshake's default time limit. */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 5000;

/** Told when a session stops taking requests (drained, closed) and when its socket closes. */
export interface MuxClientSessionOwner {
  gone(session: MuxClientSession): void;
  closed(session: MuxClientSession): void;
}

const TINIT_CHECK_BYTES = Buffer.from(TINIT_CHECK);

type State = 'check' | 'init' | 'open' | 'draining' | 'closed';

export class MuxClientSession extends MuxConnection {
  #state: State = 'check';
  readonly #owner: MuxClientSessionOwner;
  readonly #copts: MuxClientOptions;
  /** Tag → its handler; null once discarded (the tag stays taken until the server answers). */
  readonly #tags = new IntMap<MuxReplyHandler | null>();
  readonly #tagPool = new TagPool();
  /** Dispatches waiting for the handshake. */
  #queued: { readonly handler: MuxReplyHandler; readonly req: MuxDispatch }[] = [];
  /** Requests whose handler still waits (not discarded). */
  #live = 0;
  /** Epoch ms the current lease ends (Infinity: no lease given). */
  #leaseUntil = Infinity;
  /** A Tping is out, unanswered. */
  #pingOut = false;
  /** performance.now() when the Tping out was sent. */
  #pingSentAt = 0;
  #pingDeadline: NodeJS.Timeout | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #handshakeTimer: NodeJS.Timeout | undefined;
  /** performance.now() when the session last became idle (nothing in flight); -1 while busy. */
  #idleSince = -1;
  #idleTimer: NodeJS.Timeout | undefined;
  #closeWaiters: (() => void)[] = [];

  constructor(socket: Socket, opts: MuxClientOptions, owner: MuxClientSessionOwner) {
    super(socket, opts);
    this.#owner = owner;
    this.#copts = opts;
    this.start();
    // Finagle's probe: a Tinit-aware server echoes it; an old one answers anything else.
    this.writeFrame(MuxType.BadRerr, CONTROL_TAG, TINIT_CHECK_BYTES);
    const limit = opts.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    if (limit > 0) {
      this.#handshakeTimer = setTimeout(this.#handshakeTimedOut, limit, limit);
      this.#handshakeTimer.unref();
    }
  }

  readonly #handshakeTimedOut = (limit: number): void => {
    if (this.#state === 'check' || this.#state === 'init') this.#failHandshake(`mux server did not finish the handshake within ${limit} ms`);
  };

  /** Whether new requests may be sent on this session. */
  get usable(): boolean {
    const s = this.#state;
    return (s === 'check' || s === 'init' || s === 'open') && !this.ended && !this.socket.destroyed;
  }

  /** Whether the server's lease has run out (new requests should go elsewhere). */
  get leaseExpired(): boolean {
    return this.#leaseUntil !== Infinity && Date.now() >= this.#leaseUntil;
  }

  /** How long the Tping out has gone unanswered (0 when none is out). */
  get pingOutstandingMs(): number {
    return this.#pingOut ? performance.now() - this.#pingSentAt : 0;
  }

  /** Dispatches in flight (including discarded ones whose tags are still held). */
  get active(): number {
    return this.#tags.size + this.#queued.length;
  }

  dispatch(handler: MuxReplyHandler, req: MuxDispatch): void {
    if (!this.usable) {
      handler.failed(new MuxSessionClosedError(), false);
      return;
    }
    this.#idleSince = -1;
    this.#live++;
    if (this.#state !== 'open') this.#queued.push({ handler, req });
    else this.#write(handler, req);
  }

  #write(handler: MuxReplyHandler, req: MuxDispatch): void {
    const tag = this.#tagPool.acquire();
    if (tag === undefined) {
      this.#live--;
      handler.failed(new MuxSessionClosedError('mux session has no free tag'), false);
      return;
    }
    handler.tag = tag;
    this.#tags.set(tag, handler);
    this.writeMessage(MuxType.Tdispatch, tag, encodeTdispatchHead(req.contexts, req.dst, req.dtab), req.body);
  }

  /**
   * The caller gave up on a dispatch: a Tdiscarded interrupts the server's work. The tag stays
   * taken until the server answers (an Rdispatch or Rdiscarded), so a late reply never reaches
   * another request; unless the dispatch was still being written in fragments, in which case the
   * server never had it and the tag is free at once.
   */
  discard(handler: MuxReplyHandler, why: string): void {
    const q = this.#queued.findIndex((e) => e.handler === handler);
    if (q >= 0) {
      this.#queued.splice(q, 1);
      this.#live--;
      return;
    }
    const tag = handler.tag;
    if (tag === 0 || this.#tags.get(tag) !== handler) return;
    this.#live--;
    const cutShort = this.cancelStream(tag);
    this.writeFrame(MuxType.BadTdiscarded, 0, encodeTdiscarded(tag, why));
    if (cutShort) {
      // Only part of the Tdispatch went out: the server never had a request on this tag, so no
      // answer will come; its Tdiscarded (written before any reuse) drops what it holds. Free now.
      this.#tags.delete(tag);
      this.#tagPool.release(tag);
      if (this.#tags.size === 0 && this.#queued.length === 0) this.#becameIdle();
    } else this.#tags.set(tag, null);
    this.#maybeFinishDrain();
  }

  #release(tag: number): MuxReplyHandler | null | undefined {
    const h = this.#tags.get(tag);
    if (h === undefined) return undefined;
    this.#tags.delete(tag);
    this.#tagPool.release(tag);
    if (h !== null) this.#live--;
    if (this.#tags.size === 0 && this.#queued.length === 0) this.#becameIdle();
    return h;
  }

  /**
   * Nothing is in flight: the idle clock starts. One timer serves the session; when it fires
   * early (the session was used meanwhile) it is set again for what is left.
   */
  #becameIdle(): void {
    const limit = this.#copts.idleTimeMs;
    if (limit === undefined || limit <= 0) return;
    this.#idleSince = performance.now();
    if (this.#idleTimer === undefined) {
      this.#idleTimer = setTimeout(this.#idleCheck, limit);
      this.#idleTimer.unref();
    }
  }

  readonly #idleCheck = (): void => {
    this.#idleTimer = undefined;
    if (this.ended || this.#idleSince < 0) return;
    const limit = this.#copts.idleTimeMs as number;
    const left = this.#idleSince + limit - performance.now();
    if (left > 0) {
      this.#idleTimer = setTimeout(this.#idleCheck, left);
      this.#idleTimer.unref();
      return;
    }
    this.opts.log?.debug({ idleTimeMs: limit }, 'closing an idle mux session');
    this.#owner.gone(this);
    void this.close();
  };

  protected message(type: number, tag: number, body: Buffer): void {
    switch (this.#state) {
      case 'check':
        return this.#onCheck(type, tag, body);
      case 'init':
        return this.#onInit(type, body);
      case 'open':
      case 'draining':
      case 'closed':
        return this.#onMessage(type, tag, body);
    }
  }

  #onCheck(type: number, tag: number, body: Buffer): void {
    if ((type === MuxType.BadRerr || type === MuxType.Rerr) && tag === CONTROL_TAG && body.equals(TINIT_CHECK_BYTES)) {
      this.#state = 'init';
      this.writeFrame(MuxType.Tinit, CONTROL_TAG, this.encodeInit(MUX_VERSION));
      return;
    }
    // A server from before handshakes answered the probe some other way: speak version 1 as is.
    this.#open();
  }

  #onInit(type: number, body: Buffer): void {
    if (type === MuxType.Rinit) {
      const init = this.decodeInit(body, 'Rinit');
      if (init.version !== MUX_VERSION) return this.#failHandshake(`server accepted mux version ${init.version}, expected ${MUX_VERSION}`);
      this.adoptPeerInit(init);
      return this.#open();
    }
    if (type === MuxType.Rerr || type === MuxType.BadRerr) return this.#failHandshake(`server refused Tinit: ${body.toString('utf8')}`);
    this.#failHandshake(`unexpected mux message type ${type} during the handshake`);
  }

  #failHandshake(why: string): void {
    this.opts.log?.warn({ err: why }, 'mux handshake failed');
    this.#failQueued(new MuxHandshakeError(why));
    this.socket.destroy();
  }

  #open(): void {
    this.#state = 'open';
    clearTimeout(this.#handshakeTimer);
    const queued = this.#queued;
    this.#queued = [];
    for (const q of queued) this.#write(q.handler, q.req);
    if (this.#tags.size === 0) this.#becameIdle();
    const every = this.#copts.pingIntervalMs;
    if (every > 0) {
      this.#pingTimer = setInterval(this.#ping, every);
      this.#pingTimer.unref();
    }
  }

  /** Every interval: a Tping (unless one is still out), with its own one-shot deadline. */
  readonly #ping = (): void => {
    if (this.ended || this.#pingOut) return;
    this.#pingOut = true;
    this.#pingSentAt = performance.now();
    this.writeFrame(MuxType.Tping, CONTROL_TAG);
    const limit = this.#copts.pingTimeoutMs;
    if (limit > 0) {
      this.#pingDeadline = setTimeout(this.#pingTimedOut, limit);
      this.#pingDeadline.unref();
    }
  };

  readonly #pingTimedOut = (): void => {
    this.#pingDeadline = undefined;
    if (this.#pingOut && !this.ended) this.protocolError(new MuxSessionLostError(`mux server did not answer a Tping within ${this.#copts.pingTimeoutMs} ms`));
  };

  #onMessage(type: number, tag: number, body: Buffer): void {
    switch (type) {
      case MuxType.Rdispatch: {
        const r = decodeRdispatch(body);
        this.#release(tag)?.replied(r.status, r.contexts, r.body);
        break;
      }
      case MuxType.Rreq: {
        // prx writes only Tdispatch; an Rreq to one is read the same way (status then body).
        if (body.length < 1 || (body[0] as number) > 2) throw new MuxBadMessageError('invalid Rreq status');
        this.#release(tag)?.replied(body[0] as ReplyStatusCode, [], body.subarray(1));
        break;
      }
      case MuxType.Rerr:
      case MuxType.BadRerr:
        if (tag !== 0) this.#release(tag)?.failed(new MuxServerError(body.toString('utf8')), true);
        break;
      case MuxType.Rdiscarded:
        this.#release(tag)?.failed(new MuxSessionLostError('the server discarded the request'), true);
        break;
      case MuxType.Rping:
        if (this.#pingOut) this.#copts.onPingRtt?.(performance.now() - this.#pingSentAt);
        this.#pingOut = false;
        clearTimeout(this.#pingDeadline);
        this.#pingDeadline = undefined;
        break;
      case MuxType.Tping:
        this.writeFrame(MuxType.Rping, tag);
        break;
      case MuxType.Tdrain:
        this.writeFrame(MuxType.Rdrain, tag);
        this.#state = 'draining';
        this.#owner.gone(this);
        break;
      case MuxType.Tlease: {
        const lease = decodeTlease(body);
        const ms = Number(lease.howLong);
        this.#leaseUntil = lease.unit === 0 ? Date.now() + ms : ms;
        break;
      }
      case MuxType.Tdiscarded:
      case MuxType.BadTdiscarded:
        break;
      default:
        this.unexpected(type, tag);
    }
    this.#maybeFinishDrain();
  }

  /** Draining (the server's Tdrain, or ours) and idle: the session ends. */
  #maybeFinishDrain(): void {
    if (this.#state === 'draining' && this.#live === 0 && this.#queued.length === 0 && !this.ended) {
      this.#state = 'closed';
      this.socket.end();
    }
  }

  /** Takes no new requests; those in flight finish, then the connection closes. */
  close(): Promise<void> {
    if (this.ended) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.#closeWaiters.push(resolve));
    if (this.#state === 'check' || this.#state === 'init') {
      this.#failQueued(new MuxSessionClosedError());
      this.#state = 'draining';
    } else if (this.#state === 'open') this.#state = 'draining';
    this.#maybeFinishDrain();
    return done;
  }

  destroy(): void {
    this.socket.destroy();
  }

  #failQueued(err: Error): void {
    const queued = this.#queued;
    this.#queued = [];
    this.#live -= queued.length;
    for (const q of queued) q.handler.failed(err instanceof MuxSessionClosedError ? err : new MuxSessionClosedError(err.message), false);
  }

  protected onClosed(err: Error | undefined): void {
    this.#state = 'closed';
    clearInterval(this.#pingTimer);
    clearTimeout(this.#pingDeadline);
    clearTimeout(this.#handshakeTimer);
    clearTimeout(this.#idleTimer);
    this.#failQueued(new MuxSessionClosedError());
    const lost = new MuxSessionLostError(err === undefined ? 'mux connection closed with requests in flight' : `mux connection lost: ${err.message}`, err === undefined ? undefined : { cause: err });
    const tags = this.#tags.values();
    this.#tags.clear();
    this.#live = 0;
    for (const h of tags) h?.failed(lost, true);
    this.#owner.closed(this);
    const ws = this.#closeWaiters;
    this.#closeWaiters = [];
    for (const w of ws) w();
  }
}
