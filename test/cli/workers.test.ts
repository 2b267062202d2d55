// `workers: 2`: bin/prx as built (the bundle, as operators run it) with a primary and two worker
// processes, proxying to a backend run by the test. Metrics summed over the workers, admin views
// answering as one proxy, a worker killed under load, the drain on SIGTERM, config errors reported
// by the primary before any worker starts.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { freePort, startSlowBackend } from '../helpers/local-servers.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(REPO, 'bin', 'prx');
const dir = mkdtempSync(join(tmpdir(), 'prx-workers-'));

let backend: { readonly port: number; close(): void };
let backendPort = 0;
before(async () => {
  assert.ok(existsSync(join(REPO, 'dist', 'bundle', 'prx.js')), 'these tests run bin/prx as built: run `npm run build` first');
  backend = await startSlowBackend();
  backendPort = backend.port;
});
after(() => {
  backend.close();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

interface Prx {
  readonly child: ChildProcess;
  readonly admin: string;
  readonly routerPort: number;
  readonly exited: Promise<number | string>;
  readonly stdout: () => string;
  readonly stderr: () => string;
}

/** A config of one retryable http router to the backend, with `workers` and the admin keys given. */
function config(adminPort: number, routerPort: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    workers: 2,
    admin: { port: adminPort, shutdownGraceMs: 8000 },
    routers: [
      {
        protocol: 'http',
        label: 'http',
        dtab: `/svc => /$/inet/127.0.0.1/${backendPort}`,
        service: { kind: 'io.prx.global', responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } },
        servers: [{ port: routerPort }],
      },
    ],
    ...extra,
  };
}

function spawnPrx(cfg: Record<string, unknown>): { child: ChildProcess; exited: Promise<number | string>; stdout: () => string; stderr: () => string } {
  const path = join(dir, `cfg-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify(cfg));
  const child = spawn(BIN, [path], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, exited, stdout: () => out, stderr: () => err };
}

async function startPrx(extra: Record<string, unknown> = {}): Promise<Prx> {
  const adminPort = await freePort();
  const routerPort = await freePort();
  const run = spawnPrx(config(adminPort, routerPort, extra));
  let ended = false;
  void run.exited.then(() => (ended = true));
  await until('prx started', () => {
    if (ended) throw new Error(`prx exited before starting:\n${run.stdout()}\n${run.stderr()}`);
    return run.stdout().includes('"msg":"prx started"') ? true : undefined;
  });
  return { ...run, admin: `http://127.0.0.1:${adminPort}`, routerPort };
}

async function stop(prx: Prx): Promise<void> {
  prx.child.kill('SIGTERM');
  await prx.exited;
}

async function json(url: string, init?: RequestInit): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  assert.equal(res.status, 200, `${url}: ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

/** A GET on a fresh connection: its status and body, or the error that ended it. */
function get(port: number, path: string, agent: http.Agent | false = false): Promise<{ status?: number; body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
  });
}

interface WorkerRow {
  worker: number;
  pid: number | null;
  state: string;
  restarts: number;
}

async function workers(prx: Prx): Promise<WorkerRow[]> {
  return (await json(`${prx.admin}/admin/workers.json`))['workers'] as WorkerRow[];
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const serverScope = (prx: Prx): string => `rt/http/server/127.0.0.1/${prx.routerPort}`;

/** GETs on fresh connections, 20 at a time, until every worker has served at least one; returns how many were sent. */
async function spreadOverWorkers(prx: Prx): Promise<number> {
  let sent = 0;
  await until('both workers to serve a request', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => get(prx.routerPort, '/')));
    sent += results.length;
    for (const r of results) assert.equal(r.body, 'backend ok', JSON.stringify(r));
    const counts = await Promise.all([1, 2].map(async (w) => (await json(`${prx.admin}/admin/metrics.json?worker=${w}`))[`${serverScope(prx)}/requests`]));
    return counts.every((c) => typeof c === 'number' && c > 0) ? true : undefined;
  });
  return sent;
}

describe('prx with workers: 2', () => {
  test('config errors are reported once by the primary, before any worker starts', async () => {
    const adminPort = await freePort();
    const bad = config(adminPort, 70000);
    const run = spawnPrx(bad);
    assert.equal(await run.exited, 1);
    const lines = run.stderr().split('\n').filter((l) => l.includes('routers[0].servers[0].port'));
    assert.equal(lines.length, 1, run.stderr());
    assert.ok(!run.stdout().includes('worker'), `no worker started: ${run.stdout()}`);

    for (const workersValue of [0, 'many', 1.5, 300]) {
      const r = spawnPrx({ ...config(adminPort, await freePort()), workers: workersValue });
      assert.equal(await r.exited, 1);
      assert.match(r.stderr(), /workers: expected a number of workers from 1 to 256, or "auto"/);
    }
  });

  test('a port in use fails the start once, with every worker gone', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const run = spawnPrx(config(await freePort(), port));
      assert.equal(await run.exited, 1);
      const cannot = run.stderr().split('\n').filter((l) => l.startsWith('prx: cannot start'));
      assert.equal(cannot.length, 1, run.stderr());
      assert.match(cannot[0] ?? '', /EADDRINUSE|in use/);
    } finally {
      taken.close();
    }
  });

  test('metrics are the sum over the workers, with each worker alone under ?worker=<n>', async () => {
    const prx = await startPrx();
    try {
      const sent = await spreadOverWorkers(prx);
      const key = `${serverScope(prx)}/requests`;
      const merged = await json(`${prx.admin}/admin/metrics.json`);
      const one = await json(`${prx.admin}/admin/metrics.json?worker=1`);
      const two = await json(`${prx.admin}/admin/metrics.json?worker=2`);
      assert.equal(merged[key], sent);
      assert.equal((one[key] as number) + (two[key] as number), sent);
      // Histograms merged bucket by bucket: every request's latency is in the merged count.
      assert.equal(merged[`${serverScope(prx)}/request_latency_ms.count`], sent);
      // Additive gauges summed, per-balancer ones not: both workers balance over the same one endpoint.
      const rss = merged['process/mem/rss'] as number;
      assert.ok(rss >= (one['process/mem/rss'] as number) + (two['process/mem/rss'] as number) - 64 * 1024 * 1024);
      assert.ok(typeof merged['primary/process/mem/rss'] === 'number', 'the primary reports its own process gauges');
      const lbSize = Object.entries(merged).find(([k]) => k.endsWith('/loadbalancer/size'));
      assert.equal(lbSize?.[1], 1, 'loadbalancer/size is the largest over the workers, not their sum');
      // Prometheus and the dashboard's summary read the same merge.
      const prom = await (await fetch(`${prx.admin}/admin/metrics/prometheus`)).text();
      const line = prom.split('\n').find((l) => l.startsWith('rt:server:requests{'));
      assert.equal(Number(line?.split(' ')[1]), sent, line);
      const summary = await json(`${prx.admin}/admin/summary.json`);
      assert.equal((summary['routerValues'] as number[][])[0]?.[0], sent);
      assert.ok(((summary['process'] as { rss: number }).rss) > rss, 'the dashboard counts every process\'s memory');
      const missing = await fetch(`${prx.admin}/admin/metrics.json?worker=3`);
      assert.equal(missing.status, 404);
    } finally {
      await stop(prx);
    }
  });

  test('admin views answer as one proxy, and log level changes reach every worker (restarted ones too)', async () => {
    const prx = await startPrx();
    try {
      const delegation = await json(`${prx.admin}/delegator.json?namespace=http&path=/svc/x`);
      assert.deepEqual(delegation, await json(`${prx.admin}/admin/workers/2/delegator.json?namespace=http&path=/svc/x`));
      assert.match(JSON.stringify(delegation), new RegExp(`"port":${backendPort}`));
      const registry = await json(`${prx.admin}/admin/registry.json`);
      assert.ok(JSON.stringify(registry).includes(`"port":${prx.routerPort}`), 'the registry lists the router\'s server');
      assert.equal((await json(`${prx.admin}/admin/lint.json`))['issues'], 0);
      assert.equal((await fetch(`${prx.admin}/admin/workers/9/admin/ping`)).status, 404);

      const set = await fetch(`${prx.admin}/logging.json?logger=prx.router&level=DEBUG`, { method: 'POST' });
      assert.equal(set.status, 200);
      const levelIn = async (path: string): Promise<unknown> =>
        ((await (await fetch(`${prx.admin}${path}`)).json()) as { logger: string; level: string }[]).find((l) => l.logger === 'prx.router')?.level;
      assert.equal(await levelIn('/logging.json'), 'DEBUG');
      assert.equal(await levelIn('/admin/workers/1/logging.json'), 'DEBUG');
      assert.equal(await levelIn('/admin/workers/2/logging.json'), 'DEBUG');

      const [, second] = await workers(prx);
      assert.ok(second?.pid);
      process.kill(second.pid, 'SIGKILL');
      const back = await until('worker 2 to be restarted', async () => {
        const row = (await workers(prx))[1];
        return row?.state === 'ready' && row.pid !== second.pid ? row : undefined;
      });
      assert.equal(back.restarts, 1);
      assert.equal(await levelIn('/admin/workers/2/logging.json'), 'DEBUG', 'a restarted worker starts with the levels set at run time');
    } finally {
      await stop(prx);
    }
  });

  test('a worker killed under load: zero failed requests on a retryable route, and it is restarted', async () => {
    const prx = await startPrx();
    try {
      const [first] = await workers(prx);
      assert.ok(first?.pid);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
      let stopLoad = false;
      let ok = 0;
      let failed = 0;
      let retried = 0;
      // A client of a retryable route: a GET whose connection broke before any response is sent
      // again on a fresh connection (RFC 9110 §9.2.2), as browsers and most HTTP clients do.
      const loop = async (): Promise<void> => {
        while (!stopLoad) {
          let r = await get(prx.routerPort, '/', agent);
          if (r.error !== undefined) {
            retried++;
            r = await get(prx.routerPort, '/');
          }
          if (r.status === 200 && r.body === 'backend ok') ok++;
          else failed++;
        }
      };
      const loops = Array.from({ length: 8 }, () => loop());
      await until('load to flow', () => (ok > 200 ? true : undefined));
      process.kill(first.pid, 'SIGKILL');
      const back = await until('worker 1 to be restarted', async () => {
        const row = (await workers(prx))[0];
        return row?.state === 'ready' && row.pid !== first.pid ? row : undefined;
      });
      const before = ok;
      await until('load to flow through the restarted proxy', () => (ok > before + 200 ? true : undefined));
      stopLoad = true;
      await Promise.all(loops);
      agent.destroy();
      assert.equal(failed, 0, `${failed} requests failed (${ok} succeeded, ${retried} retried)`);
      // Only connections of the killed worker broke: at most the 8 pooled ones, each once, and
      // any the primary was handing to it as it died.
      assert.ok(retried <= 16, `${retried} requests retried`);
      assert.equal(back.restarts, 1);
      assert.match(prx.stdout(), /"msg":"worker 1 exited on SIGKILL; restarting it in 250 ms"/);
      assert.ok(!alive(first.pid));
    } finally {
      await stop(prx);
    }
  });

  test('SIGTERM drains every worker: in-flight requests on each finish, then every process exits 0', async () => {
    const prx = await startPrx();
    const pids = (await workers(prx)).map((w) => w.pid as number);
    const pendingIn = async (w: number): Promise<number> =>
      ((await json(`${prx.admin}/admin/metrics.json?worker=${w}`))[`${serverScope(prx)}/pending`] as number | undefined) ?? 0;
    const slow: Promise<{ body?: string; error?: string }>[] = [];
    // Slow requests on fresh connections until both workers hold one in flight.
    await until('a slow request in flight on each worker', async () => {
      for (let i = 0; i < 4; i++) slow.push(get(prx.routerPort, '/slow?ms=2500'));
      await sleep(200);
      return (await pendingIn(1)) > 0 && (await pendingIn(2)) > 0 ? true : undefined;
    }, 20_000);
    const t0 = Date.now();
    prx.child.kill('SIGTERM');
    await until('the router port to refuse connections', async () => {
      const accepted = await new Promise<boolean>((resolve) => {
        const s = connect(prx.routerPort, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
      return accepted ? undefined : true;
    }, 5000);
    const results = await Promise.all(slow);
    for (const r of results) assert.deepEqual(r, { status: 200, body: 'slow done' });
    assert.equal(await prx.exited, 0, prx.stderr());
    assert.ok(Date.now() - t0 < 8000, 'within the grace period');
    for (const pid of pids) assert.ok(!alive(pid), `worker ${pid} exited`);
    const completes = prx.stdout().split('\n').filter((l) => l.includes('"msg":"shutdown complete"'));
    assert.equal(completes.length, 3, 'both workers and the primary completed their shutdown');
  });
});
