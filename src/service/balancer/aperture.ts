import { z } from 'zod';
import { addIssue, positiveInt, lazySchema } from '../../config/index.js';
import { BaseBalancer, type BaseOptions, type Entry } from './base.js';
import { balancerShape, baseOptions, defineBalancer, maxEffort, monotonicMs } from './kind.js';
import type { BalancerNode } from './types.js';

const loadPerNode = lazySchema(() => z.number().min(0));

/**
 * `aperture`: power of two choices within a window (the aperture) of the nodes, so a client keeps
 * traffic, and connections, on few endpoints while load is light (Finagle's `ApertureLoadBand`).
 * Outstanding requests are smoothed over `smoothWindowMs`; when the smoothed load per node in the
 * window reaches `highLoad` the window grows by one node, when it falls to `lowLoad` it shrinks by
 * one, never below `minAperture`. Nodes are ranked by a per-balancer random hash of their key,
 * so different clients favour different windows and a node keeps its rank across updates.
 */
export const apertureSchema = lazySchema(() => z
  .strictObject({
    ...balancerShape('aperture'),
    maxEffort,
    smoothWindowMs: positiveInt.default(5000),
    lowLoad: loadPerNode.default(0.5),
    highLoad: loadPerNode.default(2),
    minAperture: positiveInt.default(1),
  })
  .superRefine((c, ctx) => {
    if (c.lowLoad >= c.highLoad) addIssue(ctx, ['lowLoad'], `must be less than highLoad (${c.highLoad})`, { value: c.lowLoad });
  }));

/** A validated `aperture` config. */
export type ApertureConfig = z.output<typeof apertureSchema>;

interface ApertureOptions extends BaseOptions {
  readonly smoothWindowMs: number;
  readonly lowLoad: number;
  readonly highLoad: number;
  readonly minAperture: number;
  readonly now: () => number;
}

/** FNV-1a of `key`, seeded: the node's rank in this balancer's order. */
function rank(seed: number, key: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

// Nodes of weight 0 go last, so a narrow window never holds only nodes that must get no traffic.
function byRank<N extends BalancerNode>(a: Entry<N, number>, b: Entry<N, number>): number {
  if ((a.weight === 0) !== (b.weight === 0)) return a.weight === 0 ? 1 : -1;
  if (a.state !== b.state) return a.state - b.state;
  return a.node.key < b.node.key ? -1 : a.node.key > b.node.key ? 1 : 0;
}

/** An aperture balancer; `aperture` is its current window width (Finagle's `aperture` gauge). */
export class ApertureBalancer<N extends BalancerNode> extends BaseBalancer<N, number> {
  readonly #seed: number;
  readonly #smoothMs: number;
  readonly #lowLoad: number;
  readonly #highLoad: number;
  readonly #minAperture: number;
  readonly #now: () => number;
  #aperture: number;
  #outstanding = 0;
  #offeredLoad = 0;
  #stamp = 0;
  #measured = false;

  constructor(opts: ApertureOptions) {
    super(opts);
    this.#seed = Math.floor(opts.random() * 0x1_0000_0000);
    this.#smoothMs = opts.smoothWindowMs;
    this.#lowLoad = opts.lowLoad;
    this.#highLoad = opts.highLoad;
    this.#minAperture = opts.minAperture;
    this.#now = opts.now;
    this.#aperture = opts.minAperture;
  }

  /** The window width: how many nodes (in rank order) picks are drawn from. */
  get aperture(): number {
    return Math.min(this.#aperture, this.entries.length);
  }

  protected newState(node: N): number {
    return rank(this.#seed, node.key);
  }

  protected override arrange(entries: Entry<N, number>[]): void {
    entries.sort(byRank);
  }

  protected override rebuilt(): void {
    this.#aperture = Math.max(this.#minAperture, Math.min(this.#aperture, this.entries.length));
  }

  protected pickIndex(): number {
    const limit = Math.min(this.#aperture, this.entries.length);
    const i = this.p2cIndex(limit);
    if ((this.entries[i] as Entry<N, number>).node.available || !this.#availableFirst(limit)) return i;
    return this.p2cIndex(limit);
  }

  protected override picked(): void {
    this.#adjust(1);
  }

  protected override observed(): void {
    this.#adjust(-1);
  }

  /**
   * Moves available nodes to the front (each group still in rank order) when the window holds an
   * unavailable node and an available one lies outside it, so the window spans live nodes.
   * Returns whether the order changed.
   */
  #availableFirst(limit: number): boolean {
    let downInside = false;
    for (let i = 0; i < limit && !downInside; i++) downInside = !(this.entries[i] as Entry<N, number>).node.available;
    if (!downInside) return false;
    let upOutside = false;
    for (let i = limit; i < this.entries.length && !upOutside; i++) upOutside = (this.entries[i] as Entry<N, number>).node.available;
    if (!upOutside) return false;
    const up = this.entries.filter((e) => e.node.available);
    const down = this.entries.filter((e) => !e.node.available);
    this.reordered(up.concat(down));
    return true;
  }

  /** Tracks outstanding requests, smooths them over time, and widens or narrows the window. */
  #adjust(delta: number): void {
    this.#outstanding = Math.max(0, this.#outstanding + delta);
    const now = this.#now();
    if (!this.#measured) {
      this.#measured = true;
      this.#offeredLoad = this.#outstanding;
    } else {
      const w = Math.exp(-Math.max(0, now - this.#stamp) / this.#smoothMs);
      this.#offeredLoad = this.#outstanding * (1 - w) + this.#offeredLoad * w;
    }
    this.#stamp = now;
    const perNode = this.#offeredLoad / this.#aperture;
    if (perNode >= this.#highLoad && this.#aperture < this.entries.length) this.#aperture++;
    else if (perNode <= this.#lowLoad && this.#aperture > this.#minAperture) this.#aperture--;
  }
}

export const apertureKind = defineBalancer({
  kind: 'aperture',
  schema: apertureSchema,
  create: (cfg, ctx) => {
    const opts: ApertureOptions = {
      ...baseOptions(cfg, ctx),
      smoothWindowMs: cfg.smoothWindowMs,
      lowLoad: cfg.lowLoad,
      highLoad: cfg.highLoad,
      minAperture: cfg.minAperture,
      now: ctx.now ?? monotonicMs,
    };
    return <N extends BalancerNode>() => new ApertureBalancer<N>(opts);
  },
});
