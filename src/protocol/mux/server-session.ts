/**
 * The server side of one mux session: Finagle's handshake (the "tinit check" Rerr echoed, Tinit
 * answered with Rinit and this side's fragment size), Tdispatch and Treq in flight by tag, Tping
 * answered at once, Tdiscarded handed to the owner (the request's work is interrupted) and
 * answered with Rdiscarded, and a graceful drain: Tdrain, then the session ends once the client
 * has answered Rdrain and every request in flight has been answered. Requests arriving while
 * draining are nacked (safe to retry elsewhere). What the payload means is the owner's: a mux
 * router forwards it, a thriftmux one reads thrift in it.
 */
import { IntMap } from '../../core/int-map.js';
import type { Socket } from 'node:net';
import { MuxConnection, type MuxConnectionOptions } from './connection.js';
import { MuxBadMessageError } from './errors.js';
import { CONTROL_TAG, MuxType } from './frame.js';
import {
  decodeTdiscarded,
  decodeTdispatch,
  decodeTreq,
  encodeRdispatchHead,
  MUX_VERSION,
  ReplyStatus,
  TINIT_CHECK,
  type MuxContextEntry,
  type ReplyStatusCode,
  type Tdispatch,
  type Treq,
} from './messages.js';
import { MuxFailureFlag, muxFailureContexts } from './contexts.js';

/** A request the client sent: a Tdispatch, or (older clients) a Treq. */
export type MuxInbound = { readonly kind: 'dispatch'; readonly msg: Tdispatch } | { readonly kind: 'req'; readonly msg: Treq };

/** What a server session hands its requests to. */
export interface MuxServerOwner {
  /** A new request on `tag`; answer with {@link MuxServerSession.reply} (once). */
  request(session: MuxServerSession, tag: number, req: MuxInbound): void;
  /** The client discarded `tag`'s request: stop its work (no answer is needed any more). */
  discarded(session: MuxServerSession, tag: number, why: string): void;
  /** The session's socket closed; requests still in flight will never be answered. */
  closed(session: MuxServerSession): void;
}

const TINIT_CHECK_BYTES = Buffer.from(TINIT_CHECK);
const EMPTY = Buffer.alloc(0);
/** An Rdispatch's head with no contexts, by status: the same bytes for most replies. */
const BARE_RDISPATCH_HEADS: readonly Buffer[] = [ReplyStatus.Ok, ReplyStatus.Error, ReplyStatus.Nack].map((s) => encodeRdispatchHead(s, []));
const NACK_CONTEXTS = muxFailureContexts(MuxFailureFlag.Retryable | MuxFailureFlag.Rejected);

/** Requests one session may have in flight; more are nacked (safe to retry elsewhere). */
export const MAX_SESSION_INFLIGHT = 1024;

type State = 'open' | 'draining' | 'closed';

export class MuxServerSession extends MuxConnection {
  readonly #owner: MuxServerOwner;
  /** Tags in flight and what kind of reply each wants. */
  readonly #tags = new IntMap<'dispatch' | 'req'>();
  #state: State = 'open';
  #rdrained = false;

  /** `head`: bytes already read from the socket while its protocol was detected. */
  constructor(socket: Socket, opts: MuxConnectionOptions, owner: MuxServerOwner, head?: Buffer) {
    super(socket, opts);
    this.#owner = owner;
    this.pausesOnWriteBacklog = true;
    this.start(head);
  }

  /** Requests in flight. */
  get inflight(): number {
    return this.#tags.size;
  }

  get draining(): boolean {
    return this.#state !== 'open';
  }

  protected message(type: number, tag: number, body: Buffer): void {
    if (this.#state === 'closed') return;
    switch (type) {
      case MuxType.Tdispatch:
        return this.#request(tag, 'dispatch', body);
      case MuxType.Treq:
        return this.#request(tag, 'req', body);
      case MuxType.Tping:
        return this.writeFrame(MuxType.Rping, tag);
      case MuxType.Tdiscarded:
      case MuxType.BadTdiscarded: {
        const d = decodeTdiscarded(body);
        if (!this.#tags.delete(d.which)) return;
        this.cancelStream(d.which);
        // The client's tag is freed by this answer; the work in flight is interrupted.
        this.writeFrame(MuxType.Rdiscarded, d.which);
        this.#owner.discarded(this, d.which, d.why);
        return this.#maybeFinish();
      }
      case MuxType.Rerr:
      case MuxType.BadRerr:
        // Finagle's probe for Tinit support: echoed as it came.
        if (tag === CONTROL_TAG && body.equals(TINIT_CHECK_BYTES)) return this.writeFrame(type, tag, body);
        return;
      case MuxType.Tinit: {
        const init = this.decodeInit(body, 'Tinit');
        if (init.version !== MUX_VERSION) {
          this.writeFrame(MuxType.BadRerr, tag, Buffer.from(`unsupported version ${init.version}, expected ${MUX_VERSION}`));
          this.socket.end();
          return;
        }
        this.adoptPeerInit(init);
        return this.writeFrame(MuxType.Rinit, tag, this.encodeInit(MUX_VERSION));
      }
      case MuxType.Rdrain:
        this.#rdrained = true;
        return this.#maybeFinish();
      case MuxType.Rping:
      case MuxType.Rdiscarded:
        return;
      default:
        return this.unexpected(type, tag);
    }
  }

  #request(tag: number, kind: 'dispatch' | 'req', body: Buffer): void {
    if (tag === 0) throw new MuxBadMessageError('a request may not use the marker tag 0');
    if (this.#tags.has(tag)) return this.#duplicateTag(tag);
    const req: MuxInbound = kind === 'dispatch' ? { kind, msg: decodeTdispatch(body) } : { kind, msg: decodeTreq(body) };
    if (this.#state !== 'open' || this.#tags.size >= MAX_SESSION_INFLIGHT) {
      // Draining, or the session's requests in flight at their cap: not taken, and safe for the
      // client to send elsewhere.
      this.#writeReply(tag, kind, ReplyStatus.Nack, NACK_CONTEXTS, EMPTY);
      return;
    }
    this.#tags.set(tag, kind);
    this.#owner.request(this, tag, req);
  }

  /**
   * A request on a tag already in flight: the client's tag accounting is broken, so no reply on
   * this session can be trusted to reach the right request. As Finagle's server does, it is a
   * protocol fault: every pending request is answered Rerr and interrupted, and the connection is
   * closed (logged).
   */
  #duplicateTag(tag: number): void {
    const why = `duplicate mux tag ${tag}: the session is closed`;
    this.opts.log?.warn({ err: why, remote: `${this.socket.remoteAddress ?? '?'}:${this.socket.remotePort ?? '?'}` }, 'mux protocol error; closing the connection');
    this.#state = 'closed';
    const tags = this.#tags.keys();
    this.#tags.clear();
    const reason = Buffer.from(why, 'utf8');
    for (const t of tags) {
      this.cancelStream(t);
      this.writeFrame(MuxType.BadRerr, t, reason);
    }
    for (const t of tags) this.#owner.discarded(this, t, why);
    this.closeAfterWrites();
  }

  /** Whether `tag`'s request still waits for its answer (not answered, discarded or lost). */
  pending(tag: number): boolean {
    return this.#tags.has(tag);
  }

  /**
   * Answers `tag`'s request: an Rdispatch with `contexts` (or an Rreq, which has none) carrying
   * `body` (the reply, or an error's reason). Ignored when the request is no longer pending. With
   * `patchAt` at 0 or more, `body` is shared by many replies and each is sent with the 32-bit
   * `patch` at that offset of its body (see `writeMessage`).
   */
  reply(tag: number, status: ReplyStatusCode, contexts: readonly MuxContextEntry[], body: Buffer, patchAt = -1, patch = 0): void {
    const kind = this.#tags.get(tag);
    if (kind === undefined) return;
    this.#tags.delete(tag);
    this.#writeReply(tag, kind, status, contexts, body, patchAt, patch);
    this.#maybeFinish();
  }

  #writeReply(tag: number, kind: 'dispatch' | 'req', status: ReplyStatusCode, contexts: readonly MuxContextEntry[], body: Buffer, patchAt = -1, patch = 0): void {
    if (kind === 'req') {
      if (status === ReplyStatus.Nack) this.writeMessage(MuxType.Rreq, tag, Buffer.from([status]), EMPTY);
      else this.writeMessage(MuxType.Rreq, tag, Buffer.from([status]), body, patchAt, patch);
      return;
    }
    const head = contexts.length === 0 ? (BARE_RDISPATCH_HEADS[status] as Buffer) : encodeRdispatchHead(status, contexts);
    this.writeMessage(MuxType.Rdispatch, tag, head, body, patchAt, patch);
  }


  /** Answers `tag`'s request with Rerr: the session could not act on the message. */
  rerr(tag: number, why: string): void {
    if (!this.#tags.delete(tag)) return;
    this.writeFrame(MuxType.BadRerr, tag, Buffer.from(why, 'utf8'));
    this.#maybeFinish();
  }

  /** Graceful shutdown: Tdrain; the session closes once the client answered and nothing is in flight. */
  drain(): void {
    if (this.#state !== 'open' || this.ended) return;
    this.#state = 'draining';
    this.writeFrame(MuxType.Tdrain, CONTROL_TAG);
  }

  #maybeFinish(): void {
    if (this.#state === 'draining' && this.#rdrained && this.#tags.size === 0 && this.streaming === 0 && !this.ended) {
      this.#state = 'closed';
      this.socket.end();
    }
  }

  protected override streamsFlushed(): void {
    this.#maybeFinish();
  }

  destroy(): void {
    this.socket.destroy();
  }

  protected onClosed(_err: Error | undefined): void {
    this.#state = 'closed';
    this.#tags.clear();
    this.#owner.closed(this);
  }
}
