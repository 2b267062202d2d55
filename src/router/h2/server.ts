import type { AddressInfo, Socket } from 'node:net';
import type * as Tls from 'node:tls';
import { PlaintextH2Listener } from '../../protocol/h2/plaintext-listener.js';
import { GrpcStatusCounters, ResetCounters } from '../../protocol/h2/stats.js';
import { readGrpcStatus } from '../../protocol/h2/grpc.js';
import { serverSessionSettings } from '../../protocol/h2/settings.js';
import { H2Code } from '../../protocol/h2/errors.js';
import { H2ServerSession, type H2ServerSettings, type ServerSessionOwner } from '../../protocol/h2/wire/server-session.js';
import type { H2Fields, H2ServerStream } from '../../protocol/h2/wire/server-stream.js';
import { StatusCodeCounters } from '../../service/stats/index.js';
import { serverTlsOptions } from '../../service/tls-settings.js';
import type { ProtocolServer } from '../core/router-base.js';
import { ServerStats } from '../core/server-stats.js';
import type { ServerAddress } from '../core/types.js';
import { H2Call, type H2ServerView } from './call.js';
import type { H2ServerConfig } from './schema.js';
import type { H2RouterHost } from './types.js';

/** An `Upgrade: h2c` request's head and body limits (its body must fit the initial h2 window). */
const UPGRADE_HEAD_BYTES = 16 * 1024;
const UPGRADE_BODY_BYTES = 65_535;

/** Per-server response stats, made once the server knows its address. */
interface BoundStats {
  readonly statuses: StatusCodeCounters;
  readonly grpc: GrpcStatusCounters;
  readonly resets: ResetCounters;
}

/**
 * One server of an h2 router: an HTTP/2 listener (TLS with ALPN `h2`, or plaintext prior
 * knowledge and h2c upgrades) whose sockets become prx's own server sessions and whose streams
 * become {@link H2Call}s. Sessions are tracked so a drain sends GOAWAY and lets streams in flight
 * finish.
 */
export class H2ServerHandler implements ProtocolServer, H2ServerView, ServerSessionOwner {
  readonly router: H2RouterHost;
  readonly cfg: H2ServerConfig;
  readonly stats: ServerStats;
  readonly tls: boolean;
  readonly via: string;
  readonly #settings: H2ServerSettings;
  readonly #listener: PlaintextH2Listener | Tls.Server;
  readonly #sessions = new Set<H2ServerSession>();
  #bound: BoundStats | undefined;
  #streams = 0;

  constructor(router: H2RouterHost, cfg: H2ServerConfig) {
    this.router = router;
    this.cfg = cfg;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    this.tls = cfg.tls !== undefined;
    this.via = router.via.entry('h2');
    this.#settings = serverSessionSettings(cfg);
    if (cfg.tls !== undefined) {
      const tls: typeof Tls = process.getBuiltinModule('node:tls');
      const secure = tls.createServer({ ...serverTlsOptions(cfg.tls), ALPNProtocols: ['h2'] });
      secure.on('connection', (s: Socket) => {
        s.setNoDelay(true);
        this.stats.track(s);
      });
      // A client that offers no h2 (or a failed handshake) gets no session.
      secure.on('secureConnection', (s: Tls.TLSSocket) => (s.alpnProtocol === 'h2' ? this.#adopt(s) : s.destroy()));
      secure.on('tlsClientError', noop);
      this.#listener = secure;
    } else {
      this.#listener = new PlaintextH2Listener({ emit: (_event, socket) => this.#adopt(socket) }, { maxHeadBytes: UPGRADE_HEAD_BYTES, maxUpgradeBodyBytes: UPGRADE_BODY_BYTES, onSocket: (s) => this.stats.track(s) });
    }
  }

  #adopt(socket: Socket): void {
    socket.on('error', noop);
    this.#sessions.add(new H2ServerSession(socket, this.#settings, this));
  }

  /** ServerSessionOwner: a session's socket closed. */
  closed(session: H2ServerSession): void {
    this.#sessions.delete(session);
  }

  async listen(ip: string, port: number): Promise<ServerAddress> {
    const l = this.#listener;
    const a = l instanceof PlaintextH2Listener ? await l.listen(ip, port) : await listenSecure(l, ip, port);
    const scope = this.stats.bound(a.address, a.port);
    this.#bound = { statuses: new StatusCodeCounters(scope), grpc: new GrpcStatusCounters(scope), resets: new ResetCounters(scope) };
    scope.gauge(['streams'], () => this.#streams);
    return { ip: a.address, port: a.port };
  }

  stopAccepting(): void {
    this.#listener.close();
    // GOAWAY: clients open no new streams here; streams in flight finish.
    for (const s of this.#sessions) if (!s.closed) s.close();
  }

  closeAll(): void {
    for (const s of this.#sessions) s.destroy();
  }

  /** ServerSessionOwner: a stream the client opened with a well-formed head. */
  stream(stream: H2ServerStream, headers: H2Fields, flags: number): void {
    const call = new H2Call(this, stream, headers, flags);
    this.#streams++;
    const max = this.cfg.maxConcurrentRequests;
    const overloaded = max !== undefined && this.stats.inflight >= max;
    this.stats.begin();
    void call.serve(overloaded);
  }

  end(call: H2Call, status: number, success: boolean): void {
    this.#streams--;
    const stats = this.stats;
    const b = this.#bound;
    if (b !== undefined) {
      if (status > 0) b.statuses.record(status);
      const ex = call.served?.attempt.exchange;
      const g = ex === undefined ? (call.grpc && status === 200 ? readGrpcStatus(call.stream.sentHeaders) : undefined) : ex.grpcStatus;
      if (g !== undefined) {
        b.grpc.record(g);
        if (call.service !== undefined) this.router.serviceGrpc(call.service).record(g);
      }
      const rst = call.stream.rstCode;
      if (rst !== undefined && rst !== H2Code.NO_ERROR) b.resets.record(rst);
    }
    const traceId = call.traceId;
    if (stats.tracing(traceId)) {
      stats.trace({
        traceId,
        started: call.started,
        service: call.dst?.show,
        client: call.served?.client.id,
        residual: '/',
        success,
        extra: [{ kind: 'binary', key: 'http.status', value: status }],
      });
    }
    const log = this.router.accessLog;
    if (log !== undefined) {
      const h = call.headers;
      log.log({
        host: typeof h[':authority'] === 'string' ? h[':authority'] : '-',
        remoteHost: call.remoteAddress ?? '-',
        time: Date.now(),
        method: (h[':method']) ?? '-',
        uri: (h[':path']) ?? '-',
        protocol: 'HTTP/2.0',
        status,
        bytes: '-',
        ...(typeof h['referer'] === 'string' ? { referer: h['referer'] } : {}),
        ...(typeof h['user-agent'] === 'string' ? { userAgent: h['user-agent'] } : {}),
      });
    }
    stats.end(success, performance.now() - call.started);
  }
}

function noop(): void {}

function listenSecure(l: Tls.Server, ip: string, port: number): Promise<AddressInfo> {
  return new Promise<AddressInfo>((resolve, reject) => {
    l.once('error', reject);
    l.listen(port, ip, () => {
      l.off('error', reject);
      resolve(l.address() as AddressInfo);
    });
  });
}
