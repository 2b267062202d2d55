import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { balancerFromConfig, type Balancer } from '../../src/service/balancer/index.js';
import type { TestNode} from './helpers.js';
import { closedLoop, nodes, seeded, shares } from './helpers.js';

function heap(): Balancer<TestNode> {
  return balancerFromConfig({ kind: 'heap' }, { random: seeded(1) })<TestNode>();
}

/** Picks one node and counts the request on it, as a client would. */
function send(b: Balancer<TestNode>): TestNode {
  const n = b.pick() as TestNode;
  n.load++;
  return n;
}

describe('heap', () => {
  it('picks the least loaded node', () => {
    const b = heap();
    const set = nodes(1, 1, 1, 1);
    [3, 1, 2, 4].forEach((load, i) => ((set[i] as TestNode).load = load));
    b.update(set);
    assert.equal(send(b).key, 'n1'); // now 2, a tie with n2
    assert.equal(send(b).key, 'n2'); // ties go to the node picked least recently
    assert.equal(send(b).key, 'n1');
  });

  it('breaks ties by the least recent pick, then list order: idle traffic takes the nodes in turn', () => {
    const b = heap();
    b.update(nodes(1, 1, 1, 1, 1));
    assert.deepEqual(Array.from({ length: 10 }, () => b.pick()?.key), ['n0', 'n1', 'n2', 'n3', 'n4', 'n0', 'n1', 'n2', 'n3', 'n4']);
    assert.deepEqual(Array.from({ length: 7 }, () => send(b).key), ['n0', 'n1', 'n2', 'n3', 'n4', 'n0', 'n1']);
  });

  it('learns of completions through observe()', () => {
    const b = heap();
    b.update(nodes(1, 1, 1));
    const sent = [send(b), send(b), send(b), send(b)]; // n0 n1 n2 n0
    const done = sent[1] as TestNode;
    done.load--;
    b.observe(done, 3, false);
    assert.equal(send(b).key, 'n1');
  });

  it('notices a load change made elsewhere when the node is at the top', () => {
    const b = heap();
    const set = nodes(1, 1, 1);
    b.update(set);
    (set[0] as TestNode).load = 10; // e.g. another balancer over the same endpoint
    assert.equal(b.pick()?.key, 'n1');
  });

  it('finds a node that became available again within one pass over the set', () => {
    const b = heap();
    const set = nodes(1, 1, 1, 1, 1, 1);
    (set[0] as TestNode).available = false;
    b.update(set);
    for (let i = 0; i < 6; i++) send(b);
    (set[0] as TestNode).available = true;
    const picks = Array.from({ length: 6 }, () => send(b).key);
    assert.ok(picks.includes('n0'), `picks: ${picks.join(' ')}`);
  });

  it('keeps loads even across equal nodes under concurrency', () => {
    const b = heap();
    b.update(nodes(1, 1, 1));
    const counts = shares(closedLoop(b, 3000, 6));
    for (const share of Object.values(counts)) assert.ok(Math.abs(share - 1 / 3) < 0.01, JSON.stringify(counts));
  });

  it('keeps load per unit of weight even under concurrency', () => {
    const b = heap();
    b.update(nodes(1, 3));
    const counts = shares(closedLoop(b, 4000, 8));
    assert.ok(Math.abs((counts['n1'] as number) - 0.75) < 0.02, JSON.stringify(counts));
  });

  it('prefers the heavier of idle nodes', () => {
    const b = heap();
    b.update(nodes(1, 2, 1));
    assert.equal(b.pick()?.key, 'n1');
  });

  it('passes over unavailable nodes however lightly loaded', () => {
    const b = heap();
    const set = nodes(1, 1, 1);
    (set[1] as TestNode).load = 9;
    (set[2] as TestNode).load = 5;
    b.update(set);
    (set[0] as TestNode).available = false;
    assert.equal(send(b).key, 'n2');
    (set[2] as TestNode).available = false;
    assert.equal(send(b).key, 'n1');
  });
});
