// What every balancer kind shares: the endpoint set and its per-key state across updates,
// probation, weighted random sampling, and the pick loop (maxEffort re-picks, then a scan for an
// available node, then fail open). Kinds supply one pick and, optionally, a cost and hooks.
import type { Balancer, BalancerNode } from './types.js';

/** One node in a balancer's set, with the kind's state for it (kept while the key stays). */
export interface Entry<N extends BalancerNode, S> {
  readonly node: N;
  readonly state: S;
  /** Removed by discovery but kept while available (enableProbation). */
  readonly probation: boolean;
  /** The node's weight as sampled: 0 for a weight that is not a finite number > 0. */
  readonly weight: number;
}

/** Options every balancer takes. */
export interface BaseOptions {
  /** Re-picks when a pick lands on an unavailable node, before scanning for an available one. */
  readonly maxEffort: number;
  readonly enableProbation: boolean;
  readonly random: () => number;
}

function usableWeight(weight: number): number {
  return Number.isFinite(weight) && weight > 0 ? weight : 0;
}

export abstract class BaseBalancer<N extends BalancerNode, S> implements Balancer<N> {
  protected readonly random: () => number;
  readonly #maxEffort: number;
  readonly #probationEnabled: boolean;
  /** Pick order: the discovered nodes in update order, then nodes on probation (kinds may reorder). */
  protected entries: Entry<N, S>[] = [];
  #nodes: N[] = [];
  #indexByKey = new Map<string, number>();
  /** Prefix sums of entry weights in pick order, for weighted sampling. */
  #cum = new Float64Array(0);
  #probationCount = 0;

  constructor(opts: BaseOptions) {
    this.random = opts.random;
    this.#maxEffort = opts.maxEffort;
    this.#probationEnabled = opts.enableProbation;
  }

  /** State for a node whose key is new to the set. */
  protected abstract newState(node: N): S;

  /** One pick, an index into `entries` (non-empty); it may land on an unavailable node. */
  protected abstract pickIndex(): number;

  /** Lower is better; p2c-style kinds compare two candidates by it. Default: load per weight. */
  protected cost(i: number): number {
    const e = this.entries[i] as Entry<N, S>;
    return e.weight > 0 ? e.node.load / e.weight : Infinity;
  }

  /** Orders fresh entries before indexes are built (default: keep update order). */
  protected arrange(_entries: Entry<N, S>[]): void {}

  /** Called after the set or its order changed and the base indexes are rebuilt. */
  protected rebuilt(): void {}

  /** Called with the index of the node `pick()` returns. */
  protected picked(_i: number): void {}

  /** A request completed; `i` is the node's index, or -1 when it has left the set since. */
  protected observed(_i: number, _node: N, _latencyMs: number, _failed: boolean): void {}

  update(nodes: readonly N[]): void {
    const next: Entry<N, S>[] = [];
    const seen = new Set<string>();
    for (const node of nodes) {
      // A key given twice is one endpoint; the first occurrence wins.
      if (seen.has(node.key)) continue;
      seen.add(node.key);
      const old = this.#entryOf(node.key);
      next.push({ node, state: old === undefined ? this.newState(node) : old.state, probation: false, weight: usableWeight(node.weight) });
    }
    if (this.#probationEnabled) {
      for (const e of this.entries) {
        if (seen.has(e.node.key) || !e.node.available) continue;
        next.push(e.probation ? e : { ...e, probation: true });
      }
    }
    this.arrange(next);
    this.#install(next);
  }

  pick(): N | undefined {
    if (this.entries.length === 0) return undefined;
    let last = -1;
    for (let attempt = 0; attempt <= this.#maxEffort; attempt++) {
      const i = this.pickIndex();
      const e = this.entries[i] as Entry<N, S>;
      if (e.node.available) return this.#choose(i);
      last = i;
      if (e.probation) {
        // Found unavailable: a probation node leaves the set now.
        this.#sweepProbation();
        if (this.entries.length === 0) return undefined;
        last = -1;
      }
    }
    const j = this.pickAvailableIndex();
    if (j >= 0) return this.#choose(j);
    // Nothing is available: fail open, the client fails the request on this node.
    return this.#choose(last >= 0 ? last : this.pickIndex());
  }

  observe(node: N, latencyMs: number, failed: boolean): void {
    const i = this.#indexByKey.get(node.key);
    this.observed(i ?? -1, node, latencyMs, failed);
  }

  get size(): number {
    this.#sweepProbation();
    return this.entries.length;
  }

  get available(): number {
    this.#sweepProbation();
    let n = 0;
    for (const e of this.entries) if (e.node.available) n++;
    return n;
  }

  get nodes(): readonly N[] {
    this.#sweepProbation();
    return this.#nodes;
  }

  /** The index of the node with `key`, if it is in the set. */
  protected indexOf(key: string): number | undefined {
    return this.#indexByKey.get(key);
  }

  /** Re-installs `entries` after a kind changed their order (rebuilds indexes, calls `rebuilt`). */
  protected reordered(entries: Entry<N, S>[]): void {
    this.#install(entries);
  }

  /**
   * Fallback when maxEffort picks all landed on unavailable nodes: an available node, or -1 when
   * none is. Default: two weighted draws among available nodes, the lower cost wins (O(n)).
   */
  protected pickAvailableIndex(): number {
    let total = 0;
    let count = 0;
    for (const e of this.entries) {
      if (!e.node.available) continue;
      total += e.weight;
      count++;
    }
    if (count === 0) return -1;
    const a = this.#drawAvailable(-1, total, count);
    if (count === 1) return a;
    const wa = (this.entries[a] as Entry<N, S>).weight;
    const b = this.#drawAvailable(a, total - wa, count - 1);
    return this.cost(b) < this.cost(a) ? b : a;
  }

  /**
   * Power of two choices among the first `limit` entries: two distinct weighted draws; an
   * available node beats an unavailable one, else the lower cost wins (the first on a tie, so
   * idle nodes are chosen in proportion to their weights).
   */
  protected p2cIndex(limit: number): number {
    if (limit <= 1) return 0;
    const a = this.sample(limit);
    const b = this.sampleOther(a, limit);
    const na = (this.entries[a] as Entry<N, S>).node;
    const nb = (this.entries[b] as Entry<N, S>).node;
    if (na.available !== nb.available) return na.available ? a : b;
    return this.cost(b) < this.cost(a) ? b : a;
  }

  /** A weighted random index in `[0, limit)`; uniform when all weights there are 0. */
  protected sample(limit: number): number {
    const total = this.#cum[limit - 1] as number;
    if (!(total > 0)) return Math.min(limit - 1, Math.floor(this.random() * limit));
    return this.#search(this.random() * total, limit);
  }

  /** A weighted random index in `[0, limit)` other than `a` (limit ≥ 2). */
  protected sampleOther(a: number, limit: number): number {
    const wa = (this.entries[a] as Entry<N, S>).weight;
    const total = (this.#cum[limit - 1] as number) - wa;
    let b: number;
    if (!(total > 1e-12)) {
      b = Math.min(limit - 2, Math.floor(this.random() * (limit - 1)));
      if (b >= a) b++;
      return b;
    }
    // Draw over the weight line with `a`'s stretch cut out, then step over it.
    let r = this.random() * total;
    if (r >= (this.#cum[a] as number) - wa) r += wa;
    b = this.#search(r, limit);
    return b === a ? (a + 1) % limit : b;
  }

  /** The smallest index whose prefix sum exceeds `r`, within `[0, limit)`. */
  #search(r: number, limit: number): number {
    const cum = this.#cum;
    let lo = 0;
    let hi = limit - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cum[mid] as number) > r) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** A weighted draw among available entries other than `skip` (whose count and weight are given). */
  #drawAvailable(skip: number, total: number, count: number): number {
    const byWeight = total > 1e-12;
    let r = byWeight ? this.random() * total : Math.floor(this.random() * count);
    let lastSeen = -1;
    for (let i = 0; i < this.entries.length; i++) {
      const e = this.entries[i] as Entry<N, S>;
      if (i === skip || !e.node.available) continue;
      if (byWeight) {
        if (e.weight === 0) continue;
        lastSeen = i;
        if (r < e.weight) return i;
        r -= e.weight;
      } else {
        lastSeen = i;
        if (r-- <= 0) return i;
      }
    }
    // Floating-point rounding can run past the end; the last candidate is the right answer.
    return lastSeen;
  }

  #choose(i: number): N {
    this.picked(i);
    return (this.entries[i] as Entry<N, S>).node;
  }

  #entryOf(key: string): Entry<N, S> | undefined {
    const i = this.#indexByKey.get(key);
    return i === undefined ? undefined : this.entries[i];
  }

  /** Drops probation nodes that became unavailable. */
  #sweepProbation(): void {
    if (this.#probationCount === 0) return;
    let dead = false;
    for (const e of this.entries) if (e.probation && !e.node.available) dead = true;
    if (dead) this.#install(this.entries.filter((e) => !e.probation || e.node.available));
  }

  #install(entries: Entry<N, S>[]): void {
    this.entries = entries;
    this.#nodes = entries.map((e) => e.node);
    this.#indexByKey = new Map();
    this.#cum = new Float64Array(entries.length);
    let sum = 0;
    let probation = 0;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as Entry<N, S>;
      this.#indexByKey.set(e.node.key, i);
      sum += e.weight;
      this.#cum[i] = sum;
      if (e.probation) probation++;
    }
    this.#probationCount = probation;
    this.rebuilt();
  }
}
