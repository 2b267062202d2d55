import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import type { MuxConnectionOptions } from '../../protocol/mux/connection.js';
import { muxRoute, routeByFirstBytes } from '../../protocol/mux/first-bytes.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../protocol/mux/frame.js';
import { MuxServerSession, type MuxInbound, type MuxServerOwner } from '../../protocol/mux/server-session.js';
import { serverTlsOptions } from '../../service/tls-settings.js';
import type { ProtocolServer } from '../core/router-base.js';
import { ServerStats } from '../core/server-stats.js';
import type { ServerAddress } from '../core/types.js';
import { MuxCall, type MuxCallHost, type MuxCallServer } from './call.js';
import type { MuxServerConfig } from './schema.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import { TraceId, type Tracer } from '../../service/tracing.js';
import { readTraceContext } from '../../protocol/mux/contexts.js';
import { SessionCalls } from '../../protocol/mux/session-calls.js';

/** What a server needs of its router. */
export interface MuxServerHost extends MuxCallHost {
  readonly label: string;
  readonly stats: StatsReceiver;
  readonly tracer: Tracer;
}

/** How long a drained session with nothing in flight may take to flush and close before it is cut. */
const CLOSE_GRACE_MS = 1000;

/**
 * One server of a mux router: a TCP (or TLS) listener whose connections become mux server
 * sessions (chosen by their first bytes, so another protocol may share the port later) and whose
 * requests become {@link MuxCall}s. On shutdown every session is drained (Tdrain); in-flight
 * requests finish.
 */
export class MuxServer implements ProtocolServer, MuxServerOwner, MuxCallServer {
  readonly router: MuxServerHost;
  readonly cfg: MuxServerConfig;
  readonly stats: ServerStats;
  readonly clearContext: boolean;
  readonly #listener: Server;
  readonly #sessionOpts: MuxConnectionOptions;
  readonly #calls = new SessionCalls<MuxCall>();
  #accepting = true;

  constructor(router: MuxServerHost, cfg: MuxServerConfig) {
    this.router = router;
    this.cfg = cfg;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    this.clearContext = cfg.clearContext;
    this.#sessionOpts = { maxMessageBytes: cfg.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES, maxFrameBytes: cfg.maxFrameBytes, log: router.log };
    const route = [muxRoute((socket, head) => this.#adopt(socket, head))];
    if (cfg.tls !== undefined) {
      const tls: typeof Tls = process.getBuiltinModule('node:tls');
      const secure = tls.createServer(serverTlsOptions(cfg.tls));
      secure.on('connection', (s: Socket) => this.stats.track(s));
      secure.on('secureConnection', (s: Tls.TLSSocket) => this.#accept(s, route));
      secure.on('tlsClientError', noop);
      this.#listener = secure;
    } else {
      this.#listener = createServer((s) => {
        this.stats.track(s);
        this.#accept(s, route);
      });
    }
  }

  #accept(socket: Socket, route: Parameters<typeof routeByFirstBytes>[1]): void {
    socket.setNoDelay(true);
    socket.on('error', noop);
    if (!this.#accepting) {
      socket.destroy();
      return;
    }
    routeByFirstBytes(socket, route);
  }

  #adopt(socket: Socket, head: Buffer): void {
    const session = new MuxServerSession(socket, this.#sessionOpts, this, head);
    this.#calls.adopt(session);
  }

  listen(ip: string, port: number): Promise<ServerAddress> {
    const l = this.#listener;
    return new Promise<ServerAddress>((resolve, reject) => {
      l.once('error', reject);
      l.listen(port, ip, () => {
        l.off('error', reject);
        const a = l.address() as AddressInfo;
        this.stats.bound(a.address, a.port);
        resolve({ ip: a.address, port: a.port });
      });
    });
  }

  /** MuxServerOwner: a request on a session. */
  request(session: MuxServerSession, tag: number, req: MuxInbound): void {
    const call = new MuxCall(this, session, tag, req);
    this.#calls.add(call);
    const max = this.cfg.maxConcurrentRequests;
    const overloaded = max !== undefined && this.stats.inflight >= max ? max : undefined;
    this.stats.begin();
    void call.serve(overloaded);
  }

  /** MuxServerOwner: the client discarded a request. */
  discarded(session: MuxServerSession, tag: number): void {
    this.#calls.discard(session, tag);
  }

  /** MuxServerOwner: a session's connection closed: its requests are abandoned. */
  closed(session: MuxServerSession): void {
    this.#calls.close(session);
  }

  end(call: MuxCall, success: boolean): void {
    this.#calls.end(call);
    const stats = this.stats;
    const up = call.upstream;
    const t = up === undefined ? undefined : readTraceContext(up.contexts);
    if (t !== undefined) {
      const traceId = new TraceId({ ...t, sampled: sampledOf(t.flags) });
      if (stats.tracing(traceId)) {
        stats.trace({ traceId, started: call.started, service: call.dst?.show, client: call.served?.client.id, residual: up?.dst === '' ? '/' : (up?.dst ?? '/'), success });
      }
    }
    stats.end(success, performance.now() - call.started);
  }

  stopAccepting(): void {
    this.#accepting = false;
    this.#listener.close();
    for (const s of this.#calls.sessions()) s.drain();
  }

  closeAll(): void {
    for (const s of this.#calls.sessions()) {
      if (s.inflight > 0) {
        s.destroy();
        continue;
      }
      // Answers just written are flushed before the connection goes.
      s.socket.end();
      setTimeout(() => s.destroy(), CLOSE_GRACE_MS).unref();
    }
  }
}

function noop(): void {}

// Finagle's trace flags: bit 1 says a sampling decision was made, bit 2 what it was (bit 0: debug).
const SAMPLING_KNOWN = 2n;
const SAMPLED = 4n;

function sampledOf(flags: bigint): boolean | undefined {
  return (flags & SAMPLING_KNOWN) === 0n ? undefined : (flags & SAMPLED) !== 0n;
}
