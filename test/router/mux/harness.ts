// mux peers for the session and router tests, built on prx's own mux sessions (no maintained Node
// mux library exists; the codec under them is pinned by golden frames in mux-codec.test.ts): a
// backend server that records what it received, a client, and an in-process mux router.
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import { lookupKind, validateProxyConfig } from '../../../src/config/index.js';
import { dnsResolver } from '../../../src/namer/dns.js';
import { SystemNamer, type MountedNamer } from '../../../src/naming/index.js';
import { MuxClientSession, type MuxClientSessionOwner, type MuxDispatch } from '../../../src/protocol/mux/client-session.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/protocol/mux/frame.js';
import type { MuxContextEntry, ReplyStatusCode } from '../../../src/protocol/mux/messages.js';
import { MuxServerSession, type MuxInbound, type MuxServerOwner } from '../../../src/protocol/mux/server-session.js';
import type { RouterContext, RunningRouter } from '../../../src/router/core/types.js';
import { MetricsRegistry, type MetricsNode } from '../../../src/service/stats/index.js';
import { nullTracer, type Tracer } from '../../../src/service/tracing.js';
import { freePort } from '../support.js';

export { eventually, freePort } from '../support.js';

export const silent: Logger = pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' });

/** A reply as a client sees it. */
export interface MuxReply {
  readonly status: ReplyStatusCode;
  readonly contexts: MuxContextEntry[];
  readonly body: Buffer;
}

/** One request a backend received. */
export interface Received {
  readonly tag: number;
  readonly req: MuxInbound;
  readonly session: MuxServerSession;
  /** Answers it (once). */
  reply(status: ReplyStatusCode, body: Buffer | string, contexts?: MuxContextEntry[]): void;
}

export interface MuxBackend {
  readonly name: string;
  readonly port: number;
  readonly received: Received[];
  /** Tags the client discarded (Tdiscarded reached this backend). */
  readonly discarded: number[];
  readonly sessions: Set<MuxServerSession>;
  readonly server: Server;
  close(): Promise<void>;
}

/**
 * A mux backend on 127.0.0.1. `handler` answers each request (default: ok, `<name>:<body>`); a
 * handler that does not reply leaves the request in flight.
 */
export async function startMuxBackend(name: string, handler?: (r: Received) => void, opts: { maxFrameBytes?: number } = {}): Promise<MuxBackend> {
  const received: Received[] = [];
  const discarded: number[] = [];
  const sessions = new Set<MuxServerSession>();
  const owner: MuxServerOwner = {
    request(session, tag, req) {
      const r: Received = {
        tag,
        req,
        session,
        reply: (status, body, contexts = []) => session.reply(tag, status, contexts, typeof body === 'string' ? Buffer.from(body) : body),
      };
      received.push(r);
      if (handler !== undefined) handler(r);
      else r.reply(0, Buffer.concat([Buffer.from(`${name}:`), req.msg.body]));
    },
    discarded(_session, tag) {
      discarded.push(tag);
    },
    closed(session) {
      sessions.delete(session);
    },
  };
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    sessions.add(new MuxServerSession(socket, { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, maxFrameBytes: opts.maxFrameBytes, log: silent }, owner));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    name,
    port,
    received,
    discarded,
    sessions,
    server,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A client of one mux session (Finagle's handshake, then dispatches by tag). */
export class MuxTestClient implements MuxClientSessionOwner {
  readonly session: MuxClientSession;
  /** The server drained this session (Tdrain seen). */
  drainedByServer = false;
  closedSocket = false;

  constructor(port: number, opts: { maxFrameBytes?: number; pingIntervalMs?: number; pingTimeoutMs?: number; handshakeTimeoutMs?: number } = {}) {
    const socket = connect({ port, host: '127.0.0.1', noDelay: true });
    this.session = new MuxClientSession(
      socket,
      { maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES, maxFrameBytes: opts.maxFrameBytes, pingIntervalMs: opts.pingIntervalMs ?? 0, pingTimeoutMs: opts.pingTimeoutMs ?? 1000, handshakeTimeoutMs: opts.handshakeTimeoutMs, log: silent },
      this,
    );
  }

  gone(): void {
    this.drainedByServer = true;
  }

  closed(): void {
    this.closedSocket = true;
  }

  /** Sends a Tdispatch; `handler.tag` is its tag once written. */
  call(req: Omit<Partial<MuxDispatch>, 'body'> & { body?: Buffer | string }): { readonly reply: Promise<MuxReply>; readonly handler: { tag: number } } {
    let resolve!: (r: MuxReply) => void;
    let reject!: (e: Error) => void;
    const reply = new Promise<MuxReply>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    reply.catch(() => undefined);
    const handler = {
      tag: 0,
      replied: (status: ReplyStatusCode, contexts: MuxContextEntry[], body: Buffer) => resolve({ status, contexts, body: Buffer.from(body) }),
      failed: (err: Error) => reject(err),
    };
    const body = req.body === undefined ? Buffer.alloc(0) : typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
    this.session.dispatch(handler, { contexts: req.contexts ?? [], dst: req.dst ?? '', dtab: req.dtab ?? [], body });
    return { reply, handler };
  }

  /** Discards a call (Tdiscarded). */
  discard(handler: { tag: number }, why = 'test'): void {
    this.session.discard(handler as never, why);
  }

  close(): void {
    this.session.destroy();
  }
}

export interface MuxRouterUnderTest {
  readonly router: RunningRouter;
  readonly registry: MetricsRegistry;
  readonly port: number;
  metric(name: string): number | undefined;
  /** Every flat metric name under `prefix`. */
  names(prefix: string): string[];
  close(deadlineMs?: number): Promise<void>;
}

/** Builds and starts a mux router; servers without a port get a free one. */
export async function startMuxRouter(routerCfg: Record<string, unknown>, opts: { namers?: MountedNamer[]; log?: Logger; tracer?: Tracer } = {}): Promise<MuxRouterUnderTest> {
  await import('../../../src/router/mux/index.js');
  const servers = (routerCfg['servers'] as Record<string, unknown>[] | undefined) ?? [{}];
  const withPorts = await Promise.all(servers.map(async (s) => ({ port: await freePort(), ...s })));
  const cfg = validateProxyConfig({ routers: [{ protocol: 'mux', ...routerCfg, servers: withPorts }] });
  const def = lookupKind('protocol', 'mux');
  if (!def) throw new Error('mux protocol not registered');
  const registry = new MetricsRegistry();
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: opts.namers ?? [],
    system: new SystemNamer({ resolveHost: dnsResolver() }),
    tracer: opts.tracer ?? nullTracer,
    log: opts.log ?? silent,
  };
  const router = (def.create as (c: unknown, x: RouterContext) => RunningRouter)(cfg.routers[0], ctx);
  const addrs = await router.listen();
  const port = (addrs[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    metric: (name) => (registry.find(name)?.metric as { value?: number } | undefined)?.value,
    names: (prefix) => {
      const out: string[] = [];
      const walk = (node: MetricsNode, at: string): void => {
        if (node.metric !== undefined) out.push(at);
        for (const [seg, child] of node.children) walk(child, `${at}/${seg}`);
      };
      const start = registry.find(prefix);
      if (start !== undefined) walk(start, prefix);
      return out;
    },
    close: async (deadlineMs = 1000) => {
      await router.close(Date.now() + deadlineMs);
      registry.close();
    },
  };
}

/** `/svc/<name> => /$/inet/127.0.0.1/<port>` for each backend. */
export function dtabFor(entries: Record<string, MuxBackend>): string {
  return Object.entries(entries)
    .map(([name, b]) => `/svc/${name} => /$/inet/127.0.0.1/${b.port}`)
    .join(';');
}
