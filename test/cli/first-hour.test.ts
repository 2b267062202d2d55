// The operator's first hour with the built executables: `--version`, a checkout without a build,
// `npm start` and its signals, `/delegator.json` without a dtab, `prxctl delegate` on a namespace
// that does not exist, and the lint warning for a namer that is not configured. Run after
// `npm run build` (the tests run bin/*, which run dist/bundle/).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { getJson } from '../admin/helpers.js';
import { spawnCli } from '../helpers/run-cli.js';
import { startController } from '../resolver/helpers.js';
import { freePort, routerPort, start } from './proxy-helpers.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const EXECUTABLES = ['prx', 'prx-resolver', 'prxctl'] as const;
const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };

const dir = mkdtempSync(join(tmpdir(), 'prx-first-hour-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function run(file: string, args: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(file, args, { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A directory laid out like a checkout: bin/*, a package.json, and what `fill` adds. */
function checkout(name: string, fill: (root: string) => void = () => {}): string {
  const root = join(dir, name);
  cpSync(join(REPO, 'bin'), join(root, 'bin'), { recursive: true });
  // Not prx's package.json: the version must come from the build, not from a file read at run time.
  writeFileSync(join(root, 'package.json'), '{"name": "elsewhere", "version": "9.9.9", "type": "module"}\n');
  fill(root);
  return root;
}

describe('--version', () => {
  for (const name of EXECUTABLES) {
    test(`bin/${name} --version (and -v) prints "${name} <version>" and exits 0`, () => {
      for (const flag of ['--version', '-v']) {
        const r = run(join(REPO, 'bin', name), [flag]);
        assert.deepEqual([r.status, r.stdout, r.stderr], [0, `${name} ${version}\n`, ''], flag);
      }
    });
  }

  test('the version is the one bundled at build time, whatever package.json is beside the executables', () => {
    const root = checkout('installed', (r) => {
      cpSync(join(REPO, 'dist', 'bundle'), join(r, 'dist', 'bundle'), { recursive: true });
      symlinkSync(join(REPO, 'node_modules'), join(r, 'node_modules'));
    });
    for (const name of EXECUTABLES) {
      const r = run(join(root, 'bin', name), ['--version']);
      assert.deepEqual([r.status, r.stdout], [0, `${name} ${version}\n`], `${name}: ${r.stderr}`);
    }
  });
});

describe('a checkout without a build', () => {
  test('each executable says to run `npm run build` and exits 1, without a module stack', () => {
    const root = checkout('unbuilt');
    for (const name of EXECUTABLES) {
      const r = run(join(root, 'bin', name), ['--help']);
      assert.equal(r.status, 1, name);
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `${name} is not built: run \`npm run build\` in ${root}/\n`);
    }
  });

  test('npm ci builds: the prepare script runs the build, and skips it (exit 0) without the dev dependencies', () => {
    const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    assert.equal(pkg.scripts['prepare'], 'node scripts/prepare.mjs');
    const root = checkout('omit-dev', (r) => cpSync(join(REPO, 'scripts', 'prepare.mjs'), join(r, 'scripts', 'prepare.mjs')));
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'prepare.mjs')], { cwd: root, encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /prepare: typescript or esbuild is not installed \(dev dependencies omitted\?\); skipping the build/);
  });
});

/** Whether something accepts connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * `npm start` (without its prestart build: the test runs on the build already in dist/) on free
 * ports, in its own process group as a terminal would run it. Resolves once the proxy is up.
 */
async function npmStart(): Promise<{ npm: ReturnType<typeof spawn>; output: () => string; proxyPid: number; backendPid: number; ports: number[] }> {
  const [backendPort, adminPort, routerPort] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, `start-${routerPort}.yaml`);
  writeFileSync(
    config,
    `admin: {port: ${adminPort}}\nrouters:\n- protocol: http\n  dtab: /svc => /$/inet/127.0.0.1/${backendPort};\n  servers: [{port: ${routerPort}}]\n`,
  );
  const npm = spawn('npm', ['start', '--ignore-scripts', '--', config], {
    cwd: REPO,
    env: { ...process.env, PORT: String(backendPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  npm.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  await until(() => /"msg":"prx started"/.test(out) || npm.exitCode !== null, 'prx to start under npm start', 60_000);
  const proxyPid = Number(/"pid":(\d+)[^\n]*"msg":"prx started"/.exec(out)?.[1]);
  const backendPid = Number(/demo backend listening on \S+ \(pid (\d+)\)/.exec(out)?.[1]);
  assert.ok(proxyPid > 0 && backendPid > 0, out);
  return { npm, output: () => out, proxyPid, backendPid, ports: [backendPort, adminPort, routerPort] };
}

describe('npm start', () => {
  for (const [signal, target] of [
    ['SIGTERM', 'npm'],
    ['SIGINT', 'npm'],
    ['SIGINT', 'the process group (Ctrl-C)'],
  ] as const) {
    test(`${signal} to ${target}: the proxy drains once, the backend stops, npm exits after both`, async () => {
      const s = await npmStart();
      try {
        const exited = new Promise((resolve) => s.npm.once('exit', resolve));
        process.kill(target === 'npm' ? (s.npm.pid as number) : -(s.npm.pid as number), signal);
        await until(() => s.npm.exitCode !== null || s.npm.signalCode !== null, 'npm to exit');
        await exited;
        assert.ok(!alive(s.proxyPid), 'the proxy is gone');
        assert.ok(!alive(s.backendPid), 'the demo backend is gone');
        for (const port of s.ports) assert.equal(await listening(port), false, `port ${port} is closed`);
        const out = s.output();
        assert.equal(out.match(/"msg":"shutting down"/g)?.length, 1, out);
        assert.match(out, /"msg":"shutdown complete"/);
        assert.doesNotMatch(out, /signal during shutdown|demo backend exited/);
      } finally {
        for (const pid of [s.proxyPid, s.backendPid]) if (alive(pid)) process.kill(pid, 'SIGKILL');
        if (s.npm.exitCode === null && s.npm.signalCode === null) process.kill(-(s.npm.pid as number), 'SIGKILL');
      }
    });
  }
});

describe('/delegator.json without a dtab', () => {
  test("explains the name through the router's own dtab; an explicit dtab is still the whole dtab", async () => {
    const backend = await freePort();
    const s = await start({
      admin: { port: await freePort() },
      routers: [{ protocol: 'http', label: 'web', dtab: `/svc => /$/inet/127.0.0.1/${backend}`, servers: [{ port: await freePort() }] }],
    });
    try {
      const { status, body } = await getJson(`${s.admin}/delegator.json?namespace=web&path=/svc/users`);
      assert.equal(status, 200);
      const tree = body as { type: string; delegate: { type: string; path: string; dentry: unknown; bound: { id: string; path: string } } };
      assert.equal(tree.type, 'delegate');
      assert.deepEqual(
        [tree.delegate.type, tree.delegate.path, tree.delegate.dentry, tree.delegate.bound.id, tree.delegate.bound.path],
        ['leaf', `/$/inet/127.0.0.1/${backend}/users`, { prefix: '/svc', dst: `/$/inet/127.0.0.1/${backend}` }, `/$/inet/127.0.0.1/${backend}`, '/users'],
      );
      // POST without a dtab: the same.
      const posted = await fetch(`${s.admin}/delegator.json`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ namespace: 'web', path: '/svc/users' }),
      });
      assert.deepEqual(await posted.json(), body);
      // With a dtab, that dtab alone (Linkerd's UI sends the router's dtab plus its edits).
      const q = new URLSearchParams({ namespace: 'web', path: '/svc/users', dtab: '/svc=>/$/fail' });
      const given = (await getJson(`${s.admin}/delegator.json?${q.toString()}`)).body as { delegate: { type: string } };
      assert.equal(given.delegate.type, 'fail');
      const empty = (await getJson(`${s.admin}/delegator.json?namespace=web&path=/svc/users&dtab=`)).body as { type: string };
      assert.equal(empty.type, 'neg');
    } finally {
      await s.proxy.shutdown();
    }
  });
});

describe('prxctl delegate', () => {
  test('a namespace the resolver does not store: exit 1, "not found"; a stored one still delegates', async () => {
    const fx = await startController({ default: '/svc => /$/inet/127.0.0.1/9' });
    try {
      const missing = spawnCli('prxctl', ['--base-url', fx.url, 'delegate', 'defualt', '/svc/users']);
      assert.equal(await missing.exited, 1);
      assert.equal(missing.stderr(), 'prxctl: dtab namespace defualt not found\n');
      assert.equal(missing.stdout(), '');
      const found = spawnCli('prxctl', ['--base-url', fx.url, 'delegate', 'default', '/svc/users']);
      assert.equal(await found.exited, 0, found.stderr());
      assert.match(found.stdout(), /^\/svc\/users\n {2}\/\$\/inet\/127\.0\.0\.1\/9\/users {2}\[\/svc => \/\$\/inet\/127\.0\.0\.1\/9\]/);
    } finally {
      await fx.close();
    }
  });
});

describe('a dentry naming a namer that is not configured', () => {
  const config = (routerPort: number, remotePort: number, adminPort: number): Record<string, unknown> => ({
    admin: { port: adminPort },
    namers: [{ kind: 'io.prx.fs', rootDir: join(REPO, 'examples', 'disco') }],
    routers: [
      { protocol: 'http', label: 'web', dtab: '/svc => /#/io.prx.fs; /svc/users => /#/io.prx.consul/dc1/users | /#/io.prx.fs/users-v2;', servers: [{ port: routerPort }] },
      // Through a resolver, /#/ names are the resolver's: not checked here.
      {
        protocol: 'http',
        label: 'remote',
        dtab: '/svc => /#/io.prx.k8s/prod;',
        interpreter: { kind: 'io.prx.resolver.http', experimental: true, dst: '/$/inet/127.0.0.1/9', namespace: 'default' },
        servers: [{ port: remotePort }],
      },
    ],
  });
  const WARNING = "router web: dentry 2 '/svc/users=>/#/io.prx.consul/dc1/users | /#/io.prx.fs/users-v2' names the namer /#/io.prx.consul, which is not configured (names bound through it are neg)";

  test('prx --check prints it as a warning on stderr and exits 0', async () => {
    const path = join(dir, 'unconfigured.json');
    writeFileSync(path, JSON.stringify(config(4140, 4141, 9990)));
    const check = spawnCli('prx', ['--check', path]);
    assert.equal(await check.exited, 0, check.stderr());
    assert.equal(check.stderr(), `prx: warning: ${WARNING}\n`);
    assert.equal((JSON.parse(check.stdout()) as { routers: unknown[] }).routers.length, 2);
  });

  test('/admin/lint reports it as a warning; the proxy runs', async () => {
    const s = await start(config(await freePort(), await freePort(), await freePort()));
    try {
      const { body } = await getJson(`${s.admin}/admin/lint.json`);
      const { results } = body as { results: { name: string; issues: { severity: string; message: string }[] }[] };
      assert.deepEqual(results.find((r) => r.name === 'dtab-unconfigured-namers')?.issues, [{ severity: 'warning', message: WARNING }]);
    } finally {
      await s.proxy.shutdown();
    }
  });
});

describe('latency metrics', () => {
  test('metrics.json shows request latencies as soon as there are some, not after the first snapshot interval', async () => {
    const backend = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    const backendPort = (backend.address() as AddressInfo).port;
    const s = await start({
      admin: { port: await freePort() },
      routers: [{ protocol: 'http', label: 'web', dtab: `/svc => /$/inet/127.0.0.1/${backendPort}`, servers: [{ port: await freePort() }] }],
    });
    try {
      const port = routerPort(s.proxy, 'web');
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`http://127.0.0.1:${port}/`, { headers: { host: 'web' } })).status, 200);
      const metrics = (await getJson(`${s.admin}/admin/metrics.json`)).body as Record<string, number>;
      const server = `rt/web/server/127.0.0.1/${port}/request_latency_ms`;
      assert.equal(metrics[`${server}.count`], 3, Object.keys(metrics).filter((k) => k.includes('latency')).join(' '));
      assert.equal(typeof metrics[`${server}.p99`], 'number');
      // Prometheus keeps Linkerd's rule: histograms appear once an interval has completed.
      const prometheus = await (await fetch(`${s.admin}/admin/metrics/prometheus`)).text();
      assert.doesNotMatch(prometheus, /request_latency_ms/);
    } finally {
      await s.proxy.shutdown();
      backend.close();
    }
  });
});
