import { z } from 'zod';
import { BaseBalancer, type Entry } from './base.js';
import { balancerShape, baseOptions, defineBalancer } from './kind.js';
import type { BalancerNode } from './types.js';
import { lazySchema } from '../../config/index.js';

/**
 * `heap`: always the least loaded node, kept at the top of a binary min-heap (Finagle's
 * `HeapBalancer`). Load is `(outstanding + 1) / weight`, the load a node would carry with this
 * request, so idle nodes are ordered by weight and busy ones by load per weight. Unavailable nodes
 * sink to the bottom. Equal loads go to the node picked least recently (Finagle sinks a picked
 * node below its equals), so idle traffic takes the nodes in turn.
 */
export const heapSchema = lazySchema(() => z.strictObject({ ...balancerShape('heap') }));

/** A validated `heap` config. */
export type HeapConfig = z.output<typeof heapSchema>;

// Available nodes with weight 0 rank below every weighted one but above unavailable ones.
const UNWEIGHTED = Number.MAX_VALUE;

/** When the node was last picked (a pick sequence number; 0: never), kept while its key stays. */
interface LastPick {
  seq: number;
}

function loadKey(e: Entry<BalancerNode, LastPick>): number {
  if (!e.node.available) return Infinity;
  return e.weight > 0 ? (e.node.load + 1) / e.weight : UNWEIGHTED;
}

/**
 * Loads change outside the balancer (the client counts them), so heap keys are snapshots. A node's
 * key is refreshed when the balancer learns its load moved (it was picked or observed), when it
 * reaches the top, and in a rotating sweep of one node per pick, which bounds any staleness (e.g.
 * a node that became available again) to one pass over the set.
 */
class HeapBalancer<N extends BalancerNode> extends BaseBalancer<N, LastPick> {
  /** Heap of entry indexes; `#pos` maps an entry index to its heap slot. */
  #heap = new Int32Array(0);
  #pos = new Int32Array(0);
  #keys = new Float64Array(0);
  /** Entry indexes whose load changed since the last pick; `#isDirty` dedups them. */
  #dirty = new Int32Array(0);
  #isDirty = new Uint8Array(0);
  #dirtyCount = 0;
  #sweep = 0;
  #picks = 0;

  protected newState(): LastPick {
    return { seq: 0 };
  }

  protected override rebuilt(): void {
    const n = this.entries.length;
    this.#heap = new Int32Array(n);
    this.#pos = new Int32Array(n);
    this.#keys = new Float64Array(n);
    this.#dirty = new Int32Array(n);
    this.#isDirty = new Uint8Array(n);
    this.#dirtyCount = 0;
    this.#sweep = 0;
    for (let i = 0; i < n; i++) {
      this.#heap[i] = i;
      this.#pos[i] = i;
      this.#keys[i] = loadKey(this.entries[i] as Entry<N, LastPick>);
    }
    for (let slot = (n >>> 1) - 1; slot >= 0; slot--) this.#down(slot);
  }

  protected pickIndex(): number {
    const n = this.entries.length;
    for (let d = 0; d < this.#dirtyCount; d++) {
      const i = this.#dirty[d] as number;
      this.#isDirty[i] = 0;
      // Forced: a pick moves the node below its equals even when its load is back where it was.
      this.#refresh(i, true);
    }
    this.#dirtyCount = 0;
    this.#refresh(this.#sweep);
    this.#sweep = (this.#sweep + 1) % n;
    // The top's snapshot may be stale; each refresh settles one node, so n rounds suffice.
    for (let round = 0; round < n; round++) {
      const top = this.#heap[0] as number;
      if (!this.#refresh(top)) return top;
    }
    return this.#heap[0] as number;
  }

  /** Without an available top, scan every node's current load (snapshots may be stale). */
  protected override pickAvailableIndex(): number {
    let best = -1;
    let bestKey = Infinity;
    for (let i = 0; i < this.entries.length; i++) {
      const k = loadKey(this.entries[i] as Entry<N, LastPick>);
      if (k < bestKey) {
        best = i;
        bestKey = k;
      }
    }
    return best;
  }

  protected override picked(i: number): void {
    (this.entries[i] as Entry<N, LastPick>).state.seq = ++this.#picks;
    this.#markDirty(i);
  }

  protected override observed(i: number): void {
    if (i >= 0) this.#markDirty(i);
  }

  #markDirty(i: number): void {
    if (this.#isDirty[i] === 1) return;
    this.#isDirty[i] = 1;
    this.#dirty[this.#dirtyCount++] = i;
  }

  /** Re-reads entry `i`'s key and restores heap order (always when `force`); returns whether the key changed. */
  #refresh(i: number, force = false): boolean {
    const k = loadKey(this.entries[i] as Entry<N, LastPick>);
    if (k === this.#keys[i] && !force) return false;
    this.#keys[i] = k;
    const slot = this.#pos[i] as number;
    if (!this.#up(slot)) this.#down(slot);
    return true;
  }

  /** Whether entry `a` belongs above entry `b`: lower key, then picked less recently, then listed first. */
  #before(a: number, b: number): boolean {
    const ka = this.#keys[a] as number;
    const kb = this.#keys[b] as number;
    if (ka !== kb) return ka < kb;
    const pa = (this.entries[a] as Entry<N, LastPick>).state.seq;
    const pb = (this.entries[b] as Entry<N, LastPick>).state.seq;
    return pa < pb || (pa === pb && a < b);
  }

  #place(slot: number, i: number): void {
    this.#heap[slot] = i;
    this.#pos[i] = slot;
  }

  /** Sifts the entry at `slot` up; returns whether it moved. */
  #up(slot: number): boolean {
    const i = this.#heap[slot] as number;
    let s = slot;
    while (s > 0) {
      const parent = (s - 1) >>> 1;
      const p = this.#heap[parent] as number;
      if (!this.#before(i, p)) break;
      this.#place(s, p);
      s = parent;
    }
    this.#place(s, i);
    return s !== slot;
  }

  #down(slot: number): void {
    const n = this.#heap.length;
    const i = this.#heap[slot] as number;
    let s = slot;
    for (;;) {
      const left = 2 * s + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && this.#before(this.#heap[right] as number, this.#heap[left] as number)) child = right;
      const c = this.#heap[child] as number;
      if (!this.#before(c, i)) break;
      this.#place(s, c);
      s = child;
    }
    this.#place(s, i);
  }
}

export const heapKind = defineBalancer({
  kind: 'heap',
  schema: heapSchema,
  // The top is the best node by construction; an unavailable top goes straight to the scan.
  create: (cfg, ctx) => {
    const opts = { ...baseOptions(cfg, ctx), maxEffort: 0 };
    return <N extends BalancerNode>() => new HeapBalancer<N>(opts);
  },
});
