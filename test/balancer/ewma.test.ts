import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import { TestClock, TestNode, nodes, seeded } from './helpers.js';

function ewma(clock: TestClock, decayTimeMs = 1000, seed = 9): Balancer<TestNode> {
  return balancerFromConfig({ kind: 'ewma', decayTimeMs }, { random: seeded(seed), now: clock.read })<TestNode>();
}

describe('ewma', () => {
  it('prefers the node that answered faster', () => {
    const clock = new TestClock();
    const b = ewma(clock);
    const [fast, slow] = nodes(1, 1) as [TestNode, TestNode];
    b.update([fast, slow]);
    b.observe(fast, 10, false);
    b.observe(slow, 100, false);
    for (let i = 0; i < 50; i++) assert.equal(b.pick(), fast);
  });

  it('weighs latency by outstanding requests + 1', () => {
    const clock = new TestClock();
    const b = ewma(clock);
    const [fast, slow] = nodes(1, 1) as [TestNode, TestNode];
    b.update([fast, slow]);
    b.observe(fast, 10, false);
    b.observe(slow, 30, false);
    fast.load = 3; // 10 × 4 = 40 > 30 × 1
    for (let i = 0; i < 20; i++) assert.equal(b.pick(), slow);
  });

  it('sends most traffic to the fastest node even when no load builds up', () => {
    // One request at a time: loads are always 0, so only latency tells the nodes apart
    // (p2c would split evenly here).
    const clock = new TestClock();
    const b = ewma(clock, 10_000);
    b.update(nodes(1, 1, 1, 1));
    const counts = new Map<string, number>();
    for (let i = 0; i < 20000; i++) {
      const n = b.pick() as TestNode;
      const latency = n.key === 'n2' ? 2 : 20;
      clock.now += latency;
      b.observe(n, latency, false);
      counts.set(n.key, (counts.get(n.key) ?? 0) + 1);
    }
    // p2c caps a node at the pairs it is drawn into: 1/2 of them with four nodes.
    const fastShare = (counts.get('n2') ?? 0) / 20000;
    assert.ok(fastShare > 0.45, `fast node share ${fastShare}`);
    for (const k of ['n0', 'n1', 'n3']) assert.ok((counts.get(k) ?? 0) / 20000 < 0.2, `${k} share`);
  });

  it('jumps to a slow peak at once and lets it fade over the decay time', () => {
    const clock = new TestClock();
    const b = ewma(clock, 1000);
    const [a, c] = nodes(1, 1) as [TestNode, TestNode];
    b.update([a, c]);
    b.observe(a, 10, false);
    b.observe(c, 20, false);
    assert.equal(b.pick(), a);
    clock.now = 1;
    b.observe(a, 1000, false);
    const picks: string[] = [];
    for (let step = 1; step <= 5; step++) {
      clock.now = 1 + step * 1000;
      b.observe(a, 10, false);
      b.observe(c, 20, false);
      picks.push((b.pick() as TestNode).key);
    }
    // a: 1000·e^(−k) + 10·(1 − e^(−k)) = 374, 145, 61, 28, then 16.7 < 20
    assert.deepEqual(picks, ['n1', 'n1', 'n1', 'n1', 'n0']);
  });

  it('ranks a node with requests in flight but no latency yet after measured ones', () => {
    const clock = new TestClock();
    const b = ewma(clock);
    const [measured, fresh] = nodes(1, 1) as [TestNode, TestNode];
    b.update([measured, fresh]);
    b.observe(measured, 5000, false);
    fresh.load = 1;
    for (let i = 0; i < 20; i++) assert.equal(b.pick(), measured);
    fresh.load = 0; // idle and unmeasured: cost 0, worth probing
    for (let i = 0; i < 20; i++) assert.equal(b.pick(), fresh);
  });

  it('does not let a fast failure make a node look fast', () => {
    for (const failed of [false, true]) {
      const clock = new TestClock();
      const b = ewma(clock, 1000);
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      b.observe(a, 100, false);
      b.observe(c, 50, false);
      clock.now = 1000;
      b.observe(c, 50, false);
      b.observe(a, 1, failed); // success: 100·e^(−1) + 1·(1 − e^(−1)) ≈ 37 < 50
      assert.equal(b.pick(), failed ? c : a, `failed=${failed}`);
    }
  });

  it('keeps latency history for nodes that stay across updates', () => {
    const clock = new TestClock();
    const b = ewma(clock);
    b.update([new TestNode('a'), new TestNode('b')]);
    b.observe(new TestNode('a'), 100, false);
    b.observe(new TestNode('b'), 10, false);
    const [a, c] = [new TestNode('a'), new TestNode('b')];
    b.update([a, c]);
    for (let i = 0; i < 50; i++) assert.equal(b.pick(), c);
  });
});
