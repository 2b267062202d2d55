import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import { serverTlsOptions } from '../../service/tls-settings.js';
import { errorMessage } from '../../core/errors.js';
import { RequestCancelledError } from '../../service/failures.js';
import { ThriftProtocolError } from '../../protocol/thrift/errors.js';
import { MessageReader, writeMessage } from '../../protocol/thrift/framing.js';
import { MessageType, readMessageHeader, type ThriftProtocolName } from '../../protocol/thrift/message.js';
import { decodeRequestHeader, emptyResponseHeader, encodeUpgradeReply, UPGRADE_METHOD } from '../../protocol/thrift/ttwitter.js';
import type { Counter } from '../../service/stats/index.js';
import { nullTracer } from '../../service/tracing.js';
import type { ProtocolServer } from '../core/router-base.js';
import { ServerStats } from '../core/server-stats.js';
import type { ServerAddress } from '../core/types.js';
import { ThriftCall, type CallConnection } from './call.js';
import type { ThriftServerConfig } from './schema.js';
import type { ThriftRouterHost } from './types.js';
import { noteSocketRead } from '../../core/read-pacer.js';

/** Calls one connection may have in flight (pipelined) before its reads pause. */
const MAX_PIPELINED = 128;
/**
 * A connection's reads pause while the bytes of its calls in flight, or of its replies queued
 * (written, not yet taken by the kernel), are above this: a client that does not read its replies
 * stops being read, and what is held for it stays near this bound (plus one message).
 */
export const WRITE_HIGH_WATER_BYTES = 1024 * 1024;

/**
 * One server of a thrift router: a TCP listener whose connections carry framed or buffered calls
 * in the router's protocol. A connection's calls are routed concurrently and answered in order
 * (thrift clients that pipeline expect that). A connection that sends bytes that are not thrift,
 * or a message over the size limit, is closed (logged); the others go on.
 */
export class ThriftServerHandler implements ProtocolServer {
  readonly router: ThriftRouterHost;
  readonly cfg: ThriftServerConfig;
  readonly stats: ServerStats;
  readonly protocol: ThriftProtocolName;
  readonly #listener: Server;
  readonly #conns = new Set<ThriftServerConnection>();
  #closing = false;
  malformed: Counter | undefined;
  /** Whether the process has a tracer at all (else no trace id is made per call). */
  readonly tracing: boolean;

  constructor(router: ThriftRouterHost, cfg: ThriftServerConfig) {
    this.router = router;
    this.cfg = cfg;
    this.protocol = cfg.thriftProtocol ?? router.cfg.thriftProtocol;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    this.tracing = router.tracer !== nullTracer;
    if (cfg.tls === undefined) this.#listener = createServer({ noDelay: true }, (s) => this.#accept(s));
    else {
      const tls: typeof Tls = process.getBuiltinModule('node:tls');
      const secure = tls.createServer(serverTlsOptions(cfg.tls), (s) => this.#accept(s));
      secure.on('connection', (s: Socket) => s.setNoDelay(true));
      // A failed handshake is the client's problem: no connection, nothing to serve.
      secure.on('tlsClientError', () => {});
      this.#listener = secure;
    }
  }

  #accept(socket: Socket): void {
    if (this.#closing) {
      socket.destroy();
      return;
    }
    this.stats.track(socket);
    const c = new ThriftServerConnection(this, socket);
    this.#conns.add(c);
    socket.once('close', () => this.#conns.delete(c));
  }

  async listen(ip: string, port: number): Promise<ServerAddress> {
    const l = this.#listener;
    await new Promise<void>((resolve, reject) => {
      l.once('error', reject);
      l.listen(port, ip, () => {
        l.off('error', reject);
        resolve();
      });
    });
    const a = l.address() as AddressInfo;
    const scope = this.stats.bound(a.address, a.port);
    this.malformed = scope.counter('thrift', 'malformed');
    return { ip: a.address, port: a.port };
  }

  stopAccepting(): void {
    this.#closing = true;
    this.#listener.close();
    for (const c of this.#conns) c.closeWhenIdle();
  }

  closeAll(): void {
    for (const c of this.#conns) c.destroy();
  }
}

/**
 * What a thrift connection needs of the server that accepted it: a thrift server, or a thriftmux
 * server that downgraded a plain thrift client.
 */
export interface ThriftConnectionOwner {
  readonly router: ThriftRouterHost;
  readonly cfg: { readonly clearContext: boolean; readonly thriftFramed: boolean; readonly maxConcurrentRequests?: number | undefined };
  readonly stats: ServerStats;
  readonly protocol: ThriftProtocolName;
  readonly tracing: boolean;
  readonly malformed: Counter | undefined;
}

/** One downstream connection: its reader, its upgrade state, its calls in order. */
export class ThriftServerConnection implements CallConnection {
  readonly router: ThriftRouterHost;
  readonly protocol: ThriftProtocolName;
  readonly clearContext: boolean;
  readonly #server: ThriftConnectionOwner;
  readonly #socket: Socket;
  readonly #reader: MessageReader;
  readonly #framed: boolean;
  /** Calls in arrival order; answered from the front as their answers come. */
  #calls: ThriftCall[] = [];
  #first = true;
  #upgraded = false;
  /** Reads paused (too many calls or bytes in flight, or replies queued). */
  #paused = false;
  /** Waiting for the socket's 'drain' to look again. */
  #awaitingDrain = false;
  /** Bytes of the calls in flight (held until answered). */
  #inflightBytes = 0;
  #closeWhenIdle = false;
  #gone = false;

  /** `head`: bytes already read while the connection's protocol was detected (a thriftmux downgrade). */
  constructor(server: ThriftConnectionOwner, socket: Socket, head?: Buffer) {
    this.#server = server;
    this.router = server.router;
    this.protocol = server.protocol;
    this.clearContext = server.cfg.clearContext;
    this.#framed = server.cfg.thriftFramed;
    this.#socket = socket;
    this.#reader = new MessageReader({ framed: this.#framed, protocol: this.protocol, maxMessageBytes: server.router.cfg.thriftMaxMessageBytes });
    socket.on('data', (chunk: Buffer) => {
      noteSocketRead(chunk.length);
      this.#data(chunk);
    });
    socket.on('close', () => this.#closed());
    if (head !== undefined && head.length > 0) this.#data(head);
  }

  #data(chunk: Buffer): void {
    // Draining: nothing new is routed (a call read now would go upstream with nowhere to answer);
    // the bytes are read and dropped so the client's close is still seen.
    if (this.#closeWhenIdle) return;
    const r = this.#reader;
    r.push(chunk);
    try {
      for (let m = r.next(); m !== undefined; m = r.next()) {
        this.#message(m, r.prefixLength);
        if (this.#gone || this.#closeWhenIdle) return;
      }
    } catch (err) {
      this.#malformed(err);
    }
  }

  #message(unit: Buffer, prefixLength: number): void {
    const msg = prefixLength === 0 ? unit : unit.subarray(prefixLength);
    const h = readMessageHeader(this.protocol, msg);
    if (h === undefined) throw new ThriftProtocolError('thrift message shorter than its header');
    if (this.#first) {
      this.#first = false;
      // Finagle's TTwitter upgrade: accepted, and from now on each call carries a RequestHeader.
      if (h.name === UPGRADE_METHOD && h.type === MessageType.CALL) {
        this.#upgraded = true;
        this.#reader.prefixed = true;
        this.#write(encodeUpgradeReply(this.protocol, h.seqid), false);
        return;
      }
    }
    if (h.type !== MessageType.CALL && h.type !== MessageType.ONEWAY) throw new ThriftProtocolError(`a client sent a thrift message of type ${h.type} (${h.name})`);
    const incoming = prefixLength === 0 ? undefined : decodeRequestHeader(this.protocol, unit.subarray(0, prefixLength));
    const call = new ThriftCall(this, msg, h, incoming);
    this.#calls.push(call);
    this.#inflightBytes += msg.length;
    const stats = this.#server.stats;
    const max = this.#server.cfg.maxConcurrentRequests;
    const overloaded = max !== undefined && stats.inflight >= max;
    stats.begin();
    if (!this.#paused && (this.#calls.length >= MAX_PIPELINED || this.#inflightBytes > WRITE_HIGH_WATER_BYTES)) {
      this.#paused = true;
      this.#socket.pause();
    }
    void call.serve(overloaded);
  }

  /** A call has its answer: write every answer ready at the front, in order. */
  done(call: ThriftCall): void {
    const stats = this.#server.stats;
    if (this.#server.tracing) {
      const traceId = call.traceId();
      if (stats.tracing(traceId)) {
        stats.trace({ traceId, started: call.started, service: call.dst?.show, client: call.clientId, residual: '/', success: call.success, extra: [{ kind: 'rpc', name: call.header.name }] });
      }
    }
    stats.end(call.success, performance.now() - call.started);
    const calls = this.#calls;
    let n = 0;
    while (n < calls.length && (calls[n] as ThriftCall).out !== undefined) {
      const c = calls[n] as ThriftCall;
      const out = c.out;
      if (out !== null && out !== undefined && !this.#gone) this.#write(out, this.#upgraded);
      this.#inflightBytes -= c.requestBytes;
      n++;
    }
    if (n > 0) calls.splice(0, n);
    if (!this.#awaitingDrain) this.#pace();
    if (this.#closeWhenIdle && calls.length === 0) this.#socket.end();
  }

  #write(msg: Buffer, withHeader: boolean): void {
    writeMessage(this.#socket, this.#framed, withHeader ? emptyResponseHeader() : undefined, msg);
  }

  /**
   * Pauses reads while the replies queued are over the mark (until 'drain'), and resumes them once
   * calls (with hysteresis), bytes in flight and replies queued are all back under their bounds.
   */
  #pace(): void {
    if (this.#closeWhenIdle || this.#gone) return;
    const s = this.#socket;
    if (s.writableLength > WRITE_HIGH_WATER_BYTES) {
      if (!this.#paused) {
        this.#paused = true;
        s.pause();
      }
      this.#awaitingDrain = true;
      s.once('drain', this.#drained);
      return;
    }
    if (this.#paused && this.#calls.length < MAX_PIPELINED / 2 && this.#inflightBytes <= WRITE_HIGH_WATER_BYTES) {
      this.#paused = false;
      s.resume();
    }
  }

  readonly #drained = (): void => {
    this.#awaitingDrain = false;
    this.#pace();
  };

  #malformed(err: unknown): void {
    const s = this.#socket;
    this.#server.malformed?.incr();
    this.router.log.warn({ err: errorMessage(err), remote: `${s.remoteAddress}:${s.remotePort}` }, 'closing a thrift connection that sent a malformed or oversized message');
    this.destroy();
  }

  /** The drain: no new call is taken; close once every call in flight has its answer. */
  closeWhenIdle(): void {
    this.#closeWhenIdle = true;
    // Reads resume (if paused for pipelining) only to see the client's close; #data drops them.
    if (this.#paused) {
      this.#paused = false;
      this.#socket.resume();
    }
    if (this.#calls.length === 0) this.#socket.end();
  }

  destroy(): void {
    this.#socket.destroy();
    this.#closed();
  }

  /** The client is gone: calls still routing are cancelled (no further attempt). */
  #closed(): void {
    if (this.#gone) return;
    this.#gone = true;
    // A oneway call is the client's to forget: it still goes out.
    for (const c of this.#calls) if (c.out === undefined && !c.oneway) c.handle.abort(new RequestCancelledError(), true);
  }
}
