// `bin/prx` as a process, proxying HTTP to a backend run by the test: start-up, graceful drain on
// SIGTERM/SIGINT and POST /admin/shutdown, the grace deadline, a second signal, start-up failures.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { freePort, startSlowBackend } from '../helpers/local-servers.js';
import { spawnCli, type SpawnedCli } from '../helpers/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'prx-life-'));
const REPO = fileURLToPath(new URL('../../', import.meta.url));

let backend: { readonly port: number; close(): void };
let backendPort = 0;
before(async () => {
  backend = await startSlowBackend();
  backendPort = backend.port;
});
after(() => {
  backend.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A config with one http router sending every name to the backend. */
function proxyConfig(adminPort: number, routerPort: number, admin: Record<string, unknown> = {}, label = 'http'): string {
  return JSON.stringify({
    admin: { port: adminPort, ...admin },
    routers: [{ protocol: 'http', label, dtab: `/svc=>/$/inet/127.0.0.1/${backendPort}`, servers: [{ port: routerPort }] }],
  });
}

/** Resolves whether a TCP connection to 127.0.0.1:port is accepted. */
function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** A GET on a fresh connection: the body, or the error that ended it. */
function get(port: number, path: string): Promise<{ body?: string; error?: string }> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ body }));
      res.on('error', (e) => resolve({ error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
  });
}

interface Running {
  readonly run: SpawnedCli;
  readonly adminPort: number;
  readonly routerPort: number;
}

/** Starts `prx` with one http router on a free port; resolves once it has logged `prx started`. */
async function startPrx(admin: Record<string, unknown> = {}): Promise<Running> {
  const adminPort = await freePort();
  const routerPort = await freePort();
  const path = join(dir, `cfg-${adminPort}.json`);
  writeFileSync(path, proxyConfig(adminPort, routerPort, admin));
  const run = spawnCli('prx', [path]);
  const started = await run.logLine((l) => l['msg'] === 'prx started');
  assert.deepEqual(started['routers'], [{ label: 'http', servers: [{ ip: '127.0.0.1', port: routerPort }] }]);
  return { run, adminPort, routerPort };
}

/** Polls until the port refuses connections; resolves how long that took. */
async function untilRefused(port: number, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  while (await connects(port)) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`port ${port} still accepts after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('prx lifecycle', { concurrency: true }, () => {
  test('serves the admin interface with JSON logs, and SIGTERM drains: in-flight requests finish, new connections are refused, exit 0', async () => {
    const { run, adminPort, routerPort } = await startPrx({ shutdownGraceMs: 8000 });
    const ping = await fetch(`http://127.0.0.1:${adminPort}/admin/ping`);
    assert.equal(await ping.text(), 'pong\n');
    assert.equal((await get(routerPort, '/')).body, 'backend ok', 'the router proxies to the backend');

    const slow = get(routerPort, '/slow?ms=1500');
    let slowSettled = false;
    void slow.then(() => (slowSettled = true));
    await sleep(300); // the request is in the router by now
    const t0 = Date.now();
    run.child.kill('SIGTERM');
    await untilRefused(routerPort, 1000);
    assert.equal(slowSettled, false, 'new connections are refused while the request is still in flight');
    assert.deepEqual(await slow, { body: 'slow done' }, 'the in-flight request completed during the drain');
    const code = await run.exited;
    const elapsed = Date.now() - t0;
    assert.equal(code, 0, run.stderr());
    assert.ok(elapsed >= 1000, `exited after ${elapsed} ms, before the in-flight request was done`);
    assert.ok(elapsed < 8000, `exited after ${elapsed} ms, past the grace period`);
    const messages = run.stdout().split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { msg: string; level: string }));
    assert.ok(messages.some((m) => m.msg === 'shutting down' && m.level === 'info'));
    assert.ok(messages.some((m) => m.msg === 'shutdown complete'));
    assert.equal(await connects(adminPort), false);
  });

  test('a request outliving shutdownGraceMs is cut and the process still exits 0', async () => {
    const { run, routerPort } = await startPrx({ shutdownGraceMs: 500 });
    const slow = get(routerPort, '/slow?ms=20000');
    await sleep(300);
    const t0 = Date.now();
    run.child.kill('SIGINT');
    const result = await slow;
    assert.ok(result.error !== undefined, `the request was cut, got ${JSON.stringify(result)}`);
    const code = await run.exited;
    const elapsed = Date.now() - t0;
    assert.equal(code, 0, run.stderr());
    assert.ok(elapsed >= 400 && elapsed < 3000, `exited ${elapsed} ms after SIGINT`);
  });

  test('POST /admin/shutdown drains and exits 0', async () => {
    const { run, adminPort, routerPort } = await startPrx();
    const reply = await fetch(`http://127.0.0.1:${adminPort}/admin/shutdown`, { method: 'POST' });
    assert.equal(reply.status, 200);
    assert.equal(await run.exited, 0, run.stderr());
    assert.ok(run.stdout().includes('"msg":"shutdown requested through the admin interface"'));
    assert.equal(await connects(routerPort), false);
  });

  test('a second signal during the drain exits at once with status 1', async () => {
    const { run, routerPort } = await startPrx({ shutdownGraceMs: 20000 });
    void get(routerPort, '/slow?ms=20000');
    await sleep(300);
    run.child.kill('SIGTERM');
    await run.logLine((l) => l['msg'] === 'shutting down');
    const t0 = Date.now();
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 1);
    assert.ok(Date.now() - t0 < 2000);
    assert.ok(run.stdout().includes('signal during shutdown; exiting now without waiting for the drain'));
  });

  test('--log-level sets the root level: warn hides the info lines', async () => {
    const adminPort = await freePort();
    const path = join(dir, `quiet-${adminPort}.json`);
    writeFileSync(path, proxyConfig(adminPort, await freePort()));
    const run = spawnCli('prx', ['--log-level', 'warn', path]);
    const deadline = Date.now() + 20_000;
    while (!(await connects(adminPort))) {
      assert.ok(Date.now() < deadline, 'prx did not start');
      await sleep(50);
    }
    await fetch(`http://127.0.0.1:${adminPort}/admin/shutdown`, { method: 'POST' });
    assert.equal(await run.exited, 0);
    assert.equal(run.stdout(), '');
  });

  test('a router port in use: exit 1 naming the port problem, nothing left listening', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const taken = (blocker.address() as AddressInfo).port;
    const adminPort = await freePort();
    const path = join(dir, `busy-${adminPort}.json`);
    writeFileSync(path, proxyConfig(adminPort, taken, {}, 'busy'));
    try {
      const run = spawnCli('prx', [path]);
      assert.equal(await run.exited, 1);
      assert.match(run.stderr(), /^prx: cannot start: router busy cannot listen: .*EADDRINUSE/);
      assert.ok(run.stdout().includes('"level":"fatal"'));
      assert.equal(await connects(adminPort), false);
    } finally {
      blocker.close();
    }
  });

  test('the config can come from standard input', async () => {
    const adminPort = await freePort();
    const routerPort = await freePort();
    const run = spawnCli('prx', ['-'], { stdin: proxyConfig(adminPort, routerPort, {}, 'piped') });
    await run.logLine((l) => l['msg'] === 'prx started');
    const cfg = (await (await fetch(`http://127.0.0.1:${adminPort}/config.json`)).json()) as { routers: { label: string }[] };
    assert.equal(cfg.routers[0]?.label, 'piped');
    assert.equal((await get(routerPort, '/')).body, 'backend ok');
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0);
  });

  test('bin/prx as built (the bundle) serves, and exits 0 on SIGTERM after its stdout reader went away', async () => {
    const bundle = join(REPO, 'dist', 'bundle', 'prx.js');
    assert.ok(existsSync(bundle), `${bundle} is missing: npm test builds it (npm run build)`);
    const adminPort = await freePort();
    const routerPort = await freePort();
    const path = join(dir, `cfg-bin-${adminPort}.json`);
    writeFileSync(path, proxyConfig(adminPort, routerPort));
    const child = spawn(join(REPO, 'bin', 'prx'), [path], { cwd: REPO, env: withoutMallocArenaMax(), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('"prx started"')) resolve();
      });
      void exited.then((code) => reject(new Error(`bin/prx exited (${code}) before starting: ${out}`)));
    });
    assert.equal((await get(routerPort, '/')).body, 'backend ok');
    // The shim execs node itself (same pid), with one malloc arena unless the caller chose otherwise.
    if (process.platform === 'linux') {
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      assert.ok(environ.includes('MALLOC_ARENA_MAX=1'), 'bin/prx sets MALLOC_ARENA_MAX=1');
    }
    // The reader goes away (a log shipper that died): every later log line meets EPIPE.
    child.stdout.destroy();
    child.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(8000).then(() => 'still running 8 s after SIGTERM')]);
    if (code !== 0) child.kill('SIGKILL');
    assert.equal(code, 0);
  });
});

/** The test's environment without MALLOC_ARENA_MAX, so the shim's own default is what is seen. */
function withoutMallocArenaMax(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['MALLOC_ARENA_MAX'];
  return env;
}
