import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import { TestNode, closedLoop, nodes, pickCounts, seeded, shares } from './helpers.js';

function p2c(random: () => number = seeded(7), extra: Record<string, unknown> = {}): Balancer<TestNode> {
  return balancerFromConfig({ kind: 'p2c', ...extra }, { random })<TestNode>();
}

function assertShares(actual: Record<string, number>, expected: Record<string, number>, tolerance: number): void {
  assert.deepEqual(Object.keys(actual), Object.keys(expected));
  for (const [k, v] of Object.entries(expected)) {
    const got = actual[k] as number;
    assert.ok(Math.abs(got - v) <= tolerance, `${k}: share ${got.toFixed(3)}, expected ${v} ± ${tolerance}`);
  }
}

describe('p2c', () => {
  it('of two nodes always takes the less loaded one', () => {
    const b = p2c();
    const [a, c] = nodes(1, 1) as [TestNode, TestNode];
    b.update([a, c]);
    a.load = 3;
    for (let i = 0; i < 100; i++) assert.equal(b.pick(), c);
    c.load = 4;
    for (let i = 0; i < 100; i++) assert.equal(b.pick(), a);
  });

  it('prefers less loaded nodes and never takes the most loaded of many', () => {
    const b = p2c();
    const set = nodes(...Array<number>(10).fill(1));
    set.forEach((n, i) => (n.load = i));
    b.update(set);
    const counts = pickCounts(b, 20000);
    assert.equal(counts.get('n9'), undefined);
    // The least loaded wins every pair it is in: 2/n of the picks (≈ 0.2).
    const share = (counts.get('n0') ?? 0) / 20000;
    assert.ok(Math.abs(share - 0.2) < 0.015, `n0 share ${share}`);
    for (let i = 1; i < 9; i++) assert.ok((counts.get(`n${i - 1}`) ?? 0) > (counts.get(`n${i}`) ?? 0), `n${i - 1} before n${i}`);
  });

  it('compares load per unit of weight', () => {
    const b = p2c();
    const light = new TestNode('light', 1);
    const heavy = new TestNode('heavy', 4);
    light.load = 1;
    heavy.load = 3; // 0.75 per unit of weight
    b.update([light, heavy]);
    for (let i = 0; i < 50; i++) assert.equal(b.pick(), heavy);
  });

  it('spreads idle picks in proportion to weights', () => {
    const b = p2c(seeded(11));
    b.update(nodes(1, 2, 3, 4));
    assertShares(shares(pickCounts(b, 40000)), { n0: 0.1, n1: 0.2, n2: 0.3, n3: 0.4 }, 0.01);
  });

  it('keeps loads in proportion to weights under sustained concurrency', () => {
    const b = p2c(seeded(5));
    b.update(nodes(1, 3));
    assertShares(shares(closedLoop(b, 20000, 16)), { n0: 0.25, n1: 0.75 }, 0.03);
  });

  it('with equal weights and loads spreads evenly', () => {
    const b = p2c(seeded(13));
    b.update(nodes(1, 1, 1, 1, 1));
    assertShares(shares(pickCounts(b, 25000)), { n0: 0.2, n1: 0.2, n2: 0.2, n3: 0.2, n4: 0.2 }, 0.015);
  });

  it('re-picks at most maxEffort times before scanning (random draws counted)', () => {
    for (const maxEffort of [1, 5]) {
      let draws = 0;
      const rng = seeded(3);
      const b = p2c(() => (draws++, rng()), { maxEffort });
      const set = nodes(1, 1, 1);
      for (const n of set) n.available = false;
      b.update(set);
      b.pick();
      // Each attempt draws two candidates; the scan finds nothing available and draws nothing.
      assert.equal(draws, 2 * (maxEffort + 1));
    }
  });

  it('prefers the available node of a pair even when it is more loaded', () => {
    const b = p2c();
    const [a, c] = nodes(1, 1) as [TestNode, TestNode];
    a.load = 100;
    c.available = false;
    b.update([a, c]);
    for (let i = 0; i < 20; i++) assert.equal(b.pick(), a);
  });
});
