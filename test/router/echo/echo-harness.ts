// Real echo backends and echo routers for tests, on 127.0.0.1: the router is built from a config
// validated by the real schema, with the process's kinds (interpreter, balancers, accrual).
import { createServer, connect, type AddressInfo, type Socket } from 'node:net';
import pino from 'pino';
import { lookupKind, validateProxyConfig } from '../../../src/config/index.js';
import '../../../src/interpreter/default.js';
import { SystemNamer, type MountedNamer } from '../../../src/naming/index.js';
import '../../../src/service/balancer/index.js';
import '../../../src/service/policy/accrual-kinds.js';
import type { RouterContext } from '../../../src/router/core/types.js';
import { MetricsRegistry } from '../../../src/service/stats/index.js';
import { nullTracer } from '../../../src/service/tracing.js';
import { freePort } from '../support.js';
import { echoProtocol, type EchoRouter } from './echo-protocol.js';

/** What a backend does with one request line: answer `OK <name> <payload>`, `ERR boom`, `ERR retryable`; hold it; cut the connection. */
export type EchoAct = 'ok' | 'err' | 'retryable' | 'hang' | 'close';

export interface EchoBackend {
  readonly name: string;
  readonly port: number;
  /** Request lines received, in order. */
  readonly lines: string[];
  /** Connections accepted so far, and those closed. */
  accepted: number;
  disconnects: number;
  /** Answers every held (`hang`) request `OK`. */
  release(): void;
  close(): Promise<void>;
}

/** A backend answering the `n`-th request (from 0) as `script` says (default: always `ok`). */
export async function startEchoBackend(name: string, script: (n: number, payload: string) => EchoAct = () => 'ok'): Promise<EchoBackend> {
  const sockets = new Set<Socket>();
  const held: (() => void)[] = [];
  const b: EchoBackend = {
    name,
    port: 0,
    lines: [],
    accepted: 0,
    disconnects: 0,
    release: () => {
      for (const h of held.splice(0)) h();
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  const server = createServer((socket) => {
    b.accepted++;
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      b.disconnects++;
    });
    socket.on('error', () => {});
    socket.setEncoding('utf8');
    let buf = '';
    socket.on('data', (chunk: string) => {
      const lines = (buf + chunk).split('\n');
      buf = lines.pop() ?? '';
      for (const payload of lines) {
        const act = script(b.lines.length, payload);
        b.lines.push(payload);
        const ok = `OK ${name} ${payload}`;
        if (act === 'ok') socket.write(`${ok}\n`);
        else if (act === 'err') socket.write('ERR boom\n');
        else if (act === 'retryable') socket.write('ERR retryable\n');
        else if (act === 'hang') held.push(() => socket.writable && socket.write(`${ok}\n`));
        else socket.destroy();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(b, { port: (server.address() as AddressInfo).port });
}

/** One client connection to an echo router: lines out, answers back in order. */
export class EchoConn {
  readonly #socket: Socket;
  readonly #waiting: ((line: string) => void)[] = [];
  #buf = '';
  #closed = false;
  constructor(port: number) {
    this.#socket = connect(port, '127.0.0.1');
    this.#socket.setEncoding('utf8');
    this.#socket.on('error', () => {});
    this.#socket.on('data', (chunk: string) => {
      const lines = (this.#buf + chunk).split('\n');
      this.#buf = lines.pop() ?? '';
      for (const l of lines) this.#waiting.shift()?.(l);
    });
    this.#socket.on('close', () => {
      this.#closed = true;
      for (const w of this.#waiting.splice(0)) w('<closed>');
    });
  }
  /** Sends one request line; resolves with its answer (`<closed>` if the connection closed first). */
  send(line: string): Promise<string> {
    if (this.#closed) return Promise.resolve('<closed>');
    const answer = new Promise<string>((resolve) => this.#waiting.push(resolve));
    this.#socket.write(`${line}\n`);
    return answer;
  }
  close(): void {
    this.#socket.destroy();
  }
}

/** Sends one line on a fresh connection and returns its answer. */
export async function echo(port: number, line: string): Promise<string> {
  const c = new EchoConn(port);
  try {
    return await c.send(line);
  } finally {
    c.close();
  }
}

export interface EchoRouterUnderTest {
  readonly router: EchoRouter;
  readonly registry: MetricsRegistry;
  readonly port: number;
  /** A counter's or gauge's value by its flat name. */
  metric(name: string): number | undefined;
  send(line: string): Promise<string>;
  close(deadline?: number): Promise<void>;
}

/** Builds and starts an echo router from a router config object (one server on a free port unless given). */
export async function startEchoRouter(routerCfg: Record<string, unknown>, opts: { namers?: MountedNamer[] } = {}): Promise<EchoRouterUnderTest> {
  const cfg = validateProxyConfig({ routers: [{ protocol: 'echo', servers: [{ port: await freePort() }], ...routerCfg }] });
  if (lookupKind('protocol', 'echo') !== echoProtocol) throw new Error('echo protocol not registered');
  const registry = new MetricsRegistry();
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: opts.namers ?? [],
    system: new SystemNamer(),
    tracer: nullTracer,
    log: pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }),
  };
  const router = echoProtocol.create(cfg.routers[0] as never, ctx) as EchoRouter;
  const port = ((await router.listen())[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    metric: (name) => (registry.find(name)?.metric as { value?: number } | undefined)?.value,
    send: (line) => echo(port, line),
    close: async (deadline = Date.now() + 1000) => {
      await router.close(deadline);
      registry.close();
    },
  };
}
