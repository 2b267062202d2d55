import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, clientParamDefaults, kindSlot, validate } from '../../src/config/index.js';
import { balancerFromConfig } from '../../src/service/balancer/index.js';
import type { TestNode} from './helpers.js';
import { nodes, seeded } from './helpers.js';

const slot = kindSlot('loadBalancer');

function linesOf(raw: unknown): string[] {
  try {
    validate(slot, raw);
  } catch (e) {
    if (e instanceof ConfigError) return e.lines;
    throw e;
  }
  assert.fail('expected a ConfigError');
}

describe('loadBalancer kinds: schemas', () => {
  it('fill their defaults', () => {
    assert.deepEqual(validate(slot, { kind: 'p2c' }), { kind: 'p2c', enableProbation: false, maxEffort: 5 });
    assert.deepEqual(validate(slot, { kind: 'ewma' }), { kind: 'ewma', enableProbation: false, maxEffort: 5, decayTimeMs: 10000 });
    assert.deepEqual(validate(slot, { kind: 'aperture' }), {
      kind: 'aperture',
      enableProbation: false,
      maxEffort: 5,
      smoothWindowMs: 5000,
      lowLoad: 0.5,
      highLoad: 2,
      minAperture: 1,
    });
    assert.deepEqual(validate(slot, { kind: 'heap' }), { kind: 'heap', enableProbation: false });
    assert.deepEqual(validate(slot, { kind: 'roundRobin', enableProbation: true }), { kind: 'roundRobin', enableProbation: true, maxEffort: 5 });
  });

  it('re-validate their own output unchanged', () => {
    for (const kind of ['p2c', 'ewma', 'aperture', 'heap', 'roundRobin']) {
      const once = validate(slot, { kind });
      assert.deepEqual(validate(slot, once), once);
    }
  });

  it('reject unknown keys, naming the known ones', () => {
    assert.deepEqual(linesOf({ kind: 'heap', maxEffort: 3 }), ['maxEffort: unknown key (known keys: kind, experimental, enableProbation)']);
    assert.deepEqual(linesOf({ kind: 'p2c', decayTimeMs: 5 }), ['decayTimeMs: unknown key (known keys: kind, experimental, enableProbation, maxEffort)']);
  });

  it('reject bad values with the reason and the value', () => {
    assert.deepEqual(linesOf({ kind: 'p2c', maxEffort: 0 }), ['maxEffort: expected a positive integer, got 0']);
    assert.deepEqual(linesOf({ kind: 'ewma', decayTimeMs: 1.5, enableProbation: 'yes' }), [
      'enableProbation: expected true or false, got "yes"',
      'decayTimeMs: expected a positive integer, got 1.5',
    ]);
    assert.deepEqual(linesOf({ kind: 'aperture', lowLoad: -1, minAperture: 0 }), [
      'lowLoad: must be at least 0, got -1',
      'minAperture: expected a positive integer, got 0',
    ]);
    assert.deepEqual(linesOf({ kind: 'aperture', lowLoad: 3 }), ['lowLoad: must be less than highLoad (2), got 3']);
    assert.deepEqual(linesOf({ kind: 'roundRobin', maxEffort: '5' }), ['maxEffort: expected a positive integer, got "5"']);
  });

  it('reject unknown kinds, listing the built-in ones', () => {
    assert.deepEqual(linesOf({ kind: 'leastConn' }), ['kind: unknown loadBalancer kind "leastConn" (known kinds: aperture, ewma, heap, p2c, roundRobin)']);
  });

  it("accept the client parameters' default", () => {
    assert.deepEqual(validate(slot, clientParamDefaults.loadBalancer), { kind: 'p2c', enableProbation: false, maxEffort: 5 });
  });
});

describe('balancerFromConfig', () => {
  const trace = (cfg: Parameters<typeof balancerFromConfig>[0]): string[] => {
    const b = balancerFromConfig(cfg, { random: seeded(4) })<TestNode>();
    b.update(nodes(1, 1, 1, 1, 1, 1));
    return Array.from({ length: 30 }, () => (b.pick() as TestNode).key);
  };

  it('defaults to p2c', () => {
    assert.deepEqual(trace(undefined), trace({ kind: 'p2c' }));
    assert.notDeepEqual(trace(undefined), trace({ kind: 'roundRobin' }));
    assert.notDeepEqual(trace(undefined), trace({ kind: 'heap' }));
  });

  it('throws a ConfigError for an invalid config', () => {
    assert.throws(
      () => balancerFromConfig({ kind: 'nope' }),
      (e: unknown) => e instanceof ConfigError && e.code === 'PRX_ERR_CONFIG_UNKNOWN_KIND' && /unknown loadBalancer kind "nope"/.test(e.message),
    );
    assert.throws(() => balancerFromConfig({ kind: 'p2c', maxEffort: -1 }), /maxEffort: expected a positive integer, got -1/);
  });
});
