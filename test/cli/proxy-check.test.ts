// `bin/prx` before anything listens: usage errors, `--check`, and configs that are refused.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { spawnCli } from '../helpers/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'prx-check-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether the port can be bound right now (nobody holds it). */
async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

describe('prx usage', { concurrency: true }, () => {
  test('--help prints the usage and exits 0', async () => {
    const run = spawnCli('prx', ['--help']);
    assert.equal(await run.exited, 0);
    assert.match(run.stdout(), /^usage: prx \[--log-level <level>\] <config\.yaml\|config\.json\|->/);
    assert.match(run.stdout(), /prx --check <config>/);
  });

  for (const [args, message] of [
    [[], /a config file \(or -\) is required/],
    [['a.yaml', 'b.yaml'], /exactly one config file is expected/],
    [['--bogus', 'a.yaml'], /unknown option --bogus/],
    [['--check'], /a config file \(or -\) is required/],
    [['--log-level'], /--log-level needs a level/],
    [['--log-level', 'loud', 'a.yaml'], /invalid log level 'loud'/],
  ] as const) {
    test(`prx ${args.join(' ') || '(no arguments)'} is a usage error: exit 2`, async () => {
      const run = spawnCli('prx', args);
      assert.equal(await run.exited, 2);
      assert.match(run.stderr(), message);
      assert.match(run.stderr(), /usage: prx/);
      assert.equal(run.stdout(), '');
    });
  }
});

describe('prx --check', () => {
  test('prints the effective config, every default filled in, and exits 0', async () => {
    const path = configFile('ok.yaml', 'routers:\n- protocol: http\n  dtab: /svc => /$/inet/127.1/8080\n  servers:\n  - port: 4999\n');
    const run = spawnCli('prx', ['--check', path]);
    assert.equal(await run.exited, 0, run.stderr());
    const cfg = JSON.parse(run.stdout()) as {
      admin: Record<string, unknown>;
      routers: Record<string, unknown>[];
      namers: unknown[];
      usage: Record<string, unknown>;
    };
    assert.deepEqual(
      { ip: cfg.admin['ip'], port: cfg.admin['port'], shutdownGraceMs: cfg.admin['shutdownGraceMs'] },
      { ip: '127.0.0.1', port: 9990, shutdownGraceMs: 10000 },
    );
    const router = cfg.routers[0] ?? {};
    assert.equal(router['label'], 'http');
    assert.deepEqual(router['identifier'], [{ kind: 'io.prx.header.token', header: 'Host' }]);
    assert.equal(router['dtab'], '/svc=>/$/inet/127.1/8080');
    assert.equal(router['bindingTimeoutMs'], 10000);
    assert.deepEqual(router['bindingCache'], { paths: 1000, trees: 1000, bounds: 1000, clients: 1000, idleTtlSecs: 600 });
    assert.deepEqual(router['interpreter'], { kind: 'default', transformers: [] });
    assert.deepEqual(cfg.namers, []);
    assert.equal(cfg.usage['enabled'], true);
    assert.equal(run.stderr(), '');
  });

  test('the bundled example config is valid: an http router on 4140 routing through examples/disco', async () => {
    const run = spawnCli('prx', ['--check', 'examples/prx.yaml']);
    assert.equal(await run.exited, 0, run.stderr());
    const cfg = JSON.parse(run.stdout()) as {
      admin: { port: number };
      namers: { kind: string; prefix: string; rootDir: string }[];
      routers: { protocol: string; dtab: string; servers: { port: number }[] }[];
    };
    assert.equal(cfg.admin.port, 9990);
    assert.deepEqual(cfg.namers, [{ kind: 'io.prx.fs', prefix: '/io.prx.fs', rootDir: 'examples/disco' }]);
    assert.deepEqual(
      cfg.routers.map((r) => [r.protocol, r.dtab, r.servers[0]?.port]),
      [['http', '/svc=>/#/io.prx.fs', 4140]],
    );
  });

  test('reads the config from standard input with -', async () => {
    const run = spawnCli('prx', ['--check', '-'], {
      stdin: '{"routers": [{"protocol": "http", "label": "from-stdin", "servers": [{"port": 4998}]}]}',
    });
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal((JSON.parse(run.stdout()) as { routers: { label: string }[] }).routers[0]?.label, 'from-stdin');
  });

  test('an invalid config prints every issue, one per line, on stderr and exits 1', async () => {
    const path = configFile(
      'bad.yaml',
      [
        'admin:',
        '  port: x',
        'routers:',
        '- protocol: http',
        '  servers:',
        '  - port: 4997',
        '  - port: "x"',
        'namers:',
        '- kind: io.prx.fs',
        '  rootDir: /no/such/dir',
        '- kind: io.prx.nope',
        '',
      ].join('\n'),
    );
    const run = spawnCli('prx', ['--check', path]);
    assert.equal(await run.exited, 1);
    const err = run.stderr();
    assert.ok(err.startsWith(`prx: invalid configuration in ${path}:\n`), err);
    assert.match(err, /^ {2}admin\.port: expected an integer from 1 to 65535, got "x"$/m);
    assert.match(err, /^ {2}routers\[0\]\.servers\[1\]\.port: expected an integer from 1 to 65535, got "x"$/m);
    assert.match(err, /^ {2}namers\[0\]\.rootDir: directory does not exist, got "\/no\/such\/dir"$/m);
    assert.match(err, /^ {2}namers\[1\]\.kind: unknown namer kind "io\.prx\.nope" \(known kinds: .*io\.prx\.fs.*\)$/m);
    assert.equal(run.stdout(), '');
  });

  test('a config that cannot be read is exit 1 with the reason', async () => {
    const run = spawnCli('prx', ['--check', join(dir, 'missing.yaml')]);
    assert.equal(await run.exited, 1);
    assert.equal(run.stderr(), `prx: cannot read configuration from ${join(dir, 'missing.yaml')}: no such file\n`);
  });

  test('YAML syntax errors name the line', async () => {
    const path = configFile('syntax.yaml', 'routers:\n- protocol: http\n  servers: [\n');
    const run = spawnCli('prx', ['--check', path]);
    assert.equal(await run.exited, 1);
    assert.match(run.stderr(), /syntax error at line \d+, column \d+/);
  });
});

describe('prx with a refused config', () => {
  test('exits 1 before any port is opened', async () => {
    // The admin port is held by the test: had prx tried to listen before validating, it would
    // report the busy port instead of the config's issues.
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const adminPort = (blocker.address() as AddressInfo).port;
    const routerPort = await freePort();
    const path = configFile(
      'refused.yaml',
      `admin:\n  port: ${adminPort}\nrouters:\n- protocol: http\n  servers:\n  - port: ${routerPort}\nnamers:\n- kind: io.prx.fs\n  rootDir: /no/such/dir\n`,
    );
    try {
      const run = spawnCli('prx', [path]);
      assert.equal(await run.exited, 1);
      assert.equal(run.stderr(), `prx: invalid configuration in ${path}:\n  namers[0].rootDir: directory does not exist, got "/no/such/dir"\n`);
      assert.equal(run.stdout(), '', 'nothing was logged: nothing started');
      assert.ok(await isFree(routerPort));
    } finally {
      blocker.close();
    }
  });
});
