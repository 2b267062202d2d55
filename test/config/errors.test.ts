import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, formatIssue, showPath, showValue } from '../../src/config/index.js';

describe('issue formatting', () => {
  it('shows key paths in JavaScript notation', () => {
    assert.equal(showPath(['routers', 0, 'servers', 1, 'port']), 'routers[0].servers[1].port');
    assert.equal(showPath(['labels', 'app.kubernetes.io/name']), 'labels["app.kubernetes.io/name"]');
    assert.equal(showPath([2, 'x']), '[2].x');
  });

  it('shows values as JSON, truncated when long', () => {
    assert.equal(showValue('abc'), '"abc"');
    assert.equal(showValue({ a: [1, null] }), '{"a":[1,null]}');
    assert.equal(showValue(Number.POSITIVE_INFINITY), 'Infinity');
    const long = showValue('x'.repeat(100));
    assert.equal(long, `"${'x'.repeat(58)}…`);
    assert.equal(long.length, 60);
  });

  it('formats one line per issue: path, reason, offending value', () => {
    assert.equal(formatIssue({ path: ['a', 0], message: 'expected a string', value: 5 }), 'a[0]: expected a string, got 5');
    assert.equal(formatIssue({ path: ['a'], message: 'required key is missing' }), 'a: required key is missing');
    assert.equal(formatIssue({ path: [], message: 'the configuration is empty' }), 'the configuration is empty');
  });
});

describe('ConfigError', () => {
  it('takes the common specific code, else PRX_ERR_CONFIG_INVALID', () => {
    const ports = { path: ['admin'], message: 'p', code: 'PRX_ERR_CONFIG_CONFLICTING_PORTS' } as const;
    assert.equal(new ConfigError([ports, ports]).code, 'PRX_ERR_CONFIG_CONFLICTING_PORTS');
    assert.equal(new ConfigError([ports, { path: ['x'], message: 'm' }]).code, 'PRX_ERR_CONFIG_INVALID');
  });

  it('lists the issues under a heading naming the origin', () => {
    const e = new ConfigError([{ path: ['a'], message: 'm1' }, { path: ['b'], message: 'm2', value: 'v' }]);
    assert.equal(e.message, 'invalid configuration:\n  a: m1\n  b: m2, got "v"');
    const named = e.withOrigin('prx.yaml');
    assert.equal(named.message, 'invalid configuration in prx.yaml:\n  a: m1\n  b: m2, got "v"');
    assert.deepEqual(named.lines, ['a: m1', 'b: m2, got "v"']);
    assert.equal(named.name, 'ConfigError');
  });
});
