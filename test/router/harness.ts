// Starts real http routers in-process for tests: config validated by the real schema, real sockets.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type Logger } from 'pino';
import { lookupKind, validateProxyConfig } from '../../src/config/index.js';
import { SystemNamer, type MountedNamer } from '../../src/naming/index.js';
import '../../src/router/http/index.js';
import type { HttpRouter } from '../../src/router/http/router.js';
import type { RouterContext } from '../../src/router/core/types.js';
import { MetricsRegistry, type MetricsNode } from '../../src/service/stats/index.js';
import { nullTracer } from '../../src/service/tracing.js';
import { decodeChunked, freePort } from './support.js';

export { eventually, freePort, mount, pendingNamer, tempFsNamer, type TempFsNamer } from './support.js';

export interface Backend {
  readonly server: Server;
  readonly port: number;
  readonly requests: IncomingMessage[];
  close(): Promise<void>;
}

/** A real backend on 127.0.0.1; `handler` answers (default: 200 with its name). */
export async function startBackend(name: string, handler?: (req: IncomingMessage, res: ServerResponse) => void): Promise<Backend> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    if (handler) return handler(req, res);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain', 'x-backend': name });
      res.end(name);
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
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface RouterUnderTest {
  readonly router: HttpRouter;
  readonly registry: MetricsRegistry;
  readonly port: number;
  readonly url: string;
  metric(name: string): number | undefined;
  close(): Promise<void>;
}

/** Builds and starts an http router from a router config object (servers default to port 0). */
export async function startRouter(routerCfg: Record<string, unknown>, opts: { namers?: MountedNamer[]; log?: Logger } = {}): Promise<RouterUnderTest> {
  const cfg = validateProxyConfig({
    routers: [{ protocol: 'http', servers: [{ port: await freePort() }], ...routerCfg }],
  });
  const rc = cfg.routers[0] as unknown as { protocol: string };
  const def = lookupKind('protocol', 'http');
  if (!def) throw new Error('http protocol not registered');
  const registry = new MetricsRegistry();
  const ctx: RouterContext = {
    stats: registry.stats,
    namers: opts.namers ?? [],
    system: new SystemNamer(),
    tracer: nullTracer,
    log: opts.log ?? pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }),
  };
  const router = (def.create as (c: unknown, x: RouterContext) => HttpRouter)(rc, ctx);
  const addrs = await router.listen();
  const port = (addrs[0] as { port: number }).port;
  return {
    router,
    registry,
    port,
    url: `http://127.0.0.1:${port}`,
    metric: (name) => {
      const node = registry.find(name);
      const m = node?.metric as { value?: number } | undefined;
      return m?.value;
    },
    close: async () => {
      await router.close(Date.now() + 1000);
      registry.close();
    },
  };
}

/** A histogram's count of values in the current interval (the `metric` accessor reads counters and gauges). */
export function histogramCount(rt: RouterUnderTest, name: string): number | undefined {
  const m = rt.registry.find(name)?.metric;
  return m?.kind === 'histogram' ? m.count : undefined;
}

/** Every flat metric name under `prefix` (for asserting on what exists and what was pruned). */
export function metricNames(rt: RouterUnderTest, prefix: string): string[] {
  const out: string[] = [];
  const walk = (node: MetricsNode, at: string): void => {
    if (node.metric !== undefined) out.push(at);
    for (const [seg, child] of node.children) walk(child, at === '' ? seg : `${at}/${seg}`);
  };
  const start = rt.registry.find(prefix);
  if (start !== undefined) walk(start, prefix);
  return out;
}

/** The parsed response of {@link rawExchange}. */
export interface RawResponse {
  readonly status: number;
  readonly head: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * Writes `bytes` on a fresh TCP connection and reads until the server closes it or a complete
 * response (by content-length) arrived. For requests a normal client refuses to send.
 */
export function rawExchange(port: number, bytes: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (): void => {
      if (done) return;
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) {
        done = true;
        sock.destroy();
        reject(new Error(`no complete response head: ${JSON.stringify(text)}`));
        return;
      }
      const head = text.slice(0, split);
      const lines = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of lines.slice(1)) {
        const c = l.indexOf(':');
        headers[l.slice(0, c).trim().toLowerCase()] = l.slice(c + 1).trim();
      }
      let body = text.slice(split + 4);
      if (headers['transfer-encoding'] === 'chunked') {
        const decoded = decodeChunked(body, false);
        if (decoded === undefined && !sock.destroyed && !sock.readableEnded) return;
        body = decoded ?? body;
      }
      const len = headers['content-length'];
      if (len !== undefined && Buffer.byteLength(body, 'latin1') < Number(len) && !sock.destroyed && !sock.readableEnded) return;
      done = true;
      sock.destroy();
      resolve({ status: Number((lines[0] ?? '').split(' ')[1]), head, headers, body });
    };
    sock.on('data', (c: Buffer) => {
      chunks.push(c);
      finish();
    });
    sock.on('end', finish);
    sock.on('close', finish);
    sock.on('error', (e) => {
      if (!done && chunks.length > 0) finish();
      else if (!done) {
        done = true;
        reject(e);
      }
    });
    sock.write(bytes);
  });
}

/** A test CA with a server certificate for 127.0.0.1/localhost and a client certificate, made with openssl. */
export interface TestCerts {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
}

export function makeCerts(): TestCerts {
  const dir = mkdtempSync(join(tmpdir(), 'prx-tls-'));
  const p = (f: string): string => join(dir, f);
  const ssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=prx test ca', '-keyout', 'ca.key', '-out', 'ca.crt');
  writeFileSync(p('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', 'server.key', '-out', 'server.csr');
  ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'server.ext', '-out', 'server.crt');
  writeFileSync(p('client.ext'), 'subjectAltName=URI:spiffe://prx.test/client,DNS:client.prx.test\n');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=prx client', '-keyout', 'client.key', '-out', 'client.csr');
  ssl('x509', '-req', '-in', 'client.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'client.ext', '-out', 'client.crt');
  return { dir, caCert: p('ca.crt'), serverCert: p('server.crt'), serverKey: p('server.key'), clientCert: p('client.crt'), clientKey: p('client.key') };
}
