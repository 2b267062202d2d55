// A throwaway second protocol, only for tests: proof that a router is the core plus an adapter.
// Wire: one request per line, `<dst> <payload>\n` (dst: a name or path under dstPrefix); one
// response per line, in order, per connection: `OK <payload>` or `ERR <reason>`. Upstream, the
// router sends `<payload>\n`; a backend's `ERR retryable …` may be retried. The router renders a
// core failure as `ERR <code>[ retryable] <message's first line>`.
// Imports only router/core, service, naming, config and node built-ins (no protocol, no router/http).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { z } from 'zod';
import { routerBaseShape, serverList, serverShape, type RouterConfig } from '../../../src/config/index.js';
import { Dtab, readPath, type Address, type Path } from '../../../src/naming/index.js';
import type { ResponseClass } from '../../../src/service/classifier.js';
import { isSocketConnectFailure } from '../../../src/service/connect-failures.js';
import { FailureFlag, RequestCancelledError, RouterFailure } from '../../../src/service/failures.js';
import type { Lease } from '../../../src/router/core/cache.js';
import { clientParamsOf, RouterPolicies } from '../../../src/router/core/params.js';
import type { PathService } from '../../../src/router/core/path-service.js';
import { RouterBase, type ProtocolServer } from '../../../src/router/core/router-base.js';
import type { ResolvedClient } from '../../../src/router/core/routing.js';
import { ServerStats } from '../../../src/router/core/server-stats.js';
import { AttemptHandle, type ClientProtocol, type Exchange, type Transport } from '../../../src/router/core/transport.js';
import { defineProtocol, type RouterContext, type ServerAddress } from '../../../src/router/core/types.js';

export const ECHO_DEFAULT_PORT = 4190;
const echoServer = z.strictObject({ ...serverShape({ defaultPort: ECHO_DEFAULT_PORT }) });
export const echoRouterSchema = z.strictObject({ ...routerBaseShape(), protocol: z.literal('echo'), servers: serverList(echoServer) });
type EchoRouterConfig = z.output<typeof echoRouterSchema> & RouterConfig;
type EchoServerConfig = z.output<typeof echoServer>;

export interface EchoRequest {
  readonly payload: string;
}
/** The echo transport's settings: a pool of one-request-at-a-time connections, at most `maxConnections`. */
interface EchoTransportOpts {
  readonly maxConnections: number;
}
/** The echo classifier family has one member: `OK` succeeds, `ERR retryable` may be retried. */
type EchoClassifier = 'echo';
const RETRYABLE_ERR = /^ERR (?:\S+ )?retryable\b/;
const MAX_LINE = 64 * 1024;

/** The connection to an endpoint closed before its response line. */
export class EchoUpstreamClosedError extends Error {
  readonly code = 'PRX_ERR_ECHO_UPSTREAM_CLOSED';
  constructor() {
    super('the endpoint closed the connection before answering');
  }
}

/** One request on one upstream connection. */
export class EchoExchange implements Exchange {
  readonly head: Promise<EchoExchange>;
  error: Error | undefined;
  finished = false;
  outcomePending = false;
  headClass: ResponseClass | undefined;
  /** The request reached a connected socket (from then on it is not requeued). */
  written = false;
  line = '';
  conn: EchoConnection | undefined;
  #resolve!: (ex: EchoExchange) => void;
  #reject!: (e: Error) => void;
  readonly #onDone: (ex: EchoExchange) => void;
  constructor(onDone: (ex: EchoExchange) => void) {
    this.#onDone = onDone;
    this.head = new Promise((resolve, reject) => ((this.#resolve = resolve), (this.#reject = reject)));
    this.head.catch(() => {});
  }
  answered(line: string): void {
    if (this.finished) return;
    this.line = line;
    this.finished = true;
    this.#onDone(this);
    this.#resolve(this);
  }
  fail(err: Error): void {
    if (this.finished) return;
    this.error = err;
    this.finished = true;
    this.#onDone(this);
    this.#reject(err);
  }
  /** Its connection cannot be reused: the late response would answer the next request. */
  abort(err: Error): void {
    if (this.finished) return;
    this.fail(err);
    this.conn?.socket.destroy();
  }
  discard(): void {} // the response line is all there is
}

/** One upstream connection: at most one exchange at a time. */
class EchoConnection {
  readonly socket: Socket;
  current: EchoExchange | undefined;
  #buf = '';
  constructor(address: Address, pool: EchoTransport) {
    this.socket = connect(address.port, address.host);
    this.socket.setEncoding('utf8');
    this.socket.on('connect', () => this.current !== undefined && (this.current.written = true));
    this.socket.on('data', (chunk: string) => {
      const buf = (this.#buf += chunk);
      const nl = buf.indexOf('\n');
      const ex = this.current;
      if (nl < 0 && buf.length <= MAX_LINE) return;
      // Too long, a line nobody asked for, or more than one answer: the stream is out of step.
      if (nl < 0 || ex === undefined || nl !== buf.length - 1) return void this.socket.destroy();
      this.#buf = '';
      this.current = undefined;
      ex.answered(buf.slice(0, nl));
      pool.idle(this);
    });
    this.socket.on('error', (err) => this.current?.fail(err));
    this.socket.on('close', () => {
      this.current?.fail(new EchoUpstreamClosedError());
      pool.gone(this);
    });
  }
  send(ex: EchoExchange, payload: string): void {
    this.current = ex;
    ex.conn = this;
    if (!this.socket.connecting) ex.written = true;
    this.socket.write(`${payload}\n`);
  }
}

/** An endpoint's connections: reused one request at a time, opened as needed up to `maxConnections`. */
class EchoTransport implements Transport<EchoRequest, EchoExchange> {
  readonly #address: Address;
  readonly #max: number;
  readonly #all = new Set<EchoConnection>();
  #idle: EchoConnection[] = [];
  #closing = false;
  #onEmpty: (() => void) | undefined;
  constructor(address: Address, opts: EchoTransportOpts) {
    this.#address = address;
    this.#max = opts.maxConnections;
  }
  get connections(): number {
    return this.#all.size;
  }
  saturated(load: number): boolean {
    return load >= this.#max;
  }
  dispatch(req: EchoRequest, onDone: (ex: EchoExchange) => void): EchoExchange {
    const ex = new EchoExchange(onDone);
    let conn = this.#idle.pop();
    while (conn !== undefined && !conn.socket.writable) conn = this.#idle.pop();
    if (conn === undefined) this.#all.add((conn = new EchoConnection(this.#address, this)));
    conn.send(ex, req.payload);
    return ex;
  }
  idle(conn: EchoConnection): void {
    if (this.#closing) conn.socket.end();
    else this.#idle.push(conn);
  }
  gone(conn: EchoConnection): void {
    this.#all.delete(conn);
    this.#idle = this.#idle.filter((c) => c !== conn);
    if (this.#all.size === 0) this.#onEmpty?.();
  }
  close(): Promise<void> {
    this.#closing = true;
    for (const c of this.#idle) c.socket.end();
    if (this.#all.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#onEmpty = resolve));
  }
  destroy(): Promise<void> {
    const closed = this.close();
    for (const c of this.#all) c.socket.destroy();
    return closed;
  }
}

/** The echo protocol for the router core: replay is free (a line), requeue only before connecting. */
class EchoClientProtocol implements ClientProtocol<EchoRequest, EchoExchange, EchoTransportOpts, EchoClassifier> {
  transport(address: Address, opts: EchoTransportOpts): EchoTransport {
    return new EchoTransport(address, opts);
  }
  isReplayable(): boolean {
    return true;
  }
  isTlsFailure(): boolean {
    return false;
  }
  isRequeueable(err: unknown, ex: EchoExchange | undefined): boolean {
    return isSocketConnectFailure(err) && ex?.written !== true;
  }
  classify(_c: EchoClassifier, _req: EchoRequest, ex: EchoExchange): ResponseClass {
    if (ex.line === 'OK' || ex.line.startsWith('OK ')) return 'success';
    return RETRYABLE_ERR.test(ex.line) ? 'retryableFailure' : 'failure';
  }
  classifyFailure(_c: EchoClassifier, _req: EchoRequest, err: Error): ResponseClass {
    return err instanceof RouterFailure && err.is(FailureFlag.Retryable) ? 'retryableFailure' : 'failure';
  }
  endClass(): undefined {
    return undefined;
  }
  responseStats(): { record(): void } {
    return { record() {} };
  }
}
const ECHO_CLIENT = new EchoClientProtocol();

/** A failure as an echo answer: `ERR <code>[ retryable] <first line of the message>`. */
export function renderFailure(err: unknown): string {
  const e = err instanceof Error ? err : new Error(String(err));
  const code = (e as { code?: unknown }).code;
  const retryable = e instanceof RouterFailure && e.is(FailureFlag.Retryable) ? ' retryable' : '';
  return `ERR ${typeof code === 'string' ? code : 'PRX_ERR_ECHO_FAILED'}${retryable} ${e.message.split('\n', 1)[0] ?? ''}`;
}

type EchoPathService = PathService<EchoRequest, EchoExchange, EchoClassifier>;

/** The `echo` router: the core's routing, and echo servers. */
export class EchoRouter extends RouterBase<EchoRequest, EchoExchange, EchoTransportOpts, EchoClassifier, ResolvedClient<EchoTransportOpts>> {
  constructor(cfg: EchoRouterConfig, ctx: RouterContext) {
    const policies = new RouterPolicies(cfg.client, cfg.service);
    super('echo', cfg, ctx, {
      protocol: ECHO_CLIENT,
      params: {
        client(id) {
          const p = policies.client(id);
          return { client: clientParamsOf(p, { maxConnections: p.params.hostConnectionPool.maxSize }), attemptTimeoutMs: p.attemptTimeoutMs };
        },
        service: (dst) => policies.service(dst, (): EchoClassifier => 'echo'),
      },
      prepareAttempt() {},
    });
    for (const s of cfg.servers) this.addServer(s.ip, s.port, new EchoServer(this, s));
  }
  /** A request's logical name: its first token (a name or a path) under `dstPrefix`. */
  dstOf(token: string): Path {
    return this.dstPrefix.concat(readPath(token.startsWith('/') ? token : `/${token}`));
  }
}

/** One accepted connection: its lines, answered one at a time in order. */
interface Inbound {
  readonly socket: Socket;
  readonly lines: string[];
  buf: string;
  busy: boolean;
  handle: AttemptHandle | undefined;
}

class EchoServer implements ProtocolServer {
  readonly #router: EchoRouter;
  readonly stats: ServerStats;
  readonly #server: Server;
  readonly #conns = new Set<Inbound>();
  #closing = false;
  constructor(router: EchoRouter, _cfg: EchoServerConfig) {
    this.#router = router;
    this.stats = new ServerStats(router.stats, router.label, router.tracer);
    this.#server = createServer((s) => this.#accept(s));
  }
  listen(ip: string, port: number): Promise<ServerAddress> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, ip, () => {
        const a = this.#server.address() as { address: string; port: number };
        this.stats.bound(a.address, a.port);
        resolve({ ip: a.address, port: a.port });
      });
    });
  }
  stopAccepting(): void {
    this.#closing = true;
    this.#server.close();
    for (const c of this.#conns) if (!c.busy) c.socket.end();
  }
  closeAll(): void {
    for (const c of this.#conns) c.socket.destroy();
  }
  #accept(socket: Socket): void {
    const c: Inbound = { socket, lines: [], buf: '', busy: false, handle: undefined };
    const stats = this.stats;
    this.#conns.add(c);
    stats.track(socket);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      const lines = (c.buf + chunk).split('\n');
      c.buf = lines.pop() ?? '';
      if (c.buf.length > MAX_LINE) return void socket.destroy();
      c.lines.push(...lines);
      void this.#pump(c);
    });
    socket.once('close', () => {
      this.#conns.delete(c);
      c.lines.length = 0;
      c.handle?.abort(new RequestCancelledError(), true);
    });
  }
  async #pump(c: Inbound): Promise<void> {
    if (c.busy) return;
    c.busy = true;
    for (let line = c.lines.shift(); line !== undefined; line = c.lines.shift()) {
      const answer = await this.#serve(line, c);
      if (c.socket.writable) c.socket.write(`${answer}\n`);
    }
    c.busy = false;
    if (this.#closing) c.socket.end();
  }
  async #serve(line: string, c: Inbound): Promise<string> {
    const stats = this.stats;
    const router = this.#router;
    stats.begin();
    const started = performance.now();
    const sp = line.indexOf(' ');
    const handle = (c.handle = new AttemptHandle());
    let lease: Lease<EchoPathService> | undefined;
    let ok = false;
    let answer: string;
    try {
      lease = router.pathService(router.dstOf(sp < 0 ? line : line.slice(0, sp)), Dtab.empty);
      const served = await lease.value.serve({ payload: sp < 0 ? '' : line.slice(sp + 1) }, handle, Date.now() + router.bindingTimeoutMs, started);
      ok = served.responseClass === 'success';
      lease.value.record(ok, performance.now() - started);
      answer = served.attempt.exchange.line;
    } catch (err) {
      lease?.value.record(false, performance.now() - started, err);
      answer = renderFailure(err);
    } finally {
      lease?.release();
      c.handle = undefined;
    }
    stats.end(ok, performance.now() - started);
    return answer;
  }
}

/** Kind `echo`, registered when a test imports this module. */
export const echoProtocol = defineProtocol({ protocol: 'echo', schema: echoRouterSchema, create: (cfg, ctx) => new EchoRouter(cfg as EchoRouterConfig, ctx) });
