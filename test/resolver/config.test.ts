// The resolver's config file: defaults, required keys, kinds, listener conflicts, loading.
import '../../src/resolver/builtins.js';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/config/errors.js';
import { kindsOf } from '../../src/config/registry.js';
import {
  loadResolverConfig,
  resolverConfigJson,
  validateResolverConfig,
} from '../../src/config/resolver-config.js';

const MINIMAL = { interfaces: [{ kind: 'io.prx.httpController' }], storage: { kind: 'io.prx.inMemory' } };

function problems(raw: unknown): { code: string; lines: string[] } {
  try {
    validateResolverConfig(raw);
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return { code: e.code, lines: e.lines };
  }
  assert.fail('expected the config to be refused');
}

describe('validateResolverConfig', () => {
  test('fills the spec defaults', () => {
    const cfg = validateResolverConfig(MINIMAL);
    assert.deepEqual(cfg.admin, {
      ip: '127.0.0.1',
      port: 9990,
      shutdownGraceMs: 10000,
      security: { uiEnabled: true, controlEnabled: true, diagnosticsEnabled: true, pathWhitelist: [], pathBlacklist: [] },
      workerThreads: 2,
    });
    assert.deepEqual(cfg.interfaces, [{ kind: 'io.prx.httpController', ip: '127.0.0.1', port: 4180 }]);
    assert.deepEqual(cfg.storage, { kind: 'io.prx.inMemory', namespaces: {} });
    assert.deepEqual([cfg.namers, cfg.telemetry], [[], []]);
    assert.ok(Object.isFrozen(cfg.interfaces[0]));
  });

  test('socket options: defaults, and values Node cannot honour are refused', () => {
    const cfg = validateResolverConfig({
      ...MINIMAL,
      admin: { socketOptions: {} },
      interfaces: [{ kind: 'io.prx.httpController', socketOptions: { keepAlive: true, writeTimeoutMs: 5000 } }],
    });
    assert.deepEqual(cfg.admin.socketOptions, { noDelay: true, reuseAddr: true, reusePort: false, keepAlive: false });
    assert.deepEqual(cfg.interfaces[0]?.['socketOptions'], {
      noDelay: true,
      reuseAddr: true,
      reusePort: false,
      keepAlive: true,
      writeTimeoutMs: 5000,
    });
    const bad = problems({ ...MINIMAL, interfaces: [{ kind: 'io.prx.httpController', socketOptions: { bogus: 1 } }] });
    assert.deepEqual(bad.lines, ['interfaces[0].socketOptions.bogus: unknown key (known keys: noDelay, reuseAddr, reusePort, keepAlive, readTimeoutMs, writeTimeoutMs)']);
    const reuse = problems({ ...MINIMAL, interfaces: [{ kind: 'io.prx.httpController', socketOptions: { reuseAddr: false } }] });
    assert.deepEqual(reuse.lines, [
      'interfaces[0].socketOptions.reuseAddr: Node.js always sets SO_REUSEADDR on listening sockets; remove the key or set it to true, got false',
    ]);
    const major = Number(process.versions.node.split('.')[0]);
    if (major < 22) {
      const port = problems({ ...MINIMAL, interfaces: [{ kind: 'io.prx.httpController', socketOptions: { reusePort: true } }] });
      assert.deepEqual(port.lines, [`interfaces[0].socketOptions.reusePort: needs Node.js 22.12 or newer (this is ${process.version}), got true`]);
    }
  });

  test('interfaces and storage are required; interfaces must not be empty', () => {
    assert.deepEqual(problems({}).lines, ['interfaces: required key is missing', 'storage: required key is missing']);
    assert.deepEqual(problems({ ...MINIMAL, interfaces: [] }).lines, ['interfaces: must list at least one interface']);
  });

  test('unknown kinds list the known ones; unknown keys are refused', () => {
    const r = problems({ interfaces: [{ kind: 'io.prx.nope' }], storage: { kind: 'io.prx.nope' }, routers: [] });
    assert.deepEqual(r.lines, [
      `interfaces[0].kind: unknown iface kind "io.prx.nope" (known kinds: ${kindsOf('iface').join(', ')})`,
      `storage.kind: unknown storage kind "io.prx.nope" (known kinds: ${kindsOf('storage').join(', ')})`,
      'routers: unknown key (known keys: admin, interfaces, storage, namers, telemetry)',
    ]);
    const keys = problems({ ...MINIMAL, interfaces: [{ kind: 'io.prx.httpController', prefix: '/x' }] });
    assert.deepEqual(keys.lines, ['interfaces[0].prefix: unknown key (known keys: kind, experimental, ip, port, socketOptions, tls)']);
  });

  test('the proxy-only admin key httpIdentifierPort is refused', () => {
    const r = problems({ ...MINIMAL, admin: { httpIdentifierPort: 8080 } });
    assert.deepEqual(r.lines, [
      'admin.httpIdentifierPort: unknown key (known keys: ip, port, shutdownGraceMs, tls, security, workerThreads, socketOptions)',
    ]);
  });

  test('an experimental storage kind must be enabled explicitly', () => {
    const r = problems({ ...MINIMAL, storage: { kind: 'io.prx.kvstore2' } });
    assert.equal(r.code, 'PRX_ERR_CONFIG_EXPERIMENTAL');
    assert.deepEqual(r.lines, ['storage: kind "io.prx.kvstore2" is experimental and must be enabled explicitly with experimental: true']);
  });

  test('listeners on overlapping addresses conflict (admin and every interface)', () => {
    const r = problems({
      admin: { port: 4180 },
      interfaces: [
        { kind: 'io.prx.httpController' },
        { kind: 'io.prx.httpController', ip: '0.0.0.0', port: 9000 },
        { kind: 'io.prx.httpController', ip: '127.0.0.1', port: 9000 },
      ],
      storage: { kind: 'io.prx.inMemory' },
    });
    assert.equal(r.code, 'PRX_ERR_CONFIG_CONFLICTING_PORTS');
    assert.deepEqual(r.lines, [
      'interfaces[0]: 127.0.0.1:4180 conflicts with admin (127.0.0.1:4180)',
      'interfaces[2]: 127.0.0.1:9000 conflicts with interfaces[1] (0.0.0.0:9000)',
    ]);
  });

  test('namers are the proxy namers; their prefixes must be distinct', () => {
    const r = problems({
      ...MINIMAL,
      namers: [
        { kind: 'io.prx.fs', rootDir: tmpdir() },
        { kind: 'io.prx.fs', rootDir: tmpdir(), prefix: '/io.prx.fs' },
      ],
    });
    assert.deepEqual(r.lines, ['namers[1].prefix: duplicate namer prefix "/io.prx.fs" (also used by namers[0]); set a distinct prefix']);
    const ok = validateResolverConfig({ ...MINIMAL, namers: [{ kind: 'io.prx.fs', rootDir: tmpdir() }] });
    assert.equal(ok.namers[0]?.prefix, '/io.prx.fs');
  });

  test('bad storage contents are reported at their path', () => {
    const r = problems({ ...MINIMAL, storage: { kind: 'io.prx.inMemory', namespaces: { default: '/svc =>' } } });
    assert.deepEqual(r.lines, ["storage.namespaces.default: invalid dtab: simple expected but end of input found at '/svc =>[]'"]);
  });
});

describe('loadResolverConfig', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prx-resolver-config-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  test('reads YAML from a file and JSON from stdin', async () => {
    const file = join(dir, 'r.yaml');
    await writeFile(file, 'interfaces:\n- kind: io.prx.httpController\n  port: 4181\nstorage:\n  kind: io.prx.inMemory\n  namespaces:\n    default: /svc => /#/io.prx.fs\n');
    const cfg = await loadResolverConfig(file);
    assert.equal(cfg.interfaces[0]?.port, 4181);
    assert.deepEqual(cfg.storage['namespaces'], { default: '/svc=>/#/io.prx.fs' });
    const stdin = Readable.from([Buffer.from(JSON.stringify(MINIMAL))]);
    const fromStdin = await loadResolverConfig('-', { stdin });
    assert.equal(fromStdin.interfaces[0]?.port, 4180);
  });

  test('names the file in errors', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'storage: {kind: io.prx.inMemory}\n');
    await assert.rejects(loadResolverConfig(file), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.message, `invalid configuration in ${file}:\n  interfaces: required key is missing`);
      return true;
    });
  });

  test('the effective config re-validates to itself', () => {
    const cfg = validateResolverConfig(MINIMAL);
    const again = validateResolverConfig(JSON.parse(resolverConfigJson(cfg)));
    assert.deepEqual(again, cfg);
  });
});
