// The Balancer contract, checked for every built-in kind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import { TestClock, TestNode, nodes, pickCounts, seeded } from './helpers.js';

const KINDS = ['p2c', 'ewma', 'aperture', 'heap', 'roundRobin'] as const;

function make(kind: string, extra: Record<string, unknown> = {}, seed = 1): Balancer<TestNode> {
  const clock = new TestClock();
  return balancerFromConfig({ kind, ...extra }, { random: seeded(seed), now: clock.read })<TestNode>();
}

for (const kind of KINDS) {
  describe(`${kind}: the balancer contract`, () => {
    it('has nothing to pick from an empty set, then picks from what update() gives', () => {
      const b = make(kind);
      assert.equal(b.pick(), undefined);
      assert.equal(b.size, 0);
      assert.equal(b.available, 0);
      const [only] = nodes(1);
      b.update([only as TestNode]);
      assert.equal(b.pick(), only);
      assert.equal(b.size, 1);
      assert.deepEqual(b.nodes, [only]);
      b.update([]);
      assert.equal(b.pick(), undefined);
    });

    it('skips unavailable nodes', () => {
      // Aperture starts with a one-node window; a wide minimum makes it sample the whole set.
      const b = make(kind, kind === 'aperture' ? { minAperture: 10 } : {});
      const set = nodes(1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
      for (const n of set.slice(0, 7)) n.available = false;
      b.update(set);
      assert.equal(b.size, 10);
      assert.equal(b.available, 3);
      const picked = [...pickCounts(b, 3000).keys()].sort();
      assert.deepEqual(picked, ['n7', 'n8', 'n9']);
    });

    it('still returns a node when none is available (fail open)', () => {
      const b = make(kind);
      const set = nodes(1, 1, 1);
      for (const n of set) n.available = false;
      b.update(set);
      assert.equal(b.available, 0);
      for (let i = 0; i < 50; i++) assert.ok(set.includes(b.pick() as TestNode));
    });

    it('finds the one available node among many unavailable ones', () => {
      const b = make(kind, kind === 'aperture' ? { minAperture: 3 } : {});
      const set = nodes(...Array<number>(50).fill(1));
      for (const n of set) n.available = n.key === 'n31';
      b.update(set);
      for (let i = 0; i < 200; i++) assert.equal(b.pick()?.key, 'n31');
    });

    it('never picks nodes removed by update() (probation off) and counts what is left', () => {
      const b = make(kind);
      const [a, c, d] = nodes(1, 1, 1) as [TestNode, TestNode, TestNode];
      b.update([a, c, d]);
      b.update([a, d]);
      assert.equal(b.size, 2);
      assert.deepEqual(b.nodes, [a, d].filter((n) => b.nodes.includes(n)));
      assert.ok(!pickCounts(b, 500).has(c.key));
    });

    it('keeps one node per key; the first occurrence wins', () => {
      const b = make(kind);
      const first = new TestNode('h:1');
      const second = new TestNode('h:1');
      b.update([first, second]);
      assert.equal(b.size, 1);
      assert.equal(b.pick(), first);
    });

    it('takes the new object for a key that stays', () => {
      const b = make(kind);
      b.update([new TestNode('h:1')]);
      const replacement = new TestNode('h:1');
      b.update([replacement]);
      assert.equal(b.pick(), replacement);
    });

    it('sends no traffic to a weight-0 node while a weighted one is available', () => {
      const b = make(kind);
      b.update([new TestNode('zero', 0), new TestNode('one', 1), new TestNode('zero2', 0)]);
      assert.deepEqual([...pickCounts(b, 500).keys()], ['one']);
    });

    it('ignores observations of nodes that left the set', () => {
      const b = make(kind);
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      b.update([a]);
      b.observe(c, 5, true);
      assert.equal(b.pick(), a);
    });

    it('each factory call makes an independent balancer', () => {
      const factory = balancerFromConfig({ kind }, { random: seeded(3) });
      const one = factory<TestNode>();
      const two = factory<TestNode>();
      one.update(nodes(1, 1));
      assert.equal(one.size, 2);
      assert.equal(two.size, 0);
      assert.equal(two.pick(), undefined);
    });
  });

  describe(`${kind}: probation`, () => {
    it('keeps a node removed by update() while it is available, then drops it when it is not', () => {
      const b = make(kind, { enableProbation: true });
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      b.update([a]);
      assert.equal(b.size, 2, 'removed node stays on probation');
      assert.equal(b.available, 2);
      assert.ok(b.nodes.includes(c));
      c.available = false;
      assert.equal(b.size, 1, 'dropped once found unavailable');
      assert.deepEqual(b.nodes, [a]);
      c.available = true;
      assert.equal(b.size, 1, 'a dropped node does not come back by itself');
      assert.ok(!pickCounts(b, 200).has(c.key));
    });

    it('drops a probation node that a pick finds unavailable', () => {
      const b = make(kind, { enableProbation: true, ...(kind === 'aperture' ? { minAperture: 2 } : {}) });
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      b.update([a]);
      a.available = false;
      c.available = false;
      // Nothing available: the pick fails open on a discovered node, never on the probation one.
      for (let i = 0; i < 20; i++) assert.equal(b.pick(), a);
      assert.deepEqual(b.nodes, [a]);
    });

    it('has no nodes at all once every remaining node was on probation and died', () => {
      const b = make(kind, { enableProbation: true });
      const [a] = nodes(1) as [TestNode];
      b.update([a]);
      b.update([]);
      assert.equal(b.pick(), a);
      a.available = false;
      assert.equal(b.pick(), undefined);
      assert.equal(b.size, 0);
    });

    it('an unavailable node removed by update() is dropped at once', () => {
      const b = make(kind, { enableProbation: true });
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      c.available = false;
      b.update([a]);
      assert.deepEqual(b.nodes, [a]);
    });

    it('a probation node that discovery lists again is a regular node', () => {
      const b = make(kind, { enableProbation: true });
      const [a, c] = nodes(1, 1) as [TestNode, TestNode];
      b.update([a, c]);
      b.update([a]);
      b.update([a, c]);
      assert.equal(b.size, 2);
      c.available = false;
      assert.equal(b.size, 2, 'no longer on probation: kept while unavailable');
    });

    it('probation survives further updates that still leave the node out', () => {
      const b = make(kind, { enableProbation: true });
      const [a, c, d] = nodes(1, 1, 1) as [TestNode, TestNode, TestNode];
      b.update([a, c]);
      b.update([a]);
      b.update([a, d]);
      assert.equal(b.size, 3);
      assert.ok(b.nodes.includes(c));
    });
  });
}
