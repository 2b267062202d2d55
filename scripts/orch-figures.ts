// Figures of the io.prx.orch namer, measured on the built `bin/prx` (a child process) against the
// fake orchestrator API server (test/helpers/fake-orch-api.ts, in this process):
//  (a) redeploy → namer: the same in this process, from the event being written to the namer's
//      address set changing (no request in between);
//  (a) redeploy → routing: all endpoints of a service replaced by one watch event while 4 clients
//      loop requests through the proxy; the time from the event being written to the first request
//      arriving at a new backend, and to its response at a client (p50 / p90 / max);
//  (b) 1,000 services: one request to each (each binds one name: one Endpoints watch), the proxy's
//      RSS and the open watches, then with nothing looked up any more, the time until the router's
//      binding cache (idleTtlSecs 60) and the namer (idleTtlMs 5000) have released every watch;
//      and the namer alone in a process of its own (no router, no clients): heap and RSS per name.
//
//   node --import tsx scripts/orch-figures.ts [--redeploys 20] [--services 1000] [--no-build]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { LogRegistry } from '../src/core/log.js';
import { OrchNamer, orchNamerSchema } from '../src/namer/orch.js';
import { type Addr, type BoundName, readPath } from '../src/naming/index.js';
import { ENDPOINTS } from '../src/protocol/orch/index.js';
import { FakeOrchApi } from '../test/helpers/fake-orch-api.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const args = process.argv.slice(2);
const option = (name: string, fallback: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const redeploys = option('--redeploys', 20);
const serviceCount = option('--services', 1000);
const ROUTER_IDLE_SECS = 60;
const NAMER_IDLE_MS = 5000;

if (!args.includes('--no-build') && args[0] !== '--namer-child') {
  spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  spawnSync(process.execPath, [join(root, 'scripts/bundle.mjs')], { stdio: 'inherit', cwd: root });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

async function freePort(): Promise<number> {
  const s = createServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

/** When each backend saw its first request (this process's clock, as the events' times are). */
const firstArrival = new Map<string, number>();

async function backend(name: string): Promise<{ port: number; server: Server }> {
  const server = createServer((req, res) => {
    if (!firstArrival.has(name)) firstArrival.set(name, performance.now());
    req.resume();
    req.on('end', () => res.end(name));
  });
  return { port: await listen(server), server };
}

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return kb / 1024;
}

async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function endpointsOf(name: string, ports: number[]) {
  return { metadata: { name, namespace: 'default' }, subsets: ports.map((port) => ({ addresses: [{ ip: '127.0.0.1' }], ports: [{ name: 'http', port }] })) };
}

const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

// The namer alone in a process of its own (spawned by (b)): its heap and RSS with N names watched.
if (args[0] === '--namer-child') {
  const gc = (globalThis as { gc?: () => void }).gc ?? ((): void => {});
  const namer = new OrchNamer(orchNamerSchema.parse({ kind: 'io.prx.orch', host: '127.0.0.1', port: Number(args[1]) }), readPath('/#/io.prx.orch'),
    new LogRegistry({ destination: { write: () => true } }).get('figures'), 'endpoints');
  const count = Number(args[2]);
  gc();
  const [heap0, rss0] = [process.memoryUsage().heapUsed, process.memoryUsage.rss()];
  let bound = 0;
  for (let i = 0; i < count; i++) {
    namer.lookup(readPath(`/default/http/svc-${i}`)).observe((st) => {
      if (st.kind === 'ok' && st.value.type === 'leaf') (st.value.value as BoundName).addr.observe((a) => { if (a.kind === 'bound') bound++; });
    });
  }
  await until(() => bound >= count, 'every name to bind');
  await sleep(500);
  gc();
  const [heap1, rss1] = [process.memoryUsage().heapUsed, process.memoryUsage.rss()];
  process.stdout.write(`${JSON.stringify({ heapPerName: (heap1 - heap0) / count, rssPerName: (rss1 - rss0) / count, rss: rss1, watches: namer.openWatches })}\n`);
  process.exit(0);
}

const api = await new FakeOrchApi().start();
const [adminPort, routerPort] = [await freePort(), await freePort()];
const dir = mkdtempSync(join(tmpdir(), 'prx-orch-figures-'));
const configFile = join(dir, 'prx.json');
writeFileSync(configFile, JSON.stringify({
  admin: { ip: '127.0.0.1', port: adminPort },
  usage: { enabled: false },
  namers: [{ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port, idleTtlMs: NAMER_IDLE_MS }],
  routers: [{
    protocol: 'http',
    dtab: '/svc => /#/io.prx.orch/default/http',
    bindingCache: { paths: 2000, trees: 2000, bounds: 2000, clients: 2000, idleTtlSecs: ROUTER_IDLE_SECS },
    service: {
      kind: 'io.prx.static',
      configs: [{ prefix: '/svc/*', responseClassifier: { kind: 'io.prx.http.retryableRead5XX' }, retries: { budget: { percentCanRetry: 1 }, backoff: { kind: 'constant', ms: 2 } } }],
    },
    servers: [{ ip: '127.0.0.1', port: routerPort }],
  }],
}));
const proxy = spawn(process.execPath, [join(root, 'bin/prx'), configFile], { stdio: ['ignore', 'ignore', 'inherit'] });
const url = `http://127.0.0.1:${routerPort}/`;
const agent = new Agent({ connections: 16 });
const get = async (host: string): Promise<string> => {
  const r = await request(url, { headers: { host }, dispatcher: agent });
  const body = await r.body.text();
  if (r.statusCode !== 200) throw new Error(`${r.statusCode} ${body}`);
  return body;
};
const backends: Server[] = [];
try {
  await until(async () => (await fetch(`http://127.0.0.1:${adminPort}/admin/ping`).catch(() => undefined))?.ok, 'the proxy to start');
  const rssStart = rssMiB(proxy.pid ?? 0);

  // (a) Redeploys under steady load.
  const deploys = await Promise.all(Array.from({ length: redeploys + 1 }, (_, i) => Promise.all([backend(`d${i}-a`), backend(`d${i}-b`)])));
  for (const d of deploys) backends.push(...d.map((b) => b.server));
  api.put(ENDPOINTS, endpointsOf('users', deploys[0]?.map((b) => b.port) ?? []));
  await until(async () => (await get('users').catch(() => '')).startsWith('d0-'), 'the first deploy');
  let running = true;
  let failures = 0;
  let served = 0;
  let latest = { at: 0, body: '' };
  const loops = [0, 1, 2, 3].map(async () => {
    while (running) {
      try {
        const body = await get('users');
        served++;
        latest = { at: performance.now(), body };
      } catch {
        failures++;
      }
    }
  });
  const latencies: number[] = [];
  const responded: number[] = [];
  for (let i = 1; i <= redeploys; i++) {
    await until(() => api.openWatches(ENDPOINTS) === 1, 'the watch');
    await sleep(100);
    const at = performance.now();
    api.put(ENDPOINTS, endpointsOf('users', deploys[i]?.map((b) => b.port) ?? []));
    await until(() => latest.at > at && latest.body.startsWith(`d${i}-`) && latest, `deploy ${i} to serve`);
    const arrived = Math.min(firstArrival.get(`d${i}-a`) ?? Infinity, firstArrival.get(`d${i}-b`) ?? Infinity);
    latencies.push(arrived - at);
    responded.push(latest.at - at);
  }
  running = false;
  await Promise.all(loops);
  latencies.sort((a, b) => a - b);
  const f = (ms: number): string => `${ms.toFixed(1)} ms`;
  console.log(`(a) redeploy → routing, ${redeploys} redeploys under 4 looping clients (${served} requests, ${failures} failed):`);
  responded.sort((a, b) => a - b);
  console.log(`    event written → first request arriving at the new deploy: p50 ${f(pct(latencies, 50))}, p90 ${f(pct(latencies, 90))}, max ${f(latencies.at(-1) ?? NaN)}`);
  console.log(`    event written → first response from it at a client: p50 ${f(pct(responded, 50))}, p90 ${f(pct(responded, 90))}, max ${f(responded.at(-1) ?? NaN)}`);

  // (a) The namer alone, in this process: event written → address set updated.
  const namer = new OrchNamer(orchNamerSchema.parse({ kind: 'io.prx.orch', host: '127.0.0.1', port: api.port }), readPath('/#/io.prx.orch'),
    new LogRegistry({ destination: { write: () => true } }).get('figures'), 'endpoints');
  api.put(ENDPOINTS, endpointsOf('solo', [1000]));
  let addrAt = 0;
  let addr: Addr | undefined;
  const sub = namer.lookup(readPath('/default/http/solo')).observe((st) => {
    if (st.kind === 'ok' && st.value.type === 'leaf') (st.value.value as BoundName).addr.observe((a) => { addr = a; addrAt = performance.now(); });
  });
  await until(() => addr?.kind === 'bound' && api.openWatches(ENDPOINTS) >= 2, 'the namer to bind');
  const namerLatencies: number[] = [];
  for (let i = 1; i <= redeploys; i++) {
    await sleep(50);
    const at = performance.now();
    api.put(ENDPOINTS, endpointsOf('solo', [1000 + i]));
    await until(() => addr?.kind === 'bound' && addr.addresses[0]?.port === 1000 + i, `namer redeploy ${i}`);
    namerLatencies.push(addrAt - at);
  }
  sub.close();
  namer.close();
  namerLatencies.sort((a, b) => a - b);
  console.log(`(a) redeploy → namer, ${redeploys} redeploys: event written → address set updated: p50 ${f(pct(namerLatencies, 50))}, p90 ${f(pct(namerLatencies, 90))}, max ${f(namerLatencies.at(-1) ?? NaN)}`);

  // (b) 1,000 services.
  const bulk = await backend('bulk');
  backends.push(bulk.server);
  for (let i = 0; i < serviceCount; i++) api.put(ENDPOINTS, endpointsOf(`svc-${i}`, [bulk.port]));
  const rssBefore = rssMiB(proxy.pid ?? 0);
  const started = performance.now();
  for (let i = 0; i < serviceCount; i += 50) {
    await Promise.all(Array.from({ length: Math.min(50, serviceCount - i) }, (_, j) => get(`svc-${i + j}`)));
  }
  const boundMs = performance.now() - started;
  await until(() => api.openWatches(ENDPOINTS) >= serviceCount, 'every watch to open');
  await sleep(500);
  const rssBound = rssMiB(proxy.pid ?? 0);
  const state = await (await fetch(`http://127.0.0.1:${adminPort}/namer_state/io.prx.orch.json`)).json() as { watches: unknown[] };
  console.log(`(b) ${serviceCount} services, one request each (${(boundMs / 1000).toFixed(1)} s, ${(boundMs / serviceCount).toFixed(2)} ms per first request):`);
  console.log(`    open watches at the API server: ${api.openWatches(ENDPOINTS)} (namer_state lists ${state.watches.length})`);
  console.log(`    proxy RSS: ${rssStart.toFixed(1)} MiB at start, ${rssBefore.toFixed(1)} MiB after (a), ${rssBound.toFixed(1)} MiB with ${serviceCount} services bound (+${((rssBound - rssBefore) * 1024 / serviceCount).toFixed(1)} KiB per service incl. its client)`);
  // Spawned, not spawnSync: the fake API server answering it runs in this process.
  const child = spawn(process.execPath, ['--import', 'tsx', '--expose-gc', fileURLToPath(import.meta.url), '--namer-child', String(api.port), String(serviceCount)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  await new Promise((r) => child.once('exit', r));
  const alone = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as { heapPerName: number; rssPerName: number; rss: number; watches: number };
  console.log(`    the namer alone (a process of its own, ${alone.watches} watches): ${(alone.heapPerName / 1024).toFixed(1)} KiB of heap and ${(alone.rssPerName / 1024).toFixed(1)} KiB of RSS per watched name (RSS ${(alone.rss / 1048576).toFixed(1)} MiB)`);
  const idleFrom = performance.now();
  await until(() => api.openWatches(ENDPOINTS) === 0, 'the watches to be released', 120_000);
  const releasedMs = performance.now() - idleFrom;
  console.log(`    nothing looked up any more: every watch released ${(releasedMs / 1000).toFixed(1)} s after the last request (router idleTtlSecs ${ROUTER_IDLE_SECS} + sweep, then namer idleTtlMs ${NAMER_IDLE_MS}); RSS then ${rssMiB(proxy.pid ?? 0).toFixed(1)} MiB`);
} finally {
  proxy.kill('SIGTERM');
  await agent.close();
  for (const b of backends) {
    b.closeAllConnections();
    b.close();
  }
  await api.close();
}
