import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ConfigError, effectiveConfigJson, loadProxyConfig, validateProxyConfig, workerCount } from '../../src/config/index.js';
import { configErrorOf, minimal } from './fixtures.js';

/** The issue lines of validating `raw`, and the error code. */
function problems(raw: unknown): { code: string; lines: string[] } {
  const e = configErrorOf(() => validateProxyConfig(raw));
  return { code: e.code, lines: e.lines };
}

const router = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({ protocol: 'test', servers: [{}], ...extra });

describe('loadProxyConfig', () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'prx-config-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a YAML file', async () => {
    const file = join(dir, 'prx.yaml');
    await writeFile(file, 'routers:\n- protocol: test\n  label: edge\n  servers:\n  - port: 8080\n    ip: 0.0.0.0\n');
    const cfg = await loadProxyConfig(file);
    assert.equal(cfg.routers[0]?.label, 'edge');
    assert.deepEqual(cfg.routers[0]?.servers, [{ port: 8080, ip: '0.0.0.0', announce: [], clearContext: false, addForwardedHeader: false }]);
  });

  it('loads a JSON file', async () => {
    const file = join(dir, 'prx.json');
    await writeFile(file, JSON.stringify({ admin: { port: 9999 }, routers: [router({ dtab: '/svc => /#/io.prx.fs' })] }));
    const cfg = await loadProxyConfig(file);
    assert.equal(cfg.admin.port, 9999);
    assert.equal(cfg.routers[0]?.dtab, '/svc=>/#/io.prx.fs');
  });

  it('reads `-` from stdin', async () => {
    const stdin = Readable.from([Buffer.from('routers: [{protocol: test, '), Buffer.from('servers: [{port: 7000}]}]\n')]);
    const cfg = await loadProxyConfig('-', { stdin });
    assert.equal(cfg.routers[0]?.servers[0]?.port, 7000);
  });

  it('names the file in validation errors', async () => {
    const file = join(dir, 'bad.yaml');
    await writeFile(file, 'routers: []\n');
    await assert.rejects(loadProxyConfig(file), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.message, `invalid configuration in ${file}:\n  routers: must list at least one router`);
      assert.equal(e.origin, file);
      return true;
    });
  });
});

describe('validateProxyConfig: structure', () => {
  it('requires routers', () => {
    assert.deepEqual(problems({ admin: {} }), { code: 'PRX_ERR_CONFIG_INVALID', lines: ['routers: required key is missing'] });
  });

  it('requires at least one router', () => {
    assert.deepEqual(problems({ routers: [] }).lines, ['routers: must list at least one router']);
  });

  it('reads `workers`: 1 by default, a number from 1 to 256, or auto for the available cores', () => {
    assert.equal(validateProxyConfig(minimal).workers, 1);
    assert.equal(workerCount(validateProxyConfig(minimal)), 1);
    assert.equal(workerCount(validateProxyConfig({ ...minimal, workers: 3 })), 3);
    const auto = validateProxyConfig({ ...minimal, workers: 'auto' });
    assert.equal(auto.workers, 'auto', 'the effective config keeps `auto`');
    assert.equal(workerCount(auto), Math.min(256, availableParallelism()));
    for (const bad of [0, 257, 2.5, -1, 'all', '2', true]) {
      assert.deepEqual(problems({ ...minimal, workers: bad }).lines, ['workers: expected a number of workers from 1 to 256, or "auto"'], String(bad));
    }
  });

  it('rejects unknown top-level keys, listing the known ones', () => {
    assert.deepEqual(problems({ ...minimal, namerd: {} }).lines, [
      'namerd: unknown key (known keys: admin, routers, namers, telemetry, usage, workers)',
    ]);
  });

  it('rejects unknown keys in nested objects', () => {
    assert.deepEqual(problems({ ...minimal, admin: { prot: 9990 } }).lines, [
      'admin.prot: unknown key (known keys: ip, port, httpIdentifierPort, shutdownGraceMs, tls, security, workerThreads, allowProxiedAccess)',
    ]);
  });

  it('treats a null value as an absent key', () => {
    const cfg = validateProxyConfig({ admin: { tls: null, port: null }, routers: [router({ label: null })] });
    assert.equal(cfg.admin.port, 9990);
    assert.equal('tls' in cfg.admin, false);
    assert.equal(cfg.routers[0]?.label, 'test');
    assert.deepEqual(problems({ routers: [{ protocol: null, servers: [{}] }] }).lines, [
      'routers[0].protocol: required key is missing (known protocols: test, testmux)',
    ]);
  });

  it('reports a wrong type with the offending value', () => {
    assert.deepEqual(problems({ routers: [router({ originator: 'yes' })], admin: { security: { uiEnabled: 1 } } }).lines, [
      'admin.security.uiEnabled: expected true or false, got 1',
      'routers[0].originator: expected true or false, got "yes"',
    ]);
  });

  it('reports an out-of-range port with the range', () => {
    assert.deepEqual(problems({ ...minimal, admin: { port: 70000 } }).lines, [
      'admin.port: expected an integer from 1 to 65535, got 70000',
    ]);
  });

  it('gives the full key path into a router', () => {
    const raw = { routers: [router({ servers: [{ port: 1234 }, { port: 'abc' }] })] };
    assert.deepEqual(problems(raw).lines, ['routers[0].servers[1].port: expected an integer from 1 to 65535, got "abc"']);
  });

  it('reports every issue, not just the first', () => {
    const raw = { routers: [router({ bindingTimeoutMs: -1 }), { servers: [{}] }], usage: { enabled: 'no' } };
    assert.deepEqual(problems(raw).lines, [
      'routers[0].bindingTimeoutMs: expected a duration in milliseconds (an integer ≥ 0), got -1',
      'routers[1].protocol: required key is missing (known protocols: test, testmux)',
      'usage.enabled: expected true or false, got "no"',
    ]);
  });

  it('requires servers of a router', () => {
    assert.deepEqual(problems({ routers: [{ protocol: 'test', servers: [] }] }).lines, [
      'routers[0].servers: must list at least one server',
    ]);
  });
});

describe('validateProxyConfig: plugin kinds', () => {
  it('lists the known protocols for an unknown one', () => {
    assert.deepEqual(problems({ routers: [{ protocol: 'gopher', servers: [{}] }] }), {
      code: 'PRX_ERR_CONFIG_UNKNOWN_KIND',
      lines: ['routers[0].protocol: unknown protocol "gopher" (known protocols: test, testmux)'],
    });
  });

  it('lists the known kinds for an unknown namer', () => {
    assert.deepEqual(problems({ ...minimal, namers: [{ kind: 'io.prx.nope' }] }), {
      code: 'PRX_ERR_CONFIG_UNKNOWN_KIND',
      lines: ['namers[0].kind: unknown namer kind "io.prx.nope" (known kinds: io.prx.fs, test.namer)'],
    });
  });

  it("validates a kind's own keys with their full path", () => {
    assert.deepEqual(problems({ ...minimal, namers: [{ kind: 'test.namer', rootDir: 5 }] }).lines, [
      'namers[0].rootDir: expected a string, got 5',
    ]);
  });

  it('refuses an experimental protocol unless enabled', () => {
    assert.deepEqual(problems({ routers: [{ protocol: 'testmux', servers: [{}] }] }), {
      code: 'PRX_ERR_CONFIG_EXPERIMENTAL',
      lines: ['routers[0]: protocol "testmux" is experimental and must be enabled explicitly with experimental: true'],
    });
    const cfg = validateProxyConfig({ routers: [{ protocol: 'testmux', experimental: true, servers: [{}] }] });
    assert.equal(cfg.routers[0]?.servers[0]?.port, 4998);
  });

  it('refuses an experimental telemeter unless enabled', () => {
    assert.deepEqual(problems({ ...minimal, telemetry: [{ kind: 'io.prx.udpstats' }] }), {
      code: 'PRX_ERR_CONFIG_EXPERIMENTAL',
      lines: ['telemetry[0]: kind "io.prx.udpstats" is experimental and must be enabled explicitly with experimental: true'],
    });
    const cfg = validateProxyConfig({ ...minimal, telemetry: [{ kind: 'io.prx.udpstats', experimental: true }] });
    assert.deepEqual(cfg.telemetry, [{ kind: 'io.prx.udpstats', experimental: true, sampleRate: 1 }]);
  });

  it('defaults a namer prefix to /<kind> and rejects duplicate prefixes', () => {
    const cfg = validateProxyConfig({ ...minimal, namers: [{ kind: 'test.namer', rootDir: 'disco' }] });
    assert.deepEqual(cfg.namers, [{ kind: 'test.namer', prefix: '/test.namer', rootDir: 'disco' }]);
    const raw = { ...minimal, namers: [{ kind: 'test.namer', rootDir: 'a' }, { kind: 'io.prx.fs', rootDir: 'b', prefix: '/test.namer' }] };
    assert.deepEqual(problems(raw), {
      code: 'PRX_ERR_CONFIG_CONFLICTING_PREFIXES',
      lines: ['namers[1].prefix: duplicate namer prefix "/test.namer" (also used by namers[0]); set a distinct prefix'],
    });
  });

  it('validates interpreter transformers as kinds', () => {
    const raw = { routers: [router({ interpreter: { kind: 'io.prx.fs', dtabFile: 'd', transformers: [{ kind: 'io.prx.local' }] } })] };
    assert.deepEqual(problems(raw).lines, [
      'routers[0].interpreter.transformers[0].kind: unknown transformer kind "io.prx.local" (known kinds: io.prx.localhost)',
    ]);
  });
});

describe('validateProxyConfig: cross-checks', () => {
  it('rejects duplicate router labels (a label defaults to the protocol)', () => {
    const raw = { routers: [router({ servers: [{ port: 1 }] }), router({ servers: [{ port: 2 }] })] };
    assert.deepEqual(problems(raw), {
      code: 'PRX_ERR_CONFIG_CONFLICTING_LABELS',
      lines: ['routers[1].label: duplicate router label "test" (also used by routers[0]); set a distinct label'],
    });
  });

  it('rejects two servers on the same address, across routers', () => {
    const raw = { routers: [router({ label: 'a' }), router({ label: 'b', servers: [{ port: 5000 }, { port: 4999, ip: '127.0.0.1' }] })] };
    assert.deepEqual(problems(raw), {
      code: 'PRX_ERR_CONFIG_CONFLICTING_PORTS',
      lines: ['routers[1].servers[1]: 127.0.0.1:4999 conflicts with routers[0].servers[0] (127.0.0.1:4999)'],
    });
  });

  it('treats 0.0.0.0 as overlapping every IPv4 address, including the admin port', () => {
    const raw = { routers: [router({ servers: [{ ip: '0.0.0.0', port: 9990 }, { ip: '10.0.0.1', port: 9990 }] })] };
    assert.deepEqual(problems(raw).lines, [
      'routers[0].servers[0]: 0.0.0.0:9990 conflicts with admin (127.0.0.1:9990)',
      'routers[0].servers[1]: 10.0.0.1:9990 conflicts with routers[0].servers[0] (0.0.0.0:9990)',
    ]);
  });

  it("checks the admin interface's own ports against each other", () => {
    assert.deepEqual(problems({ ...minimal, admin: { httpIdentifierPort: 9990 } }).lines, [
      'admin.httpIdentifierPort: 127.0.0.1:9990 conflicts with admin (127.0.0.1:9990)',
    ]);
  });

  it('treats :: as overlapping every address', () => {
    const raw = { routers: [router({ servers: [{ ip: '::', port: 80 }, { ip: '10.0.0.1', port: 80 }] })] };
    assert.deepEqual(problems(raw).lines, ['routers[0].servers[1]: 10.0.0.1:80 conflicts with routers[0].servers[0] ([::]:80)']);
  });

  it('accepts the same port on distinct addresses', () => {
    const raw = { routers: [router({ servers: [{ ip: '127.0.0.1', port: 80 }, { ip: '10.0.0.1', port: 80 }, { ip: '::1', port: 80 }] })] };
    assert.equal(validateProxyConfig(raw).routers[0]?.servers.length, 3);
  });
});

describe('validateProxyConfig: defaults', () => {
  it('fills the spec defaults into a minimal config', () => {
    const cfg = validateProxyConfig(minimal);
    assert.deepEqual(cfg.admin, {
      ip: '127.0.0.1',
      port: 9990,
      shutdownGraceMs: 10000,
      security: { uiEnabled: true, controlEnabled: true, diagnosticsEnabled: true, pathWhitelist: [], pathBlacklist: [] },
      workerThreads: 2,
      allowProxiedAccess: false,
    });
    assert.deepEqual(cfg.routers[0], {
      protocol: 'test',
      label: 'test',
      experimental: false,
      servers: [{ port: 4999, ip: '127.0.0.1', announce: [], clearContext: false, addForwardedHeader: false }],
      announcers: [],
      dtab: '',
      bindingTimeoutMs: 10000,
      bindingCache: { paths: 1000, trees: 1000, bounds: 1000, clients: 1000, idleTtlSecs: 600 },
      client: { kind: 'io.prx.global' },
      service: { kind: 'io.prx.global' },
      dstPrefix: '/svc',
      originator: false,
      interpreter: { kind: 'default', transformers: [] },
      maxChunkKB: 8,
    });
    assert.deepEqual(cfg.namers, []);
    assert.deepEqual(cfg.telemetry, []);
    assert.deepEqual(cfg.usage, { enabled: true });
  });

  it('returns a deep-frozen config', () => {
    const cfg = validateProxyConfig(minimal);
    assert.ok(Object.isFrozen(cfg));
    assert.ok(Object.isFrozen(cfg.routers[0]?.servers[0]));
    assert.ok(Object.isFrozen(cfg.admin.security.pathBlacklist));
  });

  it('prints an effective config that validates to itself', () => {
    const cfg = validateProxyConfig({ ...minimal, namers: [{ kind: 'test.namer', rootDir: 'x' }] });
    const json = effectiveConfigJson(cfg);
    assert.match(json, /^\{\n {2}"admin": \{\n {4}"ip": "127.0.0.1",/);
    assert.deepEqual(validateProxyConfig(JSON.parse(json)), cfg);
  });
});

describe('validateProxyConfig: client and service policies', () => {
  it('accepts static client configs with prefix patterns and protocol parameters', () => {
    const client = {
      kind: 'io.prx.static',
      configs: [
        { prefix: '/', loadBalancer: { kind: 'ewma' }, failFast: true },
        { prefix: '/#/io.prx.fs/{service}', tls: { commonName: '{service}.example.com' }, engine: 'engine4' },
        { prefix: '/$/inet/*/80', hostConnectionPool: { maxSize: 10 } },
      ],
    };
    const cfg = validateProxyConfig({ routers: [router({ client })] });
    assert.deepEqual(cfg.routers[0]?.client, {
      kind: 'io.prx.static',
      configs: [
        { prefix: '/', loadBalancer: { kind: 'ewma', enableProbation: false }, failFast: true },
        { prefix: '/#/io.prx.fs/{service}', tls: { commonName: '{service}.example.com', disableValidation: false }, engine: 'engine4' },
        { prefix: '/$/inet/*/80', hostConnectionPool: { minSize: 0, maxSize: 10, maxWaiters: 2147483647 } },
      ],
    });
  });

  it('reports problems inside static configs with their index', () => {
    const client = { kind: 'io.prx.static', configs: [{ prefix: 'svc', engine: 'engine5' }, { failFast: true }] };
    assert.deepEqual(problems({ routers: [router({ client })] }).lines, [
      'routers[0].client.configs[0].prefix: invalid prefix pattern: must start with "/", got "svc"',
      'routers[0].client.configs[0].engine: expected one of "engine3", "engine4", got "engine5"',
      'routers[0].client.configs[1].prefix: required key is missing',
    ]);
  });

  it('rejects an unknown policy kind, naming the allowed ones', () => {
    assert.deepEqual(problems({ routers: [router({ service: { kind: 'io.prx.dynamic' } })] }).lines, [
      'routers[0].service.kind: expected one of "io.prx.global", "io.prx.static", got "io.prx.dynamic"',
    ]);
  });
});

describe('validateProxyConfig: scalars in context', () => {
  it("reports an invalid dtab with the parser's message, by line and column when it spans lines", () => {
    assert.deepEqual(problems({ routers: [router({ dtab: '/svc => /#/io.prx.fs;\nnope' })] }).lines, [
      "routers[0].dtab: invalid dtab: '/' expected but 'n' found at line 2, column 1: '[n]ope'",
    ]);
    assert.deepEqual(problems({ routers: [router({ dtab: '/svc => /#/io.prx.fs;nope' })] }).lines, [
      "routers[0].dtab: invalid dtab: '/' expected but 'n' found at '/svc => /#/io.prx.fs;[n]ope'",
    ]);
  });

  it('rejects admin security patterns that do not compile', () => {
    const raw = { ...minimal, admin: { security: { pathBlacklist: ['^/admin/shutdown$', '/admin/(pprof'] } } };
    assert.deepEqual(problems(raw).lines, [
      'admin.security.pathBlacklist[1]: invalid regular expression: Unterminated group, got "/admin/(pprof"',
    ]);
  });

  it('accepts a usage endpoint only as an http(s) URL', () => {
    assert.equal(validateProxyConfig({ ...minimal, usage: { endpoint: 'https://usage.example.com/v1' } }).usage.endpoint, 'https://usage.example.com/v1');
    assert.deepEqual(problems({ ...minimal, usage: { endpoint: 'ftp://x' } }).lines, [
      'usage.endpoint: expected an http or https URL, got "ftp://x"',
    ]);
  });

  it('rejects a bad listen address', () => {
    assert.deepEqual(problems({ routers: [router({ servers: [{ ip: 'not an ip' }] })] }).lines, [
      'routers[0].servers[0].ip: expected an IP address or host name, got "not an ip"',
    ]);
  });
});
