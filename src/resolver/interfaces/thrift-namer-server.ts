import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import type { ServerTlsConfig } from '../../config/tls.js';
import { errorMessage } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { muxRoute, routeByFirstBytes, type FirstBytesRoute } from '../../protocol/mux/first-bytes.js';
import { ReplyStatus } from '../../protocol/mux/messages.js';
import { MuxServerSession, type MuxInbound, type MuxServerOwner } from '../../protocol/mux/server-session.js';
import { SessionCalls, type TaggedCall } from '../../protocol/mux/session-calls.js';
import { muxFailureContexts, MuxFailureFlag } from '../../protocol/mux/contexts.js';
import { thriftDowngradeRoute } from '../../protocol/thriftmux/first-bytes.js';
import { MessageReader, writeMessage } from '../../protocol/thrift/framing.js';
import { MessageType, readMessageHeader } from '../../protocol/thrift/message.js';
import { decodeRequestHeader, emptyResponseHeader, encodeUpgradeReply, UPGRADE_METHOD } from '../../protocol/thrift/ttwitter.js';
import { serverTlsOptions } from '../../service/tls-settings.js';
import type { Counter, StatsReceiver } from '../../service/stats/index.js';
import type { NamerReplySink, PendingCall, ServedCall, ThriftNamerService } from './thrift-namer-service.js';

/** Requests to the name interface are a name, a stamp and a dtab: 4 MiB is far beyond any real one. */
export const MAX_NAMER_MESSAGE_BYTES = 4 * 1024 * 1024;
/** Long polls one downgraded thrift connection may queue (it is answered in order, one at a time). */
const MAX_THRIFT_QUEUE = 64;
const NACK_CONTEXTS = muxFailureContexts(MuxFailureFlag.Retryable | MuxFailureFlag.Rejected);
const EMPTY = Buffer.alloc(0);

export interface ThriftNamerListenConfig {
  readonly ip: string;
  readonly port: number;
  readonly tls?: ServerTlsConfig | undefined;
}

/**
 * One call on a mux session, and where its reply goes: a long poll that waits holds this, its
 * poll and its session's tag, nothing more. A Tdiscarded or a closed session withdraws it.
 */
class NamerMuxCall implements TaggedCall, NamerReplySink {
  readonly session: MuxServerSession;
  readonly tag: number;
  readonly #seqid: number;
  readonly #calls: SessionCalls<NamerMuxCall>;
  pending: PendingCall | undefined = undefined;

  constructor(session: MuxServerSession, tag: number, seqid: number, calls: SessionCalls<NamerMuxCall>) {
    this.session = session;
    this.tag = tag;
    this.#seqid = seqid;
    this.#calls = calls;
  }

  reply(message: Buffer, seqidAt: number): void {
    this.pending = undefined;
    this.#calls.end(this);
    this.session.reply(this.tag, ReplyStatus.Ok, [], message, seqidAt, this.#seqid);
  }

  discarded(): void {
    const p = this.pending;
    this.pending = undefined;
    p?.withdraw();
  }
}

/**
 * The listener of the thrift name interface: ThriftMux as namerd serves it. Each connection is
 * told by its first bytes to be a mux session (calls in Tdispatch, answered as they complete, a
 * Tdiscarded withdrawing a long poll) or a plain framed binary thrift client (Finagle's downgrade,
 * TTwitter upgrade included), served one call at a time in order, as a thrift connection is.
 */
export class ThriftNamerServer implements MuxServerOwner {
  readonly #service: ThriftNamerService;
  readonly #cfg: ThriftNamerListenConfig;
  readonly #log: Logger;
  readonly #listener: Server;
  readonly #routes: readonly FirstBytesRoute[];
  readonly #calls = new SessionCalls<NamerMuxCall>();
  readonly #thriftConns = new Set<DowngradedConnection>();
  readonly #connects: Counter;
  readonly #downgraded: Counter;
  readonly #malformed: Counter;
  #accepting = true;
  #address: { ip: string; port: number } | undefined;

  constructor(service: ThriftNamerService, cfg: ThriftNamerListenConfig, log: Logger, stats: StatsReceiver) {
    this.#service = service;
    this.#cfg = cfg;
    this.#log = log;
    this.#connects = stats.counter('thriftmux', 'connects');
    this.#downgraded = stats.counter('thriftmux', 'downgraded_connects');
    this.#malformed = stats.counter('malformed');
    stats.gauge(['connections'], () => this.#thriftConns.size + [...this.#calls.sessions()].length);
    this.#routes = [thriftDowngradeRoute('binary', true, (s, head) => this.#downgrade(s, head)), muxRoute((s, head) => this.#adopt(s, head))];
    if (cfg.tls === undefined) this.#listener = createServer({ noDelay: true }, (s) => this.#accept(s));
    else {
      const tls: typeof Tls = process.getBuiltinModule('node:tls');
      const secure = tls.createServer(serverTlsOptions(cfg.tls), (s) => this.#accept(s));
      secure.on('tlsClientError', noop);
      this.#listener = secure;
    }
  }

  get address(): { ip: string; port: number } {
    if (this.#address === undefined) throw new Error('the thrift name interface is not listening');
    return this.#address;
  }

  listen(): Promise<{ ip: string; port: number }> {
    const l = this.#listener;
    return new Promise((resolve, reject) => {
      l.once('error', reject);
      l.listen(this.#cfg.port, this.#cfg.ip, () => {
        l.off('error', reject);
        const a = l.address() as AddressInfo;
        this.#address = { ip: a.address, port: a.port };
        resolve(this.#address);
      });
    });
  }

  #accept(socket: Socket): void {
    socket.setNoDelay(true);
    socket.on('error', noop);
    if (!this.#accepting) {
      socket.destroy();
      return;
    }
    routeByFirstBytes(socket, this.#routes, 64, () => this.#malformed.incr());
  }

  #adopt(socket: Socket, head: Buffer): void {
    this.#connects.incr();
    const session = new MuxServerSession(socket, { maxMessageBytes: MAX_NAMER_MESSAGE_BYTES, maxFrameBytes: undefined, log: this.#log }, this, head);
    this.#calls.adopt(session);
  }

  #downgrade(socket: Socket, head: Buffer): void {
    this.#downgraded.incr();
    const c = new DowngradedConnection(socket, head, this.#service, this.#log, this.#malformed);
    this.#thriftConns.add(c);
    socket.once('close', () => this.#thriftConns.delete(c));
  }

  /** MuxServerOwner: a call on a session. It is read at once; a long poll holds only what it decoded. */
  request(session: MuxServerSession, tag: number, req: MuxInbound): void {
    const r = this.#service.read(req.msg.body);
    if ('reply' in r) {
      if (r.reply !== undefined) session.reply(tag, ReplyStatus.Ok, [], r.reply);
      else {
        this.#malformed.incr();
        session.rerr(tag, 'the request is not a thrift call');
      }
      return;
    }
    const call = new NamerMuxCall(session, tag, r.call.seqid, this.#calls);
    this.#calls.add(call);
    this.#answer(call, r.call);
  }

  #answer(call: NamerMuxCall, served: ServedCall): void {
    try {
      call.pending = this.#service.answer(served, call);
    } catch (e) {
      // A bug, not a client's error: its call fails at the mux level, and the session serves on.
      this.#calls.end(call);
      this.#log.error({ err: errorMessage(e) }, 'thrift name interface failed a call');
      call.session.rerr(call.tag, `the resolver failed: ${errorMessage(e)}`);
    }
  }

  discarded(session: MuxServerSession, tag: number): void {
    this.#calls.discard(session, tag);
  }

  closed(session: MuxServerSession): void {
    this.#calls.close(session);
  }

  /**
   * Stops accepting; mux sessions are drained (Tdrain) and their waiting polls nacked, so clients
   * go to another resolver (or come back to this one) at once; plain thrift connections close.
   * What is still open after `graceMs` is cut.
   */
  async close(graceMs: number): Promise<void> {
    this.#accepting = false;
    const listenerClosed = new Promise<void>((resolve) => this.#listener.close(() => resolve()));
    const sessions = [...this.#calls.sessions()];
    for (const s of sessions) {
      s.drain();
      // Every call here is a long poll or a delegation in progress: none is worth holding a drain.
      for (const call of this.#calls.callsOf(s)) {
        s.reply(call.tag, ReplyStatus.Nack, NACK_CONTEXTS, EMPTY);
        call.discarded();
      }
    }
    for (const c of this.#thriftConns) c.destroy();
    const ended = Promise.all(sessions.map((s) => new Promise<void>((resolve) => (s.ended ? resolve() : s.socket.once('close', () => resolve())))));
    const timer = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([ended, timer]);
    for (const s of sessions) s.destroy();
    await listenerClosed;
  }
}

/**
 * A plain thrift client on the interface's port: framed binary calls, answered one at a time in
 * order. Finagle's TTwitter upgrade is accepted (its request headers are read past, and each
 * reply gets an empty response header), so Finagle's plain thrift clients work as well.
 */
class DowngradedConnection {
  readonly #socket: Socket;
  readonly #service: ThriftNamerService;
  readonly #log: Logger;
  readonly #malformed: Counter;
  readonly #reader = new MessageReader({ framed: true, protocol: 'binary', maxMessageBytes: MAX_NAMER_MESSAGE_BYTES });
  readonly #queue: Buffer[] = [];
  /** Withdraws the call being answered; set while one waits. */
  #withdraw: (() => void) | undefined;
  #closed = false;
  #upgraded = false;
  #busy = false;

  constructor(socket: Socket, head: Buffer, service: ThriftNamerService, log: Logger, malformed: Counter) {
    this.#socket = socket;
    this.#service = service;
    this.#log = log;
    this.#malformed = malformed;
    socket.once('close', () => {
      this.#closed = true;
      this.#withdraw?.();
    });
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    this.#read(head);
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #read(chunk: Buffer): void {
    try {
      this.#reader.push(chunk);
      for (let m = this.#reader.next(); m !== undefined; m = this.#reader.next()) {
        const prefix = this.#reader.prefixLength;
        // An upgraded client's request header (trace, client id, delegations) means nothing here; it is checked, then dropped.
        if (prefix > 0) decodeRequestHeader('binary', m.subarray(0, prefix));
        this.#queue.push(Buffer.from(m.subarray(prefix)));
      }
    } catch (e) {
      this.#malformed.incr();
      this.#log.warn({ err: errorMessage(e), remote: this.#socket.remoteAddress }, 'thrift name interface: closing a connection that sent bad thrift');
      this.#socket.destroy();
      return;
    }
    if (this.#queue.length > MAX_THRIFT_QUEUE) this.#socket.pause();
    void this.#drain();
  }

  async #drain(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      for (let msg = this.#queue.shift(); msg !== undefined; msg = this.#queue.shift()) {
        if (this.#queue.length <= MAX_THRIFT_QUEUE / 2) this.#socket.resume();
        const h = readMessageHeader('binary', msg);
        if (h !== undefined && h.name === UPGRADE_METHOD && h.type === MessageType.CALL && !this.#upgraded) {
          this.#write(encodeUpgradeReply('binary', h.seqid), false);
          this.#upgraded = true;
          this.#reader.prefixed = true;
          continue;
        }
        const reply = await this.#service.handle(msg, (withdraw) => {
          if (this.#closed) withdraw();
          else this.#withdraw = withdraw;
        });
        this.#withdraw = undefined;
        if (this.#closed) return;
        if (reply === undefined) throw new Error('the request is not a thrift call');
        this.#write(reply, this.#upgraded);
      }
    } catch (e) {
      this.#malformed.incr();
      this.#log.warn({ err: errorMessage(e) }, 'thrift name interface: closing a thrift connection');
      this.#socket.destroy();
    } finally {
      this.#busy = false;
    }
  }

  #write(reply: Buffer, prefixed: boolean): void {
    writeMessage(this.#socket, true, prefixed ? emptyResponseHeader() : undefined, reply);
  }
}

function noop(): void {}
