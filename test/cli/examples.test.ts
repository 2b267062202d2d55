// Every example config under examples/ passes the built executables' `--check` with no lint
// finding (resolver-*.yaml are prx-resolver configs, the rest prx's), and every examples/ path
// the README names exists, so neither rots. Run after `npm run build`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const configs = readdirSync(join(REPO, 'examples'))
  .filter((f) => f.endsWith('.yaml') || f.endsWith('.json'))
  .sort();

describe('examples/', () => {
  test('there is an example per feature', () => {
    for (const name of ['prx.yaml', 'routing.yaml', 'dtab-canary-failover.yaml', 'tls.yaml', 'telemetry.yaml', 'access-log.yaml',
      'announcers.yaml', 'service-discovery.yaml', 'resolver-in-memory.yaml', 'resolver-etcd.yaml', 'resolver-zk.yaml', 'proxy-via-resolver.yaml']) {
      assert.ok(configs.includes(name), `examples/${name}`);
    }
  });

  for (const name of configs) {
    const executable = name.startsWith('resolver-') ? 'prx-resolver' : 'prx';
    test(`bin/${executable} --check examples/${name}: valid, no warnings`, () => {
      const r = spawnSync(join(REPO, 'bin', executable), ['--check', join('examples', name)], { cwd: REPO, encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr, '');
      assert.equal(typeof JSON.parse(r.stdout), 'object');
    });
  }

  test('every examples/ path the README and the examples name exists', () => {
    const texts = [readFileSync(join(REPO, 'README.md'), 'utf8'), ...configs.map((c) => readFileSync(join(REPO, 'examples', c), 'utf8'))];
    const paths = new Set(texts.flatMap((t) => [...t.matchAll(/\bexamples\/[\w./-]*[\w-]/g)].map((m) => m[0])));
    // Written by examples/tls/make-certs.sh, not kept in git.
    const generated = (p: string): boolean => p.startsWith('examples/tls/') && p.endsWith('.pem');
    const missing = [...paths].filter((p) => !generated(p) && !existsSync(join(REPO, p)));
    assert.deepEqual(missing, []);
    assert.ok(paths.size >= 10, [...paths].join(' '));
  });
});
