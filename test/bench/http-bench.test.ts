// The proxy benchmark's own parts: bench/prx.yaml (a valid config whose http and h2 routers really
// route through the full router stack), and scripts/bench-http.mjs's report and profile renderers
// and option checks.
// The benchmark itself (minutes of load) runs with `npm run bench`, not here.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import * as http2 from 'node:http2';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadProxyConfig } from '../../src/config/index.js';
import '../../src/cli/builtins.js';
import { spawnCli } from '../helpers/run-cli.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(REPO, 'scripts', 'bench-http.mjs');
const BODY = 'a'.repeat(64);

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs scripts/bench-http.mjs with `args` and collects its output. */
function bench(args: readonly string[], env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { cwd: REPO, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

function get(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** One raw request/response over a fresh socket (for requests node's client cannot send). */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (c: string) => (got += c));
    s.on('end', () => resolve(got));
    s.on('error', reject);
  });
}

describe('bench/prx.yaml', () => {
  it('is a valid config with the full router stack on', async () => {
    const cfg = await loadProxyConfig(join(REPO, 'bench', 'prx.yaml'));
    const r = cfg.routers[0] as unknown as Record<string, unknown> & { servers: { port: number; ip: string }[] };
    assert.equal(cfg.routers.length, 2);
    assert.equal(r['protocol'], 'http');
    assert.deepEqual(r['identifier'], [{ kind: 'io.prx.static', path: '/bench' }]);
    assert.match(String(r['dtab']), /^\/svc\/bench=>\/\$\/inet\/127\.0\.0\.1\/28080$/);
    assert.deepEqual(r.servers.map((s) => [s.ip, s.port]), [['127.0.0.1', 4140]]);
    const service = r['service'] as Record<string, unknown>;
    assert.equal((service['responseClassifier'] as { kind: string }).kind, 'io.prx.http.retryableRead5XX');
    assert.ok((service['retries'] as { budget: unknown }).budget);
    const client = r['client'] as Record<string, { kind: string }>;
    assert.equal(client['failureAccrual']?.kind, 'io.prx.consecutiveFailures');
    assert.equal(client['loadBalancer']?.kind, 'p2c');
    assert.equal(r['httpAccessLog'], undefined, 'no per-request logging in the benchmark');
  });

  it('has an h2 router with the same stack, on 4142, to the harness\'s h2c upstream (base port + 1)', async () => {
    const cfg = await loadProxyConfig(join(REPO, 'bench', 'prx.yaml'));
    const r = cfg.routers[1] as unknown as Record<string, unknown> & { servers: { port: number; ip: string }[] };
    assert.equal(r['protocol'], 'h2');
    assert.equal(r['label'], 'bench-h2');
    assert.equal((r['identifier'] as { kind: string }[])[0]?.kind, 'io.prx.header.token');
    assert.match(String(r['dtab']), /^\/svc\/\*=>\/\$\/inet\/127\.0\.0\.1\/28081$/);
    assert.deepEqual(r.servers.map((s) => [s.ip, s.port]), [['127.0.0.1', 4142]]);
    const service = r['service'] as Record<string, unknown>;
    assert.equal((service['responseClassifier'] as { kind: string }).kind, 'io.prx.h2.retryableRead5XX');
    assert.ok((service['retries'] as { budget: unknown }).budget);
    const client = r['client'] as Record<string, { kind: string }>;
    assert.equal(client['failureAccrual']?.kind, 'io.prx.consecutiveFailures');
    assert.equal(client['loadBalancer']?.kind, 'p2c');
    assert.equal(r['h2AccessLog'], undefined, 'no per-request logging in the benchmark');
  });
});

/** An h2c (prior knowledge) server answering every request with BODY, on `port`, or null if it is taken. */
async function h2cBackend(port: number, seen: { authority: string | undefined }[]): Promise<http2.Http2Server | null> {
  const server = http2.createServer((req, res) => {
    seen.push({ authority: req.headers[':authority'] });
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(BODY);
  });
  return new Promise((resolve) => {
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

/** GET / over h2c prior knowledge, as h2load sends it (:authority 127.0.0.1:<port>). */
function h2Get(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.once('error', reject);
    const req = session.request({ ':path': '/' });
    let body = '';
    let status = 0;
    req.setEncoding('utf8');
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      session.close();
      resolve({ status, body });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('prx on the bench config (ports rendered by --render-config)', () => {
  let dir: string;
  let backend: Server;
  let h2Backend: http2.Http2Server | undefined;
  let backendPort: number;
  let proxyPort: number;
  let h2ProxyPort: number;
  let adminPort: number;
  let prx: ReturnType<typeof spawnCli> | undefined;
  const seen: { method: string | undefined; host: string | undefined }[] = [];
  const seenH2: { authority: string | undefined }[] = [];
  let failNextGet = false;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'prx-bench-'));
    backend = createServer((req, res) => {
      seen.push({ method: req.method, host: req.headers.host });
      req.resume();
      if (failNextGet && req.method === 'GET') {
        failNextGet = false;
        res.writeHead(503).end('busy');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(BODY);
    });
    // The harness's h2c upstream listens one port above its HTTP/1.1 one: find such a pair.
    for (let tries = 0; tries < 20 && h2Backend === undefined; tries++) {
      await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
      backendPort = (backend.address() as AddressInfo).port;
      const h2 = await h2cBackend(backendPort + 1, seenH2);
      if (h2 !== null) h2Backend = h2;
      else await new Promise<void>((r) => backend.close(() => r()));
    }
    assert.ok(h2Backend, 'no free pair of adjacent ports');
    proxyPort = await freePort();
    h2ProxyPort = await freePort();
    adminPort = await freePort();
    const cfg = join(dir, 'prx.yaml');
    const r = await bench([
      '--render-config', cfg, '--base-port', String(backendPort), '--proxy-port', String(proxyPort),
      '--proxy-h2-port', String(h2ProxyPort), '--admin-port', String(adminPort),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(cfg, 'utf8');
    assert.match(text, new RegExp(`/\\$/inet/127\\.0\\.0\\.1/${backendPort};`));
    assert.match(text, new RegExp(`/svc/\\* => /\\$/inet/127\\.0\\.0\\.1/${backendPort + 1};`));
    assert.match(text, new RegExp(`port: ${h2ProxyPort}\\n`));
    assert.match(text, /full router stack/, 'comments are kept');
    prx = spawnCli('prx', [cfg]);
    await prx.logLine((l) => l['msg'] === 'prx started');
  });

  after(async () => {
    if (prx !== undefined) {
      prx.child.kill('SIGTERM');
      await prx.exited;
    }
    await new Promise<void>((r) => {
      backend.closeAllConnections();
      backend.close(() => r());
    });
    await new Promise<void>((r) => (h2Backend ? h2Backend.close(() => r()) : r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('routes an h2c GET / as h2load sends it to the h2c upstream, whatever the :authority port', async () => {
    const r = await h2Get(h2ProxyPort);
    assert.equal(r.status, 200);
    assert.equal(r.body, BODY);
    assert.equal(seenH2.at(-1)?.authority, `127.0.0.1:${h2ProxyPort}`);
  });

  it('routes a request with any Host to the upstream', async () => {
    const r = await get(proxyPort, '/', { host: 'whatever.example' });
    assert.equal(r.status, 200);
    assert.equal(r.body, BODY);
    assert.equal(seen.at(-1)?.host, 'whatever.example');
  });

  it('routes an HTTP/1.0 request without a Host header', async () => {
    const response = await raw(proxyPort, 'GET / HTTP/1.0\r\n\r\n');
    assert.match(response, /^HTTP\/1\.[01] 200 /);
    assert.ok(response.endsWith(BODY), response);
  });

  it('retries a 503 on GET (retryable classifier and retries are on) and counts it', async () => {
    failNextGet = true;
    const before = seen.length;
    const r = await get(proxyPort, '/');
    assert.equal(r.status, 200);
    assert.equal(r.body, BODY);
    assert.equal(seen.length - before, 2, 'one failed attempt, one retry');
    const metrics = JSON.parse((await get(adminPort, '/admin/metrics.json')).body) as Record<string, number>;
    assert.ok((metrics['rt/bench/service/svc/bench/retries/total'] ?? 0) >= 1, JSON.stringify(metrics));
  });
});

/** A results.json in the harness's shape (lib/report.js), only the fields the report reads. */
function harnessResults(rows: { target: string; conns: number; rps: number; p99: number; cpuUs?: number; rssKb?: number; section?: 'h1' | 'h2' }[]) {
  return {
    meta: {
      date_utc: '2026-01-02T03:04:05Z', nproc: 2, cpu_model: 'Test CPU', kernel: '6.1', mem_total_kb: 4 * 1048576, loadavg_start: '0.1 0.1 0.1',
      pinning: { enabled: true, loadgen_cpu: 0, upstream_cpu: 0, proxy_cpu: 1 },
      params: { duration_s: 10, warmup_s: 2, rounds: 3, upstream: 'nginx', body_bytes: 64, h2_conns: '16', h2_streams: 8 },
      versions: { node: 'v20', nginx: 'nginx/1.22', haproxy: 'HAProxy 2.6', h2load: 'h2load nghttp2/1.52.0', npm_packages: { 'http-proxy': '1.18.1' } },
      candidate: { name: 'prx', cmd: 'exec node bin/prx bench/prx.yaml', port: '4140', h2_port: '4142' },
    },
    skipped: [],
    results: rows.map((r) => ({
      target: r.target, section: r.section ?? 'h1', conns: r.conns, streams: r.section === 'h2' ? 8 : 1, rounds: 3, rounds_ok: 3, rounds_clean: 2,
      rps: r.rps, rps_min: r.rps * 0.9, rps_max: r.rps * 1.1,
      lat_us: { p50: 500, p99: r.p99, p999: r.p99 * 2 }, errors_total: 0,
      proxy_cpu_pct: r.target === 'direct' ? null : 90, proxy_cpu_us_per_req: r.cpuUs ?? null,
      proxy_rss_kb: r.rssKb ?? null, proxy_hwm_kb: r.rssKb ?? null, bound: 'proxy CPU',
    })),
  };
}

describe('bench-http --report', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'prx-bench-report-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the table, prx’s ratios and the targets, checked', async () => {
    const results = harnessResults([
      { target: 'direct', conns: 16, rps: 100000, p99: 400 },
      { target: 'nginx', conns: 16, rps: 50000, p99: 800 },
      { target: 'node-http-proxy', conns: 16, rps: 10000, p99: 4000 },
      { target: 'candidate', conns: 16, rps: 25000, p99: 1000, cpuUs: 35, rssKb: 50000 },
      { target: 'direct', conns: 128, rps: 100000, p99: 2000 },
      { target: 'node-http-proxy', conns: 128, rps: 12000, p99: 20000 },
      { target: 'candidate', conns: 128, rps: 20000, p99: 9000, cpuUs: 45, rssKb: 70000 },
    ]);
    writeFileSync(join(dir, 'results.json'), JSON.stringify(results));
    const md = join(dir, 'latest.md');
    const r = await bench(['--report', dir, '--md', md]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(md, 'utf8');
    assert.match(text, /\| \*\*prx\*\* \| 16 \| 25,000 \(22,500–27,500\) \| 0\.50 \| 1\.00 \| 2\.00 \| 0 \| 35 \| 90 \| 48\.8 \| 2\/3 \| proxy CPU \|/);
    assert.match(text, /\| 16 \| 0\.25× \| 0\.50× \| – \| 2\.50× \| – \| 2\.50× \| 1\.25× \| – \| 0\.25× \| – \|/);
    assert.match(text, /\| rps ≥ 2× node-http-proxy at 16 conns \| 2\.50× \| yes \|/);
    assert.match(text, /\| rps ≥ 2× node-http-proxy at 128 conns \| 1\.67× \| no \|/);
    assert.match(text, /\| CPU ≤ 40 µs\/request at 128 conns \| 45\.0 µs \| no \|/);
    assert.match(text, /\| p99 ≤ 1\.5 ms at 16 conns \| 1\.00 ms \| yes \|/);
    assert.match(text, /\| RSS ≤ 60 MB under load at 128 conns \(peak\) \| 71\.7 MB \| no \|/);
    assert.ok(text.includes(`Harness results (results.md, results.json, raw runs): \`${dir}\``));
    assert.match(text, /Machine: 2 CPU\(s\), Test CPU, kernel 6\.1, 4 GiB RAM/);
  });

  it('renders the --workers row: requests per proxy CPU-second with N workers against one process', async () => {
    const report: string = '../../bench/lib/report.mjs';
    const { workersSection } = (await import(report)) as { workersSection: (a: unknown, b: unknown, n: number) => string };
    const one = harnessResults([{ target: 'candidate', conns: 16, rps: 40000, p99: 1000, cpuUs: 25 }]);
    const two = harnessResults([{ target: 'candidate', conns: 16, rps: 38000, p99: 1200, cpuUs: 26, rssKb: 200000 }]);
    const text = workersSection(one, two, 2);
    assert.match(text, /^## prx with `workers: 2` \(HTTP\/1\.1\)/);
    // 1e6 / 25 µs = 40,000 per CPU-second; 1e6 / 26 = 38,462; their ratio 0.96.
    assert.match(text, /\| 16 \| 40,000 \| 40,000 \| 38,000 \| 38,462 \| 1\.20 \| 195\.3 \| 0\.96× \|/);
  });

  it('writes the h2c section next to the HTTP/1.1 one: table, ratios, issue #17’s targets checked', async () => {
    const results = harnessResults([
      { target: 'direct', conns: 16, rps: 100000, p99: 400 },
      { target: 'candidate', conns: 16, rps: 25000, p99: 1000, cpuUs: 35, rssKb: 50000 },
      { target: 'direct', conns: 16, rps: 120000, p99: 2000, section: 'h2' },
      { target: 'haproxy', conns: 16, rps: 90000, p99: 3000, cpuUs: 11, section: 'h2' },
      { target: 'fastify-h2c', conns: 16, rps: 9000, p99: 40000, cpuUs: 110, section: 'h2' },
      { target: 'candidate', conns: 16, rps: 36000, p99: 8000, cpuUs: 27.5, rssKb: 80000, section: 'h2' },
    ]);
    writeFileSync(join(dir, 'results.json'), JSON.stringify(results));
    const md = join(dir, 'h2.md');
    const r = await bench(['--report', dir, '--md', md]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(md, 'utf8');
    assert.match(text, /\| \*\*prx\*\* \| 16 \| 25,000 /, 'the HTTP/1.1 rows are still there');
    const h2 = text.slice(text.indexOf('## HTTP/2 cleartext'));
    assert.ok(h2.length > 0 && text.indexOf('## HTTP/2 cleartext') > text.indexOf('## Targets (issue #4)'), text);
    assert.match(h2, /\| \*\*prx\*\* \| 16×8 \| 36,000 \(32,400–39,600\) \| 0\.50 \| 8\.00 \| 16\.0 \| 0 \| 28 \| 90 \| 78\.1 \| 2\/3 \| proxy CPU \|/);
    assert.match(h2, /\| fastify-h2c \| 16×8 \| 9,000 /);
    // peers: direct, nginx (absent), haproxy, fastify-h2c
    assert.match(h2, /\| 16 \| 0\.30× \| – \| 0\.40× \| 4\.00× \| 4\.00× \| – \| 2\.67× \| 0\.20× \|/);
    assert.match(h2, /\| rps ≥ 3× fastify-h2c at 16×8 \| 4\.00× \| yes \|/);
    assert.match(h2, /\| rps ≥ 0\.35× haproxy at 16×8 \| 0\.40× \| yes \|/);
    assert.match(h2, /\| p99 ≤ 10 ms at 16×8 \| 8\.00 ms \| yes \|/);
    assert.match(h2, /\| CPU per request at 16×8 \(reported; haproxy 11, fastify-h2c 110 µs\) \| 27\.5 µs \| – \|/);
    assert.match(text, /h2c load: h2load \(h2load nghttp2\/1\.52\.0\), 1 thread, prior knowledge, 16 connection\(s\) × 8 streams/);
    assert.match(text, /on port 4140 \(h2c: 4142\)/);
  });

  it('writes the h2c section alone (--sections h2), and says so when prx has no h2c row', async () => {
    const rows = [
      { target: 'direct', conns: 16, rps: 120000, p99: 2000, section: 'h2' as const },
      { target: 'haproxy', conns: 16, rps: 90000, p99: 3000, section: 'h2' as const },
    ];
    writeFileSync(join(dir, 'results.json'), JSON.stringify(harnessResults(rows)));
    const md = join(dir, 'h2-only.md');
    const r = await bench(['--report', dir, '--md', md]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(md, 'utf8');
    assert.doesNotMatch(text, /Targets \(issue #4\)/);
    assert.doesNotMatch(text, /- Load: wrk/, 'no HTTP/1.1 load was run');
    assert.match(text, /- h2c load: h2load/);
    assert.match(text, /\| haproxy \| 16×8 \| 90,000 /);
    assert.match(text, /\*\*prx was not measured in the h2c section\*\*/);
    assert.doesNotMatch(text, /Targets \(issue #17/);
  });

  it('says so when prx was not measured', async () => {
    const results = { ...harnessResults([{ target: 'direct', conns: 16, rps: 1000, p99: 400 }]), skipped: ['candidate'] };
    writeFileSync(join(dir, 'results.json'), JSON.stringify(results));
    const md = join(dir, 'skipped.md');
    const r = await bench(['--report', dir, '--md', md]);
    assert.equal(r.code, 0, r.stderr);
    const text = readFileSync(md, 'utf8');
    assert.match(text, /\*\*Skipped\*\* \(failed to start or to proxy correctly\): candidate/);
    assert.match(text, /\*\*prx was not measured\*\*/);
    assert.doesNotMatch(text, /Targets/);
  });

  it('fails on a folder without results.json, and on results without any rows', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'prx-bench-empty-'));
    try {
      const r = await bench(['--report', empty, '--md', join(empty, 'x.md')]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /results\.json/);
      writeFileSync(join(empty, 'results.json'), JSON.stringify({ meta: {}, results: [] }));
      const r2 = await bench(['--report', empty, '--md', join(empty, 'x.md')]);
      assert.equal(r2.code, 1);
      assert.match(r2.stderr, /no measurements/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('bench-http --analyze', () => {
  it('ranks functions by self time weighted by time deltas and charges native time to its caller', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'prx-bench-prof-'));
    try {
      const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber, columnNumber: 0, scriptId: '0' });
      const profile = {
        nodes: [
          { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 5] },
          { id: 2, callFrame: frame('handle', 'file:///app/handler.js', 9), children: [4, 6] },
          { id: 3, callFrame: frame('(idle)', ''), children: [] },
          { id: 4, callFrame: frame('writev', ''), children: [] },
          { id: 5, callFrame: frame('(garbage collector)', ''), children: [] },
          { id: 6, callFrame: frame('write', 'node:net', 3), children: [7] },
          { id: 7, callFrame: frame('writeLatin1String', ''), children: [] },
        ],
        // handle: 1 sample of 1 ms; writev: 2 of 3 ms each; idle: 10 ms; GC 2 ms;
        // writeLatin1String (under node:net, under handle): 4 ms. Many short handle samples
        // must not outrank fewer long ones: 1 ms in 1 sample vs writev's 6 ms in 2.
        samples: [2, 4, 4, 3, 5, 7],
        timeDeltas: [1000, 3000, 3000, 10000, 2000, 4000],
        startTime: 0,
        endTime: 23000,
      };
      const file = join(dir, 'p.cpuprofile');
      writeFileSync(file, JSON.stringify(profile));
      const r = await bench(['--analyze', file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /Busy 0\.01 s, idle 0\.01 s/);
      const rows = r.stdout.split('\n').filter((l) => /^\| \d+ \|/.test(l));
      assert.deepEqual(rows.map((l) => l.split('|')[2]?.trim()), ['`writev`', '`writeLatin1String`', '`(garbage collector)`', '`handle`']);
      assert.match(rows[0] ?? '', /\| 6 \| 46\.2 \|$/); // 6 of 13 busy ms
      assert.match(r.stdout, /\| `writeLatin1String` \| `handle` \| `[^`]*app\/handler\.js:10` \| 4 \| 30\.8 \|/);
      writeFileSync(file, JSON.stringify({ ...profile, timeDeltas: [1000] }));
      const bad = await bench(['--analyze', file]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /malformed profile: 6 samples but 1 time deltas/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('bench-http options', () => {
  it('skips, successfully, when the harness is absent', async () => {
    const r = await bench([], { PRX_BENCH_HARNESS: join(tmpdir(), 'no-such-harness-here') });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /no harness at .*no-such-harness-here.*skipped/);
  });

  it('rejects unknown options and malformed numbers with exit 2', async () => {
    for (const args of [
      ['--bogus'], ['--rounds', '0'], ['--duration', 'ten'], ['--conns', '16 x'], ['--base-port', '80'],
      ['--h2-conns', '0'], ['--proxy-h2-port', '80'], ['--sections', 'h3'], ['--sections', ''],
    ]) {
      const r = await bench(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^bench-http: /);
    }
  });
});
