/**
 * The mux client side as the router core's transport: one session per endpoint, each attempt a
 * tag. A session the server drains (or whose lease ran out) takes no new requests: the next one
 * opens a new session. An attempt the core aborts (timeout, the caller left) sends Tdiscarded, so
 * the upstream's work is interrupted.
 */
import { connect as netConnect, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import type { Logger } from 'pino';
import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import { MuxClientSession, type MuxClientSessionOwner, type MuxReplyHandler } from './client-session.js';
import { MuxNackError, MuxSessionClosedError } from './errors.js';
import { MAX_TAG, MIN_TAG } from './frame.js';
import { ReplyStatus, type MuxContextEntry, type MuxDelegation, type ReplyStatusCode } from './messages.js';

/** One request as the router sends it upstream (the same object across attempts). */
export interface MuxRequest {
  /** Broadcast contexts, forwarded (the router rewrites retries per attempt). */
  readonly contexts: MuxContextEntry[];
  /** The destination written upstream: the bound name's residual path (set per attempt). */
  dst: string;
  /** The request's own delegations, forwarded as they came. */
  readonly dtab: readonly MuxDelegation[];
  readonly body: Buffer;
  /** Attempts made so far (the core's retries; requeues are not counted, as in Finagle). */
  attempts: number;
}

/** What an endpoint's sessions are built with. */
export interface MuxEndpointOptions {
  readonly tls: ClientTlsSettings | undefined;
  readonly maxMessageBytes: number;
  readonly maxFrameBytes: number | undefined;
  readonly pingIntervalMs: number;
  readonly pingTimeoutMs: number;
  /** The session handshake's time limit (connection included); 0: none. */
  readonly handshakeTimeoutMs: number;
  /** clientSession.idleTimeMs / lifeTimeMs: the session closes itself after these. */
  readonly idleTimeMs: number | undefined;
  readonly lifeTimeMs: number | undefined;
  readonly maxWaiters: number;
  readonly log: Logger | undefined;
  /** Told each answered Tping's round trip. */
  readonly onPingRtt?: ((ms: number) => void) | undefined;
}

/** How a service classifies mux replies (no configurable classifier: an Rdispatch error is a failure, never retried). */
export interface MuxClassification {
  readonly retryErrors: false;
}

const EMPTY = Buffer.alloc(0);

function noop(): void {}

/** One attempt: a tag on a session, and the reply. */
export class MuxExchange implements MuxReplyHandler {
  readonly head: Promise<void>;
  readonly req: MuxRequest;
  tag = 0;
  status: ReplyStatusCode = ReplyStatus.Ok;
  contexts: MuxContextEntry[] = [];
  body: Buffer = EMPTY;
  error: Error | undefined;
  finished = false;
  outcomePending = false;
  headClass: ResponseClass | undefined;
  pendingService: string | undefined;
  /** Whether the request left (a failure before that is safe to send elsewhere). */
  written = false;
  #session: MuxClientSession | undefined;
  #resolve!: () => void;
  #reject!: (e: Error) => void;
  readonly #onDone: (ex: MuxExchange) => void;

  constructor(req: MuxRequest, onDone: (ex: MuxExchange) => void) {
    this.req = req;
    this.#onDone = onDone;
    this.head = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.head.catch(noop);
  }

  send(session: MuxClientSession): void {
    this.#session = session;
    this.written = true;
    session.dispatch(this, this.req);
  }

  replied(status: ReplyStatusCode, contexts: MuxContextEntry[], body: Buffer): void {
    if (this.finished) return;
    if (status === ReplyStatus.Nack) {
      this.#end(new MuxNackError());
      return;
    }
    this.status = status;
    this.contexts = contexts;
    this.body = body;
    this.#end(undefined);
  }

  failed(err: Error, written: boolean): void {
    if (this.finished) return;
    this.written = written;
    this.#end(err);
  }

  /** The attempt is no longer wanted: the server is told (Tdiscarded) and the tag held until it answers. */
  abort(err: Error): void {
    if (this.finished) return;
    this.#session?.discard(this, err.message);
    this.#end(err);
  }

  /** A reply is whole when it arrives: nothing to release for a retry. */
  discard(): void {}

  #end(err: Error | undefined): void {
    this.finished = true;
    if (err === undefined) this.#resolve();
    else {
      this.error = err;
      this.#reject(err);
    }
    this.#onDone(this);
  }
}

/** The sessions of one endpoint: one in use, reopened when it goes away. */
export class MuxTransport implements MuxClientSessionOwner {
  readonly #host: string;
  readonly #port: number;
  readonly #opts: MuxEndpointOptions;
  #session: MuxClientSession | undefined;
  readonly #sessions = new Set<MuxClientSession>();
  #closed = false;

  constructor(address: Address, opts: MuxEndpointOptions) {
    this.#host = address.host;
    this.#port = address.port;
    this.#opts = opts;
  }

  get connections(): number {
    return this.#sessions.size;
  }

  /** How long the current session's Tping has gone unanswered (0: none out, or no session). */
  get pingOutstandingMs(): number {
    return this.#session?.pingOutstandingMs ?? 0;
  }

  saturated(load: number): boolean {
    if (this.#session?.leaseExpired === true) return true;
    return load >= MAX_TAG - MIN_TAG + this.#opts.maxWaiters;
  }

  dispatch(req: MuxRequest, onDone: (ex: MuxExchange) => void): MuxExchange {
    const ex = new MuxExchange(req, onDone);
    if (this.#closed) queueMicrotask(() => ex.failed(new MuxSessionClosedError(), false));
    else ex.send(this.#live());
    return ex;
  }

  gone(session: MuxClientSession): void {
    if (this.#session === session) this.#session = undefined;
  }

  closed(session: MuxClientSession): void {
    this.gone(session);
    this.#sessions.delete(session);
  }

  #live(): MuxClientSession {
    const s = this.#session;
    if (s !== undefined && s.usable) return s;
    return this.#connect();
  }

  #connect(): MuxClientSession {
    const o = this.#opts;
    const tls = o.tls;
    const host = this.#host;
    const port = this.#port;
    let socket: Socket;
    if (tls === undefined) socket = netConnect({ host, port, noDelay: true });
    else {
      const t: typeof Tls = process.getBuiltinModule('node:tls');
      socket = t.connect({
        host,
        port,
        rejectUnauthorized: tls.rejectUnauthorized,
        ...(tls.servername === undefined ? (host.includes(':') || /^[0-9.]+$/.test(host) ? {} : { servername: host }) : { servername: tls.servername }),
        ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      });
      socket.setNoDelay(true);
    }
    const session = new MuxClientSession(
      socket,
      { maxMessageBytes: o.maxMessageBytes, maxFrameBytes: o.maxFrameBytes, pingIntervalMs: o.pingIntervalMs, pingTimeoutMs: o.pingTimeoutMs, handshakeTimeoutMs: o.handshakeTimeoutMs, idleTimeMs: o.idleTimeMs, log: o.log, onPingRtt: o.onPingRtt },
      this,
    );
    this.#session = session;
    this.#sessions.add(session);
    if (o.lifeTimeMs !== undefined) {
      const timer = setTimeout(() => {
        this.gone(session);
        void session.close();
      }, o.lifeTimeMs);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
    }
    return session;
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#session = undefined;
    return Promise.all([...this.#sessions].map((s) => s.close())).then(noop);
  }

  destroy(): Promise<void> {
    this.#closed = true;
    this.#session = undefined;
    for (const s of this.#sessions) s.destroy();
    return Promise.resolve();
  }
}
