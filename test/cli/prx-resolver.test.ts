// `bin/prx-resolver` as a process: usage, --check, bad config, start-up, graceful stop on
// SIGTERM/SIGINT with a watch open, and a port already in use.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { spawnCli } from '../helpers/run-cli.js';
import { freePort, openWatch, request } from '../resolver/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'prx-resolver-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function writeConfig(name: string, extra: Record<string, unknown> = {}): Promise<{ file: string; ctl: string; admin: string }> {
  const adminPort = await freePort();
  const ctlPort = await freePort();
  const file = join(dir, name);
  writeFileSync(
    file,
    JSON.stringify({
      admin: { port: adminPort },
      interfaces: [{ kind: 'io.prx.httpController', port: ctlPort }],
      storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc => /#/io.prx.fs' } },
      ...extra,
    }),
  );
  return { file, ctl: `http://127.0.0.1:${ctlPort}`, admin: `http://127.0.0.1:${adminPort}` };
}

test('--help prints the usage; no argument is a usage error', async () => {
  const help = spawnCli('prx-resolver', ['--help']);
  assert.equal(await help.exited, 0);
  assert.match(help.stdout(), /^usage: prx-resolver <config.yaml\|config.json\|->/);
  const none = spawnCli('prx-resolver', []);
  assert.equal(await none.exited, 2);
  assert.match(none.stderr(), /^prx-resolver: expected one configuration file \(or -\)\nusage:/);
});

test('--check prints the config with every default and exits 0', async () => {
  const { file } = await writeConfig('check.json');
  const cli = spawnCli('prx-resolver', ['--check', file]);
  assert.equal(await cli.exited, 0);
  const cfg = JSON.parse(cli.stdout()) as { interfaces: { ip: string }[]; admin: { shutdownGraceMs: number }; storage: unknown };
  assert.equal(cfg.interfaces[0]?.ip, '127.0.0.1');
  assert.equal(cfg.admin.shutdownGraceMs, 10000);
  assert.deepEqual(cfg.storage, { kind: 'io.prx.inMemory', namespaces: { default: '/svc=>/#/io.prx.fs' } });
});

test('a bad config exits 1 with every problem, before anything listens', async () => {
  const file = join(dir, 'bad.yaml');
  const adminPort = await freePort();
  writeFileSync(file, `admin: {port: ${adminPort}}\ninterfaces: []\nstorage: {kind: io.prx.nope}\n`);
  const cli = spawnCli('prx-resolver', [file]);
  assert.equal(await cli.exited, 1);
  assert.equal(
    cli.stderr(),
    `prx-resolver: invalid configuration in ${file}:\n  interfaces: must list at least one interface\n` +
      `  storage.kind: unknown storage kind "io.prx.nope" (known kinds: ${await storageKinds()})\n`,
  );
  assert.doesNotMatch(cli.stdout(), /listening/);
  const missing = spawnCli('prx-resolver', [join(dir, 'missing.yaml')]);
  assert.equal(await missing.exited, 1);
  assert.equal(missing.stderr(), `prx-resolver: cannot read configuration from ${join(dir, 'missing.yaml')}: no such file\n`);
});

async function storageKinds(): Promise<string> {
  await import('../../src/resolver/builtins.js');
  const { kindsOf } = await import('../../src/config/registry.js');
  return kindsOf('storage').join(', ');
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`serves until ${signal}, then ends open watches and exits 0`, async () => {
    const { file, ctl, admin } = await writeConfig(`run-${signal}.json`);
    const cli = spawnCli('prx-resolver', [file]);
    try {
      await cli.logLine((l) => l['msg'] === 'prx-resolver started');
      assert.equal((await request(`${ctl}/api/1/dtabs`)).text, '["default"]\n');
      assert.equal((await request(`${admin}/admin/ping`)).text, 'pong\n');
      const watch = await openWatch(`${ctl}/api/1/dtabs/default?watch=true`);
      assert.equal(await watch.next(), '[{"prefix":"/svc","dst":"/#/io.prx.fs"}]');
      cli.child.kill(signal);
      await watch.ended;
      assert.equal(await cli.exited, 0);
      assert.match(cli.stdout(), /"msg":"prx-resolver stopped"/);
    } finally {
      cli.child.kill('SIGKILL');
    }
  });
}

test('reads the config from stdin with -', async () => {
  const { file, ctl } = await writeConfig('stdin.json');
  const cli = spawnCli('prx-resolver', ['-'], { stdin: readFileSync(file, 'utf8') });
  try {
    await cli.logLine((l) => l['msg'] === 'prx-resolver started');
    assert.equal((await request(`${ctl}/api/1/dtabs/default`, { headers: { accept: 'application/dtab' } })).text, '/svc=>/#/io.prx.fs\n');
    cli.child.kill('SIGTERM');
    assert.equal(await cli.exited, 0);
  } finally {
    cli.child.kill('SIGKILL');
  }
});

test('a port in use fails start-up with exit 1 and frees the other ports', async () => {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const taken = (blocker.address() as AddressInfo).port;
  try {
    const { file, ctl } = await writeConfig('taken.json', { admin: { port: taken } });
    const cli = spawnCli('prx-resolver', [file]);
    assert.equal(await cli.exited, 1);
    assert.match(cli.stderr(), /^prx-resolver: cannot start: listen EADDRINUSE: address already in use 127\.0\.0\.1:\d+\n$/);
    await assert.rejects(request(ctl, {}, 1000));
  } finally {
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
  }
});

test('bin/prx-resolver as built (the bundle, through its shell shim) serves and exits 0 on SIGTERM', async () => {
  const { file, ctl } = await writeConfig('bin.json');
  const repo = fileURLToPath(new URL('../..', import.meta.url));
  assert.ok(existsSync(join(repo, 'dist', 'bundle', 'prx-resolver.js')), 'dist/bundle/prx-resolver.js is missing: npm test builds it');
  const child = spawn(join(repo, 'bin', 'prx-resolver'), [file], { cwd: repo, env: withoutMallocArenaMax(), stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  try {
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('"prx-resolver started"')) resolve();
      });
      void exited.then((code) => reject(new Error(`bin/prx-resolver exited (${code}) before starting: ${out}`)));
    });
    assert.equal((await request(`${ctl}/api/1/dtabs`)).text, '["default"]\n');
    if (process.platform === 'linux') {
      // The shim execs node itself (same pid), with one malloc arena unless the caller chose otherwise.
      const environ = readFileSync(`/proc/${child.pid}/environ`, 'utf8').split('\0');
      assert.ok(environ.includes('MALLOC_ARENA_MAX=1'), 'bin/prx-resolver sets MALLOC_ARENA_MAX=1');
    }
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  } finally {
    child.kill('SIGKILL');
  }
});

/** The test's environment without MALLOC_ARENA_MAX, so the shim's own default is what is seen. */
function withoutMallocArenaMax(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env['MALLOC_ARENA_MAX'];
  return env;
}
