// Starts real h2 routers in-process for the h2/gRPC end-to-end tests: config validated by the real
// schema, real sockets, real node:http2 and @grpc/grpc-js peers on 127.0.0.1.
//
// PRX_H2_DIRECT=1 replaces the router by a plain TCP pipe to the first `/$/inet/127.1/<port>` of
// the router's dtab: a check on the tests themselves (the backend side of every test works, and
// every test of what prx adds fails without prx).
import { createHash, type Hash } from 'node:crypto';
import * as http2 from 'node:http2';
import { createServer as createTcpServer, connect, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import pino, { type Logger } from 'pino';
import { lookupKind, validateProxyConfig } from '../../../src/config/index.js';
import { dnsResolver } from '../../../src/namer/dns.js';
import { SystemNamer, type MountedNamer } from '../../../src/naming/index.js';
import type { RouterContext, RunningRouter } from '../../../src/router/core/types.js';
import { MetricsRegistry } from '../../../src/service/stats/index.js';
import { nullTracer } from '../../../src/service/tracing.js';
import { freePort } from '../support.js';

export { makeCerts, type TestCerts } from '../harness.js';
export { eventually, freePort } from '../support.js';

export const DIRECT = process.env['PRX_H2_DIRECT'] === '1';

export interface H2RouterUnderTest {
  readonly router: RunningRouter | undefined;
  readonly registry: MetricsRegistry;
  readonly port: number;
  /** `127.0.0.1:<port>`, a gRPC target. */
  readonly target: string;
  metric(name: string): number | undefined;
  close(): Promise<void>;
}

/**
 * Builds and starts an h2 router from a router config object. Servers without a port get a free
 * one (the schema, like Linkerd's, refuses port 0).
 */
export async function startH2Router(routerCfg: Record<string, unknown>, opts: { namers?: MountedNamer[]; log?: Logger } = {}): Promise<H2RouterUnderTest> {
  const servers = (routerCfg['servers'] as Record<string, unknown>[] | undefined) ?? [{}];
  const withPorts = await Promise.all(servers.map(async (s) => ({ port: await freePort(), ...s })));
  const registry = new MetricsRegistry();
  if (DIRECT) return directPipe(typeof routerCfg['dtab'] === 'string' ? routerCfg['dtab'] : '', registry);
  await import('../../../src/router/h2/index.js');
  const cfg = validateProxyConfig({ routers: [{ protocol: 'h2', ...routerCfg, servers: withPorts }] });
  const def = lookupKind('protocol', 'h2');
  if (!def) throw new Error('h2 protocol not registered');
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: opts.namers ?? [],
    // As the proxy process builds it: `/$/inet/127.1/<port>` resolves like any host name.
    system: new SystemNamer({ resolveHost: dnsResolver() }),
    tracer: nullTracer,
    log: opts.log ?? pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }),
  };
  const router = (def.create as (c: unknown, x: RouterContext) => RunningRouter)(cfg.routers[0], ctx);
  const addrs = await router.listen();
  const port = (addrs[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    target: `127.0.0.1:${port}`,
    metric: (name) => (registry.find(name)?.metric as { value?: number } | undefined)?.value,
    close: async () => {
      await router.close(Date.now() + 1000);
      registry.close();
    },
  };
}

async function directPipe(dtab: string, registry: MetricsRegistry): Promise<H2RouterUnderTest> {
  const m = /\/\$\/inet\/127\.(?:0\.0\.)?1\/(\d+)/.exec(dtab);
  const to = m ? Number(m[1]) : 1;
  const socks = new Set<Socket>();
  const server: TcpServer = createTcpServer((down) => {
    const up = connect(to, '127.0.0.1');
    for (const s of [down, up]) {
      socks.add(s);
      s.on('error', () => {
        down.destroy();
        up.destroy();
      });
      s.on('close', () => socks.delete(s));
    }
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    router: undefined,
    registry,
    port,
    target: `127.0.0.1:${port}`,
    metric: () => undefined,
    close: async () => {
      for (const s of socks) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      registry.close();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// gRPC: a `test.Echo` service with one method per call shape, messages as raw bytes.

const id = (b: Buffer): Buffer => b;
function method(name: string, requestStream: boolean, responseStream: boolean): grpc.MethodDefinition<Buffer, Buffer> {
  return {
    path: `/test.Echo/${name}`,
    requestStream,
    responseStream,
    requestSerialize: id,
    requestDeserialize: id,
    responseSerialize: id,
    responseDeserialize: id,
  };
}

/** Say: unary; Stream: server-streaming; Collect: client-streaming; Chat: bidi. */
export const echoService = {
  Say: method('Say', false, false),
  Stream: method('Stream', false, true),
  Collect: method('Collect', true, false),
  Chat: method('Chat', true, true),
} satisfies grpc.ServiceDefinition;

export interface EchoClient extends grpc.Client {
  Say(req: Buffer, md: grpc.Metadata, opts: grpc.CallOptions, cb: grpc.requestCallback<Buffer>): grpc.ClientUnaryCall;
  Stream(req: Buffer, md: grpc.Metadata, opts?: grpc.CallOptions): grpc.ClientReadableStream<Buffer>;
  Collect(md: grpc.Metadata, opts: grpc.CallOptions, cb: grpc.requestCallback<Buffer>): grpc.ClientWritableStream<Buffer>;
  Chat(md: grpc.Metadata, opts?: grpc.CallOptions): grpc.ClientDuplexStream<Buffer, Buffer>;
}

const EchoClientCtor = grpc.makeGenericClientConstructor(echoService, 'test.Echo');

/** Large enough for the 8 MiB tests (grpc-js defaults to 4 MiB received). */
const MAX_MESSAGE = 32 * 1024 * 1024;

/** A gRPC client for `test.Echo` at `target` (plaintext); grpc-js's own retries off, so retries seen are prx's. */
export function echoClient(target: string): EchoClient {
  return new EchoClientCtor(target, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': MAX_MESSAGE,
    'grpc.max_send_message_length': MAX_MESSAGE,
    'grpc.enable_retries': 0,
  }) as unknown as EchoClient;
}

/** A unary Say call as a promise of the response or the ServiceError. */
export function say(client: EchoClient, req: Buffer, opts: grpc.CallOptions = {}, md = new grpc.Metadata()): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.Say(req, md, opts, (err, res) => (err ? reject(err) : resolve(res ?? Buffer.alloc(0))));
  });
}

/** The ServiceError a promise rejects with (fails if it resolves). */
export async function grpcError(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (e) {
    return e as grpc.ServiceError;
  }
  throw new Error('the call succeeded; expected a gRPC error');
}

export interface GrpcBackend {
  readonly server: grpc.Server;
  readonly port: number;
  /** Every call's method and request metadata, in arrival order. */
  readonly calls: { method: string; metadata: grpc.Metadata; deadline: grpc.Deadline }[];
  close(): Promise<void>;
}

/** A real grpc-js server for `test.Echo` on 127.0.0.1; methods not in `impl` answer UNIMPLEMENTED. */
export async function startGrpcBackend(impl: Partial<Record<keyof typeof echoService, grpc.UntypedHandleCall>>): Promise<GrpcBackend> {
  const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_MESSAGE, 'grpc.max_send_message_length': MAX_MESSAGE });
  const calls: GrpcBackend['calls'] = [];
  const recorded: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(impl)) {
    recorded[name] = ((call: { metadata: grpc.Metadata; getDeadline(): grpc.Deadline }, ...rest: unknown[]) => {
      calls.push({ method: name, metadata: call.metadata, deadline: call.getDeadline() });
      (handler as (...a: unknown[]) => void)(call, ...rest);
    }) as grpc.UntypedHandleCall;
  }
  server.addService(echoService, recorded);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return { server, port, calls, close: () => closeGrpcServer(server) };
}

function closeGrpcServer(server: grpc.Server): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, 500);
    server.tryShutdown(() => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** The router config for gRPC: routes `/test.Echo/<m>` to `/svc/test.Echo`, bound to `dst` (default: the backend). */
export function grpcRouterConfig(dst: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { dtab: `/svc/test.Echo => ${dst}`, identifier: { kind: 'io.prx.header.path', segments: 1 }, ...extra };
}

// ---------------------------------------------------------------------------------------------
// Raw node:http2 peers.

export interface H2Backend {
  readonly server: http2.Http2Server;
  readonly port: number;
  /** Every request's headers, in arrival order. */
  readonly requests: http2.IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** A plaintext (prior-knowledge) h2 backend; `onStream` answers (default: 200 `ok` after the request ends). */
export async function startH2Backend(onStream?: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => void): Promise<H2Backend> {
  const server = http2.createServer();
  const requests: http2.IncomingHttpHeaders[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    requests.push(headers);
    stream.on('error', () => {});
    if (onStream) return onStream(stream, headers);
    stream.resume();
    stream.on('end', () => {
      if (!stream.closed) stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    requests,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sessions) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A client session to `127.0.0.1:<port>` (prior-knowledge h2c unless `url` says https). */
export function h2Connect(port: number, opts: http2.SecureClientSessionOptions & { scheme?: 'http' | 'https' } = {}): http2.ClientHttp2Session {
  const s = http2.connect(`${opts.scheme ?? 'http'}://127.0.0.1:${port}`, opts);
  s.on('error', () => {});
  return s;
}

/** What a client saw of one stream. */
export interface H2Exchange {
  readonly headers: http2.IncomingHttpHeaders | undefined;
  readonly body: Buffer;
  readonly trailers: http2.IncomingHttpHeaders | undefined;
  /** RST_STREAM code when the stream was reset (0 for a clean end). */
  readonly rstCode: number;
}

/** Sends a request with `body` and ends it. */
export function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: string | Buffer = ''): { stream: http2.ClientHttp2Stream; done: Promise<H2Exchange> } {
  const stream = session.request(headers);
  const done = collect(stream);
  // end('') would send an empty DATA frame after the HEADERS; node then drops response data that
  // arrived before a reset, so an empty body ends the stream on the HEADERS frame.
  if (body.length === 0) stream.end();
  else stream.end(body);
  return { stream, done };
}

/** Collects what arrives on a client stream until it closes. */
export function collect(stream: http2.ClientHttp2Stream): Promise<H2Exchange> {
  return new Promise((resolve) => {
    let head: http2.IncomingHttpHeaders | undefined;
    let trailers: http2.IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (head = h));
    stream.on('trailers', (t: http2.IncomingHttpHeaders) => (trailers = t));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('error', () => {});
    stream.on('close', () => resolve({ headers: head, body: Buffer.concat(chunks), trailers, rstCode: stream.rstCode ?? 0 }));
  });
}

/** Resolves with a server stream's RST_STREAM code once it closes (0: ended cleanly). */
export function closedWith(stream: http2.Http2Stream): Promise<number> {
  if (stream.closed) return Promise.resolve(stream.rstCode ?? 0);
  return new Promise((r) => stream.on('close', () => r(stream.rstCode ?? 0)));
}

/** Deterministic pseudo-random bytes, generated chunk by chunk (never the whole body in memory), hashed as produced. */
export class PatternSource {
  private x: number;
  readonly hash: Hash = createHash('sha256');
  constructor(seed: number) {
    this.x = seed >>> 0 || 1;
  }
  next(size: number): Buffer {
    const b = Buffer.allocUnsafe(size);
    let x = this.x;
    for (let i = 0; i + 4 <= size; i += 4) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      b.writeInt32LE(x | 0, i);
    }
    for (let i = size - (size % 4); i < size; i++) b[i] = i & 0xff;
    this.x = x;
    this.hash.update(b);
    return b;
  }
}

/** Writes `total` bytes of `src` to `w` in `chunk`-sized pieces, honouring back-pressure, then ends it. */
export async function writePattern(w: NodeJS.WritableStream & { destroyed?: boolean }, src: PatternSource, total: number, chunk = 64 * 1024): Promise<void> {
  for (let sent = 0; sent < total; ) {
    if (w.destroyed) throw new Error(`stream destroyed after ${sent} bytes`);
    const n = Math.min(chunk, total - sent);
    sent += n;
    if (!w.write(src.next(n))) {
      await new Promise<void>((resolve, reject) => {
        const onDrain = (): void => {
          w.removeListener('close', onClose);
          resolve();
        };
        const onClose = (): void => {
          w.removeListener('drain', onDrain);
          reject(new Error(`stream closed after ${sent} bytes`));
        };
        w.once('drain', onDrain);
        w.once('close', onClose);
      });
    }
  }
  w.end();
}

/** Hashes and counts what a readable delivers until it ends. */
export function hashReadable(r: NodeJS.ReadableStream): Promise<{ bytes: number; sha: string }> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    let bytes = 0;
    r.on('data', (c: Buffer) => {
      h.update(c);
      bytes += c.length;
    });
    r.on('end', () => resolve({ bytes, sha: h.digest('hex') }));
    r.on('error', reject);
  });
}
