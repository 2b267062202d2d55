/**
 * A small gRPC server (grpc/grpc doc/PROTOCOL-HTTP2.md) on prx's own HTTP/2 server codec, for
 * unary and server-streaming methods: plaintext with prior knowledge or TLS with ALPN `h2`, calls
 * routed by `:path` to registered handlers, HTTP/2 PINGs that drop a client which stops answering,
 * and a graceful close (GOAWAY, then the connections still open are cut after the grace period).
 * It exists for servers of many long-lived calls (the resolver's watches): a connection costs
 * its socket, one prx session and a small frame slab; a call its stream and a {@link GrpcServerCall}.
 */
import type { AddressInfo, Socket } from 'node:net';
import type * as Tls from 'node:tls';
import { GrpcServerCall, type GrpcCallHost, trailersOnly } from './grpc-server-call.js';
import { isGrpcContentType, GrpcStatus, parseGrpcTimeout } from './grpc.js';
import { H2Code } from './errors.js';
import { PlaintextH2Listener } from './plaintext-listener.js';
import { H2ServerSession, type H2ServerSettings, type ServerSessionOwner } from './wire/server-session.js';
import type { H2Fields, H2ServerStream } from './wire/server-stream.js';

export { GrpcServerCall, grpcMessage, type GrpcCallObserver } from './grpc-server-call.js';

/** A method's handler: called once the request message is in; it answers through the call. */
export type GrpcHandler = (call: GrpcServerCall, request: Buffer) => void;

/** Certificate, key and (to require and check client certificates) a CA, as PEM. */
export interface GrpcServerTls {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca?: Buffer | undefined;
}

export interface GrpcServerOptions {
  readonly tls?: GrpcServerTls | undefined;
  /** Largest request message taken; a larger one ends its call with RESOURCE_EXHAUSTED. */
  readonly maxRequestBytes: number;
  /** A PING to each client this long after its last answer (0: none). */
  readonly keepaliveTimeMs: number;
  /** How long a PING may go unanswered before the connection is dropped (its calls cancelled). */
  readonly keepaliveTimeoutMs: number;
}

/** An `Upgrade: h2c` request's limits (gRPC clients use prior knowledge; the listener takes both). */
const UPGRADE_HEAD_BYTES = 16 * 1024;
const UPGRADE_BODY_BYTES = 65_535;

/**
 * What each session announces. The frame slab is small (1 KiB, from node's shared buffer pool): a
 * session holds one, a resolver thousands of sessions whose frames are mostly tens of bytes (the
 * router's 64 KiB slabs suit bulk traffic; a larger frame gets a slab of its size).
 */
const SESSION_SETTINGS: H2ServerSettings = {
  initialWindowBytes: 65_535,
  connectionWindowBytes: 1 << 20,
  maxFrameBytes: 16_384,
  headerTableBytes: 4096,
  maxHeaderListBytes: 64 * 1024,
  windowUpdateRatio: 0.5,
  maxConcurrentStreams: undefined,
  writeSlabBytes: 1024,
};

/** The payload of the keepalive PINGs (an answer carrying another is not ours). */
const KEEPALIVE_PAYLOAD = Buffer.from('prx-ping', 'latin1');

/** A server session with a keepalive: a PING each period; an unanswered one drops the connection. */
class GrpcSession extends H2ServerSession {
  readonly #timeMs: number;
  readonly #timeoutMs: number;
  #timer: NodeJS.Timeout | undefined;
  #awaiting = false;

  constructor(socket: Socket, owner: ServerSessionOwner, timeMs: number, timeoutMs: number) {
    super(socket, SESSION_SETTINGS, owner);
    this.#timeMs = timeMs;
    this.#timeoutMs = timeoutMs;
    if (timeMs > 0) this.#arm(timeMs);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#tick(), ms);
    this.#timer.unref();
  }

  #tick(): void {
    this.#timer = undefined;
    if (this.destroyed) return;
    if (this.#awaiting) {
      // Silent for the whole timeout: a dead peer or a cut link. Its calls end (their watches are released).
      this.destroy();
      return;
    }
    this.#awaiting = true;
    this.sendPing(KEEPALIVE_PAYLOAD);
    this.#arm(this.#timeoutMs);
  }

  protected override pingAcked(payload: Buffer): void {
    if (!this.#awaiting || !payload.equals(KEEPALIVE_PAYLOAD)) return;
    this.#awaiting = false;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#arm(this.#timeMs);
  }

  stopKeepalive(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

export class GrpcServer implements ServerSessionOwner, GrpcCallHost {
  readonly maxRequestBytes: number;
  readonly #options: GrpcServerOptions;
  readonly #handlers = new Map<string, GrpcHandler>();
  readonly #listener: PlaintextH2Listener | Tls.Server;
  readonly #sessions = new Set<GrpcSession>();
  /** Resolves close() once the last session is gone. */
  #allClosed: (() => void) | undefined;
  #calls = 0;

  constructor(options: GrpcServerOptions) {
    this.#options = options;
    this.maxRequestBytes = options.maxRequestBytes;
    const tls = options.tls;
    if (tls === undefined) {
      this.#listener = new PlaintextH2Listener({ emit: (_event, socket) => this.#adopt(socket) }, { maxHeadBytes: UPGRADE_HEAD_BYTES, maxUpgradeBodyBytes: UPGRADE_BODY_BYTES });
      return;
    }
    const tlsModule: typeof Tls = process.getBuiltinModule('node:tls');
    const withCa = tls.ca !== undefined;
    const secure = tlsModule.createServer({
      cert: tls.cert,
      key: tls.key,
      ...(withCa ? { ca: tls.ca } : {}),
      requestCert: withCa,
      rejectUnauthorized: withCa,
      ALPNProtocols: ['h2'],
    });
    secure.on('connection', (s: Socket) => s.setNoDelay(true));
    // A client that does not offer h2 (or whose handshake fails) gets no session.
    secure.on('secureConnection', (s: Tls.TLSSocket) => (s.alpnProtocol === 'h2' ? this.#adopt(s) : s.destroy()));
    secure.on('tlsClientError', noop);
    this.#listener = secure;
  }

  /** Routes calls to `path` (`/package.Service/Method`) to `handler`. */
  handle(path: string, handler: GrpcHandler): void {
    this.#handlers.set(path, handler);
  }

  async listen(ip: string, port: number): Promise<{ ip: string; port: number }> {
    const l = this.#listener;
    if (l instanceof PlaintextH2Listener) {
      const a = await l.listen(ip, port);
      return { ip: a.address, port: a.port };
    }
    const a = await new Promise<AddressInfo>((resolve, reject) => {
      l.once('error', reject);
      l.listen(port, ip, () => {
        l.off('error', reject);
        // A failed accept costs that connection only.
        l.on('error', noop);
        resolve(l.address() as AddressInfo);
      });
    });
    return { ip: a.address, port: a.port };
  }

  /** Client connections open. */
  get connectionCount(): number {
    return this.#sessions.size;
  }

  /** Calls open. */
  get callCount(): number {
    return this.#calls;
  }

  /**
   * Stops accepting and sends every connection GOAWAY (calls in flight go on; the handler is
   * expected to end its long ones); connections still open after `graceMs` are cut. Resolves once
   * every connection is closed.
   */
  async close(graceMs: number): Promise<void> {
    this.#listener.close();
    for (const s of this.#sessions) s.close();
    if (this.#sessions.size === 0) return;
    let timer: NodeJS.Timeout | undefined = undefined;
    await new Promise<void>((resolve) => {
      this.#allClosed = resolve;
      timer = setTimeout(() => {
        for (const s of [...this.#sessions]) s.destroy();
      }, graceMs);
    });
    clearTimeout(timer);
    this.#allClosed = undefined;
  }

  #adopt(socket: Socket): void {
    socket.on('error', noop);
    this.#sessions.add(new GrpcSession(socket, this, this.#options.keepaliveTimeMs, this.#options.keepaliveTimeoutMs));
  }

  // ---- ServerSessionOwner -------------------------------------------------------------------

  closed(session: H2ServerSession): void {
    const s = session as GrpcSession;
    s.stopKeepalive();
    this.#sessions.delete(s);
    if (this.#sessions.size === 0) this.#allClosed?.();
  }

  /**
   * A stream the client opened: a gRPC call if it is a POST of `application/grpc…` (otherwise an
   * HTTP error, as gRPC servers answer them) to a method served here (otherwise UNIMPLEMENTED).
   * A `te` other than `trailers` never gets here (the codec resets it); a missing one is taken, as
   * grpc-go, grpc-java and grpc-js take it.
   */
  stream(stream: H2ServerStream, headers: H2Fields): void {
    if (headers[':method'] !== 'POST') return refuse(stream, { ':status': 405, allow: 'POST' });
    if (!isGrpcContentType(headers['content-type'])) return refuse(stream, { ':status': 415 });
    const path = headers[':path'] as string;
    if (!this.#handlers.has(path)) return refuse(stream, trailersOnly(GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${path}`));
    let timeoutMs: number | undefined = undefined;
    const timeout = headers['grpc-timeout'];
    if (timeout !== undefined) {
      timeoutMs = typeof timeout === 'string' ? parseGrpcTimeout(timeout) : undefined;
      if (timeoutMs === undefined) return refuse(stream, trailersOnly(GrpcStatus.INTERNAL, `Invalid grpc-timeout value "${String(timeout)}"`));
    }
    this.#calls++;
    new GrpcServerCall(this, stream, headers, path, timeoutMs);
  }

  // ---- GrpcCallHost -------------------------------------------------------------------------

  dispatch(call: GrpcServerCall, request: Buffer): void {
    (this.#handlers.get(call.path) as GrpcHandler)(call, request);
  }

  callEnded(): void {
    this.#calls--;
  }
}

/** Answers a stream that is no call with `head` alone; a request still being sent is then reset (NO_ERROR). */
function refuse(stream: H2ServerStream, head: Record<string, string | number>): void {
  stream.respond(head, { endStream: true });
  if (!stream.remoteClosed) stream.close(H2Code.NO_ERROR);
}

function noop(): void {}
