// Nodes and a seeded random source for balancer tests.
import type { Balancer, BalancerNode } from '../../src/service/balancer/index.js';

/** A seeded PRNG (mulberry32): the same seed gives the same sequence, values in [0, 1). */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A node whose load and availability the test sets, as a client would. */
export class TestNode implements BalancerNode {
  readonly key: string;
  readonly weight: number;
  load = 0;
  available = true;

  constructor(key: string, weight = 1) {
    this.key = key;
    this.weight = weight;
  }
}

/** Nodes `n0`, `n1`, … with the given weights. */
export function nodes(...weights: number[]): TestNode[] {
  return weights.map((w, i) => new TestNode(`n${i}`, w));
}

/** How often each key is picked in `count` picks (loads untouched: open loop). */
export function pickCounts(b: Balancer<TestNode>, count: number): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const n = b.pick();
    if (n === undefined) throw new Error('pick() returned undefined');
    out.set(n.key, (out.get(n.key) ?? 0) + 1);
  }
  return out;
}

/**
 * A closed loop: `concurrency` requests always in flight; each step completes the oldest request
 * (load − 1, observed with `latencyOf(node)`) and picks for a new one (load + 1). Returns picks per key.
 */
export function closedLoop(
  b: Balancer<TestNode>,
  steps: number,
  concurrency: number,
  latencyOf: (n: TestNode) => number = () => 1,
): Map<string, number> {
  const inFlight: TestNode[] = [];
  const out = new Map<string, number>();
  for (let i = 0; i < steps; i++) {
    if (inFlight.length >= concurrency) {
      const done = inFlight.shift() as TestNode;
      done.load--;
      b.observe(done, latencyOf(done), false);
    }
    const n = b.pick();
    if (n === undefined) throw new Error('pick() returned undefined');
    n.load++;
    inFlight.push(n);
    out.set(n.key, (out.get(n.key) ?? 0) + 1);
  }
  return out;
}

/** `count / total` per key of `counts`. */
export function shares(counts: Map<string, number>): Record<string, number> {
  let total = 0;
  for (const c of counts.values()) total += c;
  const out: Record<string, number> = {};
  for (const [k, c] of [...counts].sort(([a], [b]) => (a < b ? -1 : 1))) out[k] = c / total;
  return out;
}

/** A manual clock in ms. */
export class TestClock {
  now = 0;
  readonly read = (): number => this.now;
}
