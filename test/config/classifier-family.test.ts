// A response classifier of the other protocol's family is a config error at its key path: an
// `io.prx.h2.*` kind (gRPC ones included) on an http router, inline or in an `io.prx.static`
// config, and `io.prx.http.*` under the refinement the h2 router applies. Before, such a config
// passed `prx --check` and then failed every request with a 502. Checked by validateProxyConfig
// with the real plugins, and by the built `bin/prx --check`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import '../../src/cli/builtins.js';
import { ConfigError, servicePolicy, validate, validateProxyConfig } from '../../src/config/index.js';
import { responseClassifierSlot } from '../../src/protocol/http/classifiers.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const HTTP_KINDS = 'io.prx.http.allSuccessful, io.prx.http.nonRetryable5XX, io.prx.http.retryableAll5XX, io.prx.http.retryableIdempotent5XX, io.prx.http.retryableRead5XX';
const onHttp = (kind: string): string => `an h2 response classifier cannot classify http responses (http kinds: ${HTTP_KINDS}), got "${kind}"`;

/** The issue lines of validating a proxy config with one http router using `service`. */
function httpRouterLines(service: unknown): string[] {
  try {
    validateProxyConfig({ routers: [{ protocol: 'http', servers: [{ port: 4140 }], service }] });
  } catch (e) {
    if (e instanceof ConfigError) return e.lines;
    throw e;
  }
  return [];
}

describe('an http router refuses h2 response classifiers', () => {
  for (const kind of ['io.prx.h2.nonRetryable5XX', 'io.prx.h2.retryableRead5XX', 'io.prx.h2.allSuccessful', 'io.prx.h2.grpc.default', 'io.prx.h2.grpc.compliant']) {
    it(`${kind} at routers[0].service.responseClassifier.kind`, () => {
      assert.deepEqual(httpRouterLines({ responseClassifier: { kind } }), [`routers[0].service.responseClassifier.kind: ${onHttp(kind)}`]);
    });
  }

  it('inside io.prx.static configs, at configs[i], beside the other issues', () => {
    const lines = httpRouterLines({
      kind: 'io.prx.static',
      configs: [
        { prefix: '/svc/a', responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } },
        { prefix: '/svc/b', totalTimeoutMs: -1 },
        { prefix: '/svc/*', responseClassifier: { kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [14] } },
      ],
    });
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0] ?? '', /^routers\[0\]\.service\.configs\[1\]\.totalTimeoutMs: /);
    assert.equal(lines[1], `routers[0].service.configs[2].responseClassifier.kind: ${onHttp('io.prx.h2.grpc.retryableStatusCodes')}`);
  });

  it('still accepts its own kinds, inline and static', () => {
    assert.deepEqual(httpRouterLines({ responseClassifier: { kind: 'io.prx.http.retryableIdempotent5XX' } }), []);
    assert.deepEqual(httpRouterLines({ kind: 'io.prx.static', configs: [{ prefix: '/svc/*', responseClassifier: { kind: 'io.prx.http.allSuccessful' } }] }), []);
    assert.deepEqual(httpRouterLines({}), []);
  });

  it('reports an unknown kind as before', () => {
    const lines = httpRouterLines({ responseClassifier: { kind: 'io.prx.h2.grpc.sometimes' } });
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? '', /^routers\[0\]\.service\.responseClassifier\.kind: unknown responseClassifier kind "io\.prx\.h2\.grpc\.sometimes"/);
  });
});

describe('the refinement for h2 routers', () => {
  const h2Service = servicePolicy({ responseClassifier: responseClassifierSlot('h2').optional() });
  const issues = (service: unknown): string[] => {
    try {
      validate(h2Service, service);
    } catch (e) {
      if (e instanceof ConfigError) return e.lines;
      throw e;
    }
    return [];
  };

  it('refuses io.prx.http.* at the kind, inline and in static configs', () => {
    const [line] = issues({ responseClassifier: { kind: 'io.prx.http.retryableRead5XX' } });
    assert.match(line ?? '', /^responseClassifier\.kind: an http response classifier cannot classify h2 responses \(h2 kinds: .*io\.prx\.h2\.grpc\.default.*io\.prx\.h2\.nonRetryable5XX.*\), got "io\.prx\.http\.retryableRead5XX"$/);
    const [staticLine] = issues({ kind: 'io.prx.static', configs: [{ prefix: '/svc', responseClassifier: { kind: 'io.prx.http.allSuccessful' } }] });
    assert.match(staticLine ?? '', /^configs\[0\]\.responseClassifier\.kind: an http response classifier cannot classify h2 responses/);
  });

  it('accepts the h2 and gRPC kinds', () => {
    assert.deepEqual(issues({ responseClassifier: { kind: 'io.prx.h2.retryableRead5XX' } }), []);
    assert.deepEqual(issues({ responseClassifier: { kind: 'io.prx.h2.grpc.retryableStatusCodes', retryableStatusCodes: [4, 14] } }), []);
  });
});

describe('bin/prx --check (built)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'prx-classifier-family-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, service, path] of [
    ['inline', '    responseClassifier:\n      kind: io.prx.h2.retryableRead5XX\n', 'routers[0].service.responseClassifier.kind'],
    [
      'static',
      '    kind: io.prx.static\n    configs:\n    - prefix: /svc/a\n      responseClassifier: {kind: io.prx.http.nonRetryable5XX}\n    - prefix: /svc/*\n      responseClassifier: {kind: io.prx.h2.retryableRead5XX}\n',
      'routers[0].service.configs[1].responseClassifier.kind',
    ],
  ] as const) {
    it(`refuses an h2 classifier on an http router (${name}): exit 1, the key path, the value and the reason`, () => {
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, `routers:\n- protocol: http\n  dtab: /svc => /$/inet/127.1/8080\n  servers:\n  - port: 4999\n  service:\n${service}`);
      const run = spawnSync(join(REPO, 'bin', 'prx'), ['--check', file], { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
      assert.equal(run.status, 1, run.stderr);
      assert.equal(run.stderr, `prx: invalid configuration in ${file}:\n  ${path}: ${onHttp('io.prx.h2.retryableRead5XX')}\n`);
      assert.equal(run.stdout, '');
    });
  }

  it('passes the same router with an http classifier', () => {
    const file = join(dir, 'ok.yaml');
    writeFileSync(file, 'routers:\n- protocol: http\n  servers:\n  - port: 4999\n  service:\n    responseClassifier:\n      kind: io.prx.http.retryableRead5XX\n');
    const run = spawnSync(join(REPO, 'bin', 'prx'), ['--check', file], { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
    assert.equal(run.status, 0, run.stderr);
  });
});
