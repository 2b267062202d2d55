import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import { readTraceContext } from '../../protocol/mux/contexts.js';
import { muxRoute, routeByFirstBytes, type FirstBytesRoute } from '../../protocol/mux/first-bytes.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../protocol/mux/frame.js';
import { MuxServerSession, type MuxInbound, type MuxServerOwner } from '../../protocol/mux/server-session.js';
import type { MuxConnectionOptions } from '../../protocol/mux/connection.js';
import { thriftDowngradeRoute } from '../../protocol/thriftmux/first-bytes.js';
import type { ThriftProtocolName } from '../../protocol/thrift/message.js';
import type { Counter } from '../../service/stats/index.js';
import { serverTlsOptions } from '../../service/tls-settings.js';
import { nullTracer, TraceId } from '../../service/tracing.js';
import type { ProtocolServer } from '../core/router-base.js';
import { ServerStats } from '../core/server-stats.js';
import type { ServerAddress } from '../core/types.js';
import { ThriftMuxCall, type ThriftMuxCallServer } from './mux-call.js';
import type { ThriftmuxServerConfig } from './schema.js';
import { ThriftServerConnection, type ThriftConnectionOwner } from './server.js';
import type { ThriftRouterHost } from './types.js';
import { SessionCalls } from '../../protocol/mux/session-calls.js';

/** How long a drained session with nothing in flight may take to flush and close before it is cut. */
const CLOSE_GRACE_MS = 1000;

/**
 * One server of a thriftmux router: each connection is told by its first bytes (Finagle's
 * downgrade check) to be a mux session whose requests carry thrift calls ({@link ThriftMuxCall}),
 * or a plain thrift client, served exactly as the thrift router serves one (TTwitter upgrade
 * included). On shutdown mux sessions are drained (Tdrain) and thrift connections closed once idle.
 */
export class ThriftMuxServer implements ProtocolServer, MuxServerOwner, ThriftMuxCallServer, ThriftConnectionOwner {
  readonly router: ThriftRouterHost;
  readonly cfg: ThriftmuxServerConfig;
  readonly stats: ServerStats;
  readonly protocol: ThriftProtocolName;
  readonly clearContext: boolean;
  readonly tracing: boolean;
  malformed: Counter | undefined;
  #connects: Counter | undefined;
  #downgraded: Counter | undefined;
  readonly #listener: Server;
  readonly #sessionOpts: MuxConnectionOptions;
  readonly #routes: readonly FirstBytesRoute[];
  readonly #sessions = new SessionCalls<ThriftMuxCall>();
  readonly #thriftConns = new Set<ThriftServerConnection>();
  #accepting = true;

  constructor(router: ThriftRouterHost, cfg: ThriftmuxServerConfig) {
    this.router = router;
    this.cfg = cfg;
    this.protocol = cfg.thriftProtocol ?? router.cfg.thriftProtocol;
    this.clearContext = cfg.clearContext;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    this.tracing = router.tracer !== nullTracer;
    this.#sessionOpts = { maxMessageBytes: cfg.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES, maxFrameBytes: cfg.maxFrameBytes, log: router.log };
    // The downgrade is asked first: a framed binary call would otherwise pass for an Rerr.
    this.#routes = [thriftDowngradeRoute(this.protocol, cfg.thriftFramed, (s, head) => this.#downgrade(s, head)), muxRoute((s, head) => this.#adopt(s, head))];
    if (cfg.tls !== undefined) {
      const tls: typeof Tls = process.getBuiltinModule('node:tls');
      const secure = tls.createServer(serverTlsOptions(cfg.tls));
      secure.on('connection', (s: Socket) => this.stats.track(s));
      secure.on('secureConnection', (s: Tls.TLSSocket) => this.#accept(s));
      secure.on('tlsClientError', noop);
      this.#listener = secure;
    } else {
      this.#listener = createServer((s) => {
        this.stats.track(s);
        this.#accept(s);
      });
    }
  }

  #accept(socket: Socket): void {
    socket.setNoDelay(true);
    socket.on('error', noop);
    if (!this.#accepting) {
      socket.destroy();
      return;
    }
    routeByFirstBytes(socket, this.#routes);
  }

  #adopt(socket: Socket, head: Buffer): void {
    this.#connects?.incr();
    const session = new MuxServerSession(socket, this.#sessionOpts, this, head);
    this.#sessions.adopt(session);
  }

  /** Finagle's downgrade: the connection is a plain thrift client's. */
  #downgrade(socket: Socket, head: Buffer): void {
    this.#downgraded?.incr();
    const c = new ThriftServerConnection(this, socket, head);
    this.#thriftConns.add(c);
    socket.once('close', () => this.#thriftConns.delete(c));
  }

  listen(ip: string, port: number): Promise<ServerAddress> {
    const l = this.#listener;
    return new Promise<ServerAddress>((resolve, reject) => {
      l.once('error', reject);
      l.listen(port, ip, () => {
        l.off('error', reject);
        const a = l.address() as AddressInfo;
        const scope = this.stats.bound(a.address, a.port);
        this.malformed = scope.counter('thrift', 'malformed');
        this.#connects = scope.counter('thriftmux', 'connects');
        this.#downgraded = scope.counter('thriftmux', 'downgraded_connects');
        resolve({ ip: a.address, port: a.port });
      });
    });
  }

  /** MuxServerOwner: a request on a session. */
  request(session: MuxServerSession, tag: number, req: MuxInbound): void {
    const call = new ThriftMuxCall(this, session, tag, req);
    this.#sessions.add(call);
    const max = this.cfg.maxConcurrentRequests;
    const overloaded = max !== undefined && this.stats.inflight >= max ? max : undefined;
    this.stats.begin();
    void call.serve(overloaded);
  }

  /** MuxServerOwner: the client discarded a request. */
  discarded(session: MuxServerSession, tag: number): void {
    this.#sessions.discard(session, tag);
  }

  /** MuxServerOwner: a session's connection closed: its requests are abandoned. */
  closed(session: MuxServerSession): void {
    this.#sessions.close(session);
  }

  /** ThriftMuxCallServer: a mux call is over. */
  end(call: ThriftMuxCall, success: boolean): void {
    this.#sessions.end(call);
    const stats = this.stats;
    if (this.tracing) {
      const t = readTraceContext(call.contexts);
      if (t !== undefined) {
        const traceId = new TraceId({ ...t, sampled: sampledOf(t.flags) });
        if (stats.tracing(traceId)) {
          const extra = call.header === undefined ? undefined : [{ kind: 'rpc' as const, name: call.header.name }];
          stats.trace({ traceId, started: call.started, service: call.dst?.show, client: call.clientId, residual: '/', success, ...(extra === undefined ? {} : { extra }) });
        }
      }
    }
    stats.end(success, performance.now() - call.started);
  }

  stopAccepting(): void {
    this.#accepting = false;
    this.#listener.close();
    for (const s of this.#sessions.sessions()) s.drain();
    for (const c of this.#thriftConns) c.closeWhenIdle();
  }

  closeAll(): void {
    for (const s of this.#sessions.sessions()) {
      if (s.inflight > 0) {
        s.destroy();
        continue;
      }
      // Answers just written are flushed before the connection goes.
      s.socket.end();
      setTimeout(() => s.destroy(), CLOSE_GRACE_MS).unref();
    }
    for (const c of this.#thriftConns) c.destroy();
  }
}

function noop(): void {}

// Finagle's trace flags: bit 1 says a sampling decision was made, bit 2 what it was (bit 0: debug).
const SAMPLING_KNOWN = 2n;
const SAMPLED = 4n;

function sampledOf(flags: bigint): boolean | undefined {
  return (flags & SAMPLING_KNOWN) === 0n ? undefined : (flags & SAMPLED) !== 0n;
}
