// The h2 router's basic paths with node:http2 on both sides: routing by :authority, streaming
// bodies and trailers both ways, and the answers to no route and unidentified streams.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { lookupKind, validateProxyConfig } from '../../src/config/index.js';
import { SystemNamer } from '../../src/naming/index.js';
import '../../src/router/h2/index.js';
import type { RouterContext, RunningRouter } from '../../src/router/core/types.js';
import { MetricsRegistry } from '../../src/service/stats/index.js';
import { nullTracer } from '../../src/service/tracing.js';
import { freePort } from './support.js';

interface Started {
  router: RunningRouter;
  registry: MetricsRegistry;
  port: number;
}

async function startH2Router(routerCfg: Record<string, unknown>): Promise<Started> {
  const cfg = validateProxyConfig({ routers: [{ protocol: 'h2', servers: [{ port: await freePort() }], ...routerCfg }] });
  const def = lookupKind('protocol', 'h2');
  assert.ok(def);
  const registry = new MetricsRegistry();
  const ctx: RouterContext = { stats: registry.stats, namers: [], system: new SystemNamer(), tracer: nullTracer, log: pino({ level: process.env['PRX_TEST_LOG'] ?? 'silent' }) };
  const router = (def.create as (c: unknown, x: RouterContext) => RunningRouter)(cfg.routers[0], ctx);
  const [addr] = await router.listen();
  return { router, registry, port: (addr as { port: number }).port };
}

function request(port: number, headers: http2.OutgoingHttpHeaders, body?: Buffer, trailers?: http2.OutgoingHttpHeaders): Promise<{ headers: http2.IncomingHttpHeaders; body: Buffer; trailers: http2.IncomingHttpHeaders | undefined; rst: number | undefined }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', reject);
    const s = session.request(headers, { endStream: body === undefined, waitForTrailers: trailers !== undefined });
    if (trailers !== undefined) s.once('wantTrailers', () => s.sendTrailers(trailers));
    if (body !== undefined) s.end(body);
    let head: http2.IncomingHttpHeaders = {};
    let tr: http2.IncomingHttpHeaders | undefined;
    const chunks: Buffer[] = [];
    s.on('response', (h) => (head = h));
    s.on('trailers', (t: http2.IncomingHttpHeaders) => (tr = t));
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', () => {});
    s.on('close', () => {
      session.close();
      resolve({ headers: head, body: Buffer.concat(chunks), trailers: tr, rst: s.rstCode });
    });
  });
}

describe('h2 router smoke', () => {
  let backend: http2.Http2Server;
  let bport: number;
  let rt: Started;
  const seen: http2.IncomingHttpHeaders[] = [];
  before(async () => {
    backend = http2.createServer();
    backend.on('stream', (stream, headers) => {
      seen.push(headers);
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      let reqTrailers: http2.IncomingHttpHeaders | undefined;
      stream.on('trailers', (t) => (reqTrailers = t));
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'x-backend': 'b1' }, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers({ 'x-trailer': 'done', 'x-req-trailer': String(reqTrailers?.['x-rt'] ?? '-') }));
        stream.end(Buffer.concat([Buffer.from(`${headers[':method']} ${headers[':path']} `), ...chunks]));
      });
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    bport = (backend.address() as AddressInfo).port;
    rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${bport}; /svc/none => /$/nil` });
  });
  after(async () => {
    await rt?.router.close(Date.now() + 500);
    rt?.registry.close();
    await new Promise<void>((r) => backend.close(() => r()));
  });

  it('routes by :authority and streams body and trailers both ways', async () => {
    const r = await request(rt.port, { ':method': 'POST', ':path': '/echo', ':authority': 'web', te: 'trailers' }, Buffer.from('hello'), { 'x-rt': 'up' });
    assert.equal(r.headers[':status'], 200);
    assert.equal(r.body.toString(), 'POST /echo hello');
    assert.equal(r.trailers?.['x-trailer'], 'done');
    assert.equal(r.trailers?.['x-req-trailer'], 'up');
    assert.match(String(r.headers['via']), /^h2 prx/);
    const h = seen.at(-1) as http2.IncomingHttpHeaders;
    assert.equal(h['prx-dst-service'], '/svc/web');
    assert.equal(h['prx-dst-client'], `/$/inet/127.0.0.1/${bport}`);
    assert.match(String(h['via']), /^h2 prx/);
  });

  it('answers no route with 502 and prx-err, and an unidentified stream with REFUSED_STREAM', async () => {
    const r = await request(rt.port, { ':method': 'GET', ':path': '/', ':authority': 'none' });
    assert.equal(r.headers[':status'], 502);
    assert.ok(r.headers['prx-err']);
    const g = await request(rt.port, { ':method': 'POST', ':path': '/x.Y/Z', ':authority': 'none', 'content-type': 'application/grpc' }, Buffer.alloc(5));
    assert.equal(g.headers[':status'], 200);
    assert.equal(g.headers['grpc-status'], '14');
  });

  it('a refused request whose body is still coming completes (the body is let through and dropped)', async () => {
    const requests = (): number => (rt.registry.find(`rt/h2/server/127.0.0.1/${rt.port}/requests`)?.metric as { value?: number } | undefined)?.value ?? 0;
    const before = requests();
    // Refused while routing (no route: 502) and before it (a bad prx-dtab: 400).
    const r = await request(rt.port, { ':method': 'POST', ':path': '/up', ':authority': 'none' }, Buffer.alloc(1 << 20, 1));
    assert.equal(r.headers[':status'], 502);
    const bad = await request(rt.port, { ':method': 'POST', ':path': '/up', ':authority': 'web', 'prx-dtab': '/a=>' }, Buffer.alloc(1 << 20, 1));
    assert.equal(bad.headers[':status'], 400);
    // The server counts the stream when it closes on its side, just after the client's.
    const counted = (): number => requests() - before;
    for (let i = 0; i < 100 && counted() < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(counted(), 2, 'both streams completed');
  });

  it('takes an HTTP/1.1 Upgrade: h2c request as stream 1 (curl --http2)', async () => {
    const { stdout } = await promisify(execFile)('curl', ['-s', '--http2', '-H', 'Host: web', `http://127.0.0.1:${rt.port}/up`], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(stdout, 'GET /up ');
  });
});

describe('h2 access log', () => {
  it('writes one line per stream, with the HTTP/2.0 protocol, to h2AccessLog', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-h2-log-'));
    const backend = http2.createServer((req, res) => res.end('ok'));
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    const bport = (backend.address() as AddressInfo).port;
    const rt = await startH2Router({ dtab: `/svc/web => /$/inet/127.0.0.1/${bport}`, h2AccessLog: join(dir, 'access.log') });
    try {
      const r = await request(rt.port, { ':method': 'GET', ':path': '/logged?x=1', ':authority': 'web', 'user-agent': 'smoke' });
      assert.equal(r.headers[':status'], 200);
    } finally {
      // Closing the router flushes the log.
      await rt.router.close(Date.now() + 500);
      rt.registry.close();
      await new Promise<void>((r) => backend.close(() => r()));
    }
    const lines = readFileSync(join(dir, 'access.log'), 'utf8').trim().split('\n');
    assert.equal(lines.length, 1);
    assert.match(lines[0] as string, /^web 127\.0\.0\.1 - - \[[^\]]+\] "GET \/logged\?x=1 HTTP\/2\.0" 200 - "-" "smoke"$/);
  });
});
