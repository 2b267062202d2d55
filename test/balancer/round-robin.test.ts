import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import { TestNode, nodes, seeded } from './helpers.js';

function roundRobin(): Balancer<TestNode> {
  return balancerFromConfig({ kind: 'roundRobin' }, { random: seeded(1) })<TestNode>();
}

function sequence(b: Balancer<TestNode>, n: number): string {
  return Array.from({ length: n }, () => b.pick()?.key).join(' ');
}

describe('roundRobin', () => {
  it('cycles through the nodes in order', () => {
    const b = roundRobin();
    b.update(nodes(1, 1, 1));
    assert.equal(sequence(b, 7), 'n0 n1 n2 n0 n1 n2 n0');
  });

  it('ignores load', () => {
    const b = roundRobin();
    const set = nodes(1, 1);
    (set[0] as TestNode).load = 50;
    b.update(set);
    assert.equal(sequence(b, 4), 'n0 n1 n0 n1');
  });

  it('interleaves by weight', () => {
    const b = roundRobin();
    b.update(nodes(3, 1));
    assert.equal(sequence(b, 8), 'n0 n0 n0 n1 n0 n0 n0 n1');
    const c = roundRobin();
    c.update(nodes(0.5, 1.5, 1));
    const counts = new Map<string, number>();
    for (const k of sequence(c, 3000).split(' ')) counts.set(k, (counts.get(k) ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(counts), { n1: 1500, n2: 1000, n0: 500 });
  });

  it('skips unavailable nodes and goes on in turn', () => {
    const b = roundRobin();
    const set = nodes(1, 1, 1, 1);
    (set[1] as TestNode).available = false;
    b.update(set);
    assert.equal(sequence(b, 6), 'n0 n2 n3 n0 n2 n3');
  });

  it('keeps its place in the turn order across updates', () => {
    const b = roundRobin();
    const [a, c, d, e] = nodes(1, 1, 1, 1) as [TestNode, TestNode, TestNode, TestNode];
    b.update([a, c, d]);
    assert.equal(sequence(b, 2), 'n0 n1');
    b.update([e, a, c, d]);
    assert.equal(sequence(b, 4), 'n2 n3 n0 n1');
  });

  it('keeps credit for nodes that stay', () => {
    const b = roundRobin();
    const [heavy, light] = [new TestNode('h', 2), new TestNode('l', 1)];
    b.update([heavy, light]);
    assert.equal(sequence(b, 2), 'h h'); // l holds half a credit
    b.update([new TestNode('h', 2), new TestNode('l', 1)]);
    assert.equal(sequence(b, 3), 'l h h');
  });
});
