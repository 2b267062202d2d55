/**
 * The thrift client side as the router core's transport: a pool of connections per endpoint with
 * one call in flight on each (as Finagle's thrift client: a thrift connection answers in order and
 * has no way to cancel a call, so a call that is given up closes its connection). Each call's
 * seqid is rewritten to the connection's own counter and checked on the reply; the server side
 * restores the downstream's. With `attemptUpgrade` every new connection first offers Finagle's
 * TTwitter upgrade, and upgraded connections carry a RequestHeader before each call.
 */
import { connect as netConnect, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import { PrxError } from '../../core/errors.js';
import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { ThriftConnectionClosedError, ThriftProtocolError, ThriftSeqidMismatchError } from './errors.js';
import { MessageReader, writeMessage, type FramingOptions } from './framing.js';
import { MessageType, readMessageHeader, withSeqid, type MessageHeader, type ThriftProtocolName } from './message.js';
import { encodeRequestHeader, encodeUpgradeCall, UPGRADE_METHOD, type RequestHeader } from './ttwitter.js';
import { noteSocketRead } from '../../core/read-pacer.js';

/** One call as the router sends it upstream (the same object across attempts). */
export interface ThriftRequest {
  /** The call's message (no frame, no TTwitter header), with the downstream's seqid. */
  message: Buffer;
  header: MessageHeader;
  readonly oneway: boolean;
  /** Makes what an upgraded upstream connection is told before the call (dest, delegations, trace). */
  readonly context: RequestHeaderSource;
  /** {@link requestHeader} encoded, made on first use by an upgraded connection. */
  encodedHeader: Buffer | undefined;
}

/** The router's side of a call's TTwitter header, asked only when a connection is upgraded. */
export interface RequestHeaderSource {
  requestHeader(): RequestHeader;
}

/** What an endpoint's connections are made with. */
export interface ThriftEndpointOptions extends FramingOptions {
  readonly attemptUpgrade: boolean;
  /** hostConnectionPool.maxSize: connections (so calls in flight) per endpoint. */
  readonly maxConnections: number;
  /** hostConnectionPool.maxWaiters: calls that may wait for a connection. */
  readonly maxWaiters: number;
  /** An idle connection closes after this long. */
  readonly idleTimeMs: number | undefined;
  /** The client's `tls`: connections are TLS (no ALPN) when set. */
  readonly tls: ClientTlsSettings | undefined;
}

/** One attempt: a call on an upstream connection and its reply. */
export class ThriftExchange {
  readonly head: Promise<void>;
  readonly req: ThriftRequest;
  error: Error | undefined;
  finished = false;
  outcomePending = false;
  headClass: ResponseClass | undefined;
  pendingService: string | undefined;
  /** The reply (no frame, no header struct) with the upstream connection's seqid; none for oneway. */
  reply: Buffer | undefined;
  replyHeader: MessageHeader | undefined;
  /** Whether any of the call was handed to a socket (from then on it may have reached the peer). */
  written = false;
  /** The connection carrying the call, once it has one. */
  conn: ThriftConnection | undefined;
  readonly #transport: ThriftTransport;
  readonly #onDone: (ex: ThriftExchange) => void;
  #resolve!: () => void;
  #reject!: (e: Error) => void;

  constructor(req: ThriftRequest, transport: ThriftTransport, onDone: (ex: ThriftExchange) => void) {
    this.req = req;
    this.#transport = transport;
    this.#onDone = onDone;
    this.head = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.head.catch(noop);
  }

  /** The reply (or, for oneway, the write) is complete. */
  complete(reply: Buffer | undefined, header: MessageHeader | undefined): void {
    if (this.finished) return;
    this.finished = true;
    this.reply = reply;
    this.replyHeader = header;
    this.#resolve();
    this.#onDone(this);
  }

  fail(err: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.error ??= err;
    this.#reject(this.error);
    this.#onDone(this);
  }

  /** Given up (timeout, the caller left): the connection under a call in flight is closed. */
  abort(err: Error): void {
    if (this.finished) return;
    // First: the connection's own failure below must not replace the reason.
    this.error ??= err;
    const conn = this.conn;
    if (conn !== undefined) conn.destroy();
    else this.#transport.unqueue(this);
    this.fail(err);
  }

  /** Nothing to release: the reply is already whole. */
  discard(): void {}
}

/** The connections of one endpoint. */
export class ThriftTransport {
  readonly #host: string;
  readonly #port: number;
  readonly opts: ThriftEndpointOptions;
  readonly #all = new Set<ThriftConnection>();
  readonly #idle: ThriftConnection[] = [];
  #waiters: ThriftExchange[] = [];
  #closed = false;
  #closing: (() => void) | undefined;

  constructor(address: Address, opts: ThriftEndpointOptions) {
    this.#host = address.host;
    this.#port = address.port;
    this.opts = opts;
  }

  get connections(): number {
    return this.#all.size;
  }

  saturated(load: number): boolean {
    return load >= this.opts.maxConnections + this.opts.maxWaiters;
  }

  dispatch(req: ThriftRequest, onDone: (ex: ThriftExchange) => void): ThriftExchange {
    const ex = new ThriftExchange(req, this, onDone);
    if (this.#closed) {
      queueMicrotask(() => ex.fail(new ThriftConnectionClosedError(false)));
      return ex;
    }
    const idle = this.#idle.pop();
    if (idle !== undefined) idle.send(ex);
    else if (this.#all.size < this.opts.maxConnections) this.#all.add(new ThriftConnection(this, this.#host, this.#port, ex));
    else this.#waiters.push(ex);
    return ex;
  }

  unqueue(ex: ThriftExchange): void {
    const i = this.#waiters.indexOf(ex);
    if (i >= 0) this.#waiters.splice(i, 1);
  }

  /** A connection is free: the next waiting call takes it, or it idles. */
  ready(conn: ThriftConnection): void {
    const next = this.#waiters.shift();
    if (next !== undefined) {
      conn.send(next);
      return;
    }
    if (this.#closed) {
      conn.destroy();
      return;
    }
    this.#idle.push(conn);
    conn.idle();
  }

  /** A connection closed (whatever its state). */
  gone(conn: ThriftConnection): void {
    this.#all.delete(conn);
    const i = this.#idle.indexOf(conn);
    if (i >= 0) this.#idle.splice(i, 1);
    // Calls waiting for a connection get a new one while the pool has room.
    while (!this.#closed && this.#waiters.length > 0 && this.#all.size < this.opts.maxConnections) {
      const ex = this.#waiters.shift() as ThriftExchange;
      this.#all.add(new ThriftConnection(this, this.#host, this.#port, ex));
    }
    if (this.#closed && this.#all.size === 0) this.#closing?.();
  }

  close(): Promise<void> {
    this.#closed = true;
    for (const c of this.#idle.splice(0)) c.destroy();
    if (this.#all.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#closing = resolve));
  }

  destroy(): Promise<void> {
    this.#closed = true;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const ex of waiters) ex.fail(new ThriftConnectionClosedError(false));
    for (const c of [...this.#all]) c.destroy();
    return Promise.resolve();
  }
}

const State = { Connecting: 0, Upgrading: 1, Idle: 2, Busy: 3, Closed: 4 } as const;
type State = (typeof State)[keyof typeof State];

/** One upstream connection: at most one call in flight. */
export class ThriftConnection {
  readonly #transport: ThriftTransport;
  readonly #socket: Socket;
  readonly #reader: MessageReader;
  readonly #proto: ThriftProtocolName;
  #state: State = State.Connecting;
  #ex: ThriftExchange | undefined;
  #seqid = 0;
  #upgraded = false;

  constructor(transport: ThriftTransport, host: string, port: number, first: ThriftExchange) {
    this.#transport = transport;
    const o = transport.opts;
    this.#proto = o.protocol;
    this.#reader = new MessageReader(o);
    this.#ex = first;
    first.conn = this;
    const s = (this.#socket = connectTo(host, port, o.tls));
    s.on(o.tls === undefined ? 'connect' : 'secureConnect', () => this.#connected());
    s.on('data', (chunk: Buffer) => {
      noteSocketRead(chunk.length);
      this.#data(chunk);
    });
    s.on('error', (err) => this.#closed(err));
    s.on('close', () => this.#closed(undefined));
    s.on('timeout', () => {
      if (this.#state === State.Idle) this.destroy();
    });
  }

  get upgraded(): boolean {
    return this.#upgraded;
  }

  #connected(): void {
    if (this.#state !== State.Connecting) return;
    if (this.#transport.opts.attemptUpgrade) {
      this.#state = State.Upgrading;
      this.#write(encodeUpgradeCall(this.#proto, this.#nextSeqid()), undefined);
      return;
    }
    this.#start();
  }

  /** Connected (and upgraded or not): the call it was opened for goes out, or it joins the pool. */
  #start(): void {
    const ex = this.#ex;
    this.#ex = undefined;
    if (ex !== undefined && !ex.finished) this.send(ex);
    else this.#transport.ready(this);
  }

  #nextSeqid(): number {
    this.#seqid = (this.#seqid + 1) | 0;
    return this.#seqid;
  }

  /** Sends `ex`'s call with this connection's next seqid. */
  send(ex: ThriftExchange): void {
    this.#state = State.Busy;
    this.#ex = ex;
    ex.conn = this;
    this.#socket.setTimeout(0);
    const req = ex.req;
    const seqid = this.#nextSeqid();
    const msg = withSeqid(this.#proto, req.message, req.header, seqid);
    let prefix: Buffer | undefined;
    if (this.#upgraded) prefix = req.encodedHeader ??= encodeRequestHeader(this.#proto, req.context.requestHeader());
    ex.written = true;
    this.#write(msg, prefix, req.oneway ? ex : undefined);
  }

  #write(msg: Buffer, prefix: Buffer | undefined, oneway?: ThriftExchange): void {
    // A oneway call is done once written: the connection is free again.
    writeMessage(this.#socket, this.#transport.opts.framed, prefix, msg, oneway === undefined ? undefined : (err) => (err === null || err === undefined ? this.#onewayWritten(oneway) : undefined));
  }

  #onewayWritten(ex: ThriftExchange): void {
    if (this.#ex !== ex || this.#state !== State.Busy) return;
    this.#ex = undefined;
    this.#state = State.Idle;
    ex.conn = undefined;
    ex.complete(undefined, undefined);
    this.#transport.ready(this);
  }

  #data(chunk: Buffer): void {
    const r = this.#reader;
    r.push(chunk);
    try {
      for (let m = r.next(); m !== undefined; m = r.next()) {
        if (this.#state === State.Closed) return;
        this.#message(r.prefixLength === 0 ? m : m.subarray(r.prefixLength));
      }
    } catch (err) {
      this.#fail(err instanceof Error ? err : new ThriftProtocolError(String(err)));
    }
  }

  #message(msg: Buffer): void {
    const h = readMessageHeader(this.#proto, msg);
    if (h === undefined) throw new ThriftProtocolError('thrift reply shorter than its header');
    if (this.#state === State.Upgrading) {
      // A REPLY accepts the upgrade; an EXCEPTION (unknown method) leaves the connection plain.
      if (h.name !== UPGRADE_METHOD || h.seqid !== this.#seqid) throw new ThriftProtocolError(`unexpected reply ${h.name} to the upgrade call`);
      if (h.type === MessageType.REPLY) {
        this.#upgraded = true;
        this.#reader.prefixed = true;
      }
      this.#start();
      return;
    }
    const ex = this.#ex;
    if (this.#state !== State.Busy || ex === undefined || ex.req.oneway) throw new ThriftProtocolError(`unexpected thrift message ${h.name} from the server`);
    if (h.seqid !== this.#seqid) throw new ThriftSeqidMismatchError(this.#seqid, h.seqid);
    this.#ex = undefined;
    this.#state = State.Idle;
    ex.conn = undefined;
    ex.complete(msg, h);
    this.#transport.ready(this);
  }

  /** Idle in the pool: the idle timeout runs. */
  idle(): void {
    this.#state = State.Idle;
    const ms = this.#transport.opts.idleTimeMs;
    if (ms !== undefined) this.#socket.setTimeout(ms);
  }

  destroy(): void {
    this.#fail(new ThriftConnectionClosedError(this.#ex?.written ?? false));
  }

  #fail(err: Error): void {
    this.#socket.destroy();
    this.#closed(err);
  }

  #closed(err: Error | undefined): void {
    if (this.#state === State.Closed) return;
    const wasConnecting = this.#state === State.Connecting;
    this.#state = State.Closed;
    const ex = this.#ex;
    this.#ex = undefined;
    if (ex !== undefined) {
      ex.conn = undefined;
      // A failed connect keeps node's error (ECONNREFUSED…): the core knows those as connect failures.
      if (wasConnecting && err !== undefined) ex.fail(err);
      else if (err instanceof PrxError) ex.fail(err);
      else ex.fail(new ThriftConnectionClosedError(ex.written, err === undefined ? undefined : { cause: err }));
    }
    this.#socket.destroy();
    this.#transport.gone(this);
  }
}

function connectTo(host: string, port: number, tls: ClientTlsSettings | undefined): Socket {
  if (tls === undefined) return netConnect({ host, port, noDelay: true });
  const t: typeof Tls = process.getBuiltinModule('node:tls');
  const s = t.connect({
    host,
    port,
    rejectUnauthorized: tls.rejectUnauthorized,
    ...(tls.servername === undefined ? (host.includes(':') || /^[0-9.]+$/.test(host) ? {} : { servername: host }) : { servername: tls.servername }),
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
  });
  s.setNoDelay(true);
  return s;
}

function noop(): void {}
