import { z } from 'zod';
import { positiveInt, lazySchema } from '../../config/index.js';
import { BaseBalancer, type BaseOptions, type Entry } from './base.js';
import { balancerShape, baseOptions, defineBalancer, maxEffort, monotonicMs } from './kind.js';
import type { BalancerNode } from './types.js';

/**
 * `ewma`: power of two choices over peak-EWMA latency (Finagle's `P2CPeakEwma`). A node's cost
 * is its latency average times (outstanding requests + 1), per unit of weight. The average jumps
 * to any slower observation at once and decays toward faster ones (and toward 0 while the node is
 * idle) with time constant `decayTimeMs`.
 */
export const ewmaSchema = lazySchema(() => z.strictObject({
  ...balancerShape('ewma'),
  maxEffort,
  decayTimeMs: positiveInt.default(10_000),
}));

/** A validated `ewma` config. */
export type EwmaConfig = z.output<typeof ewmaSchema>;

// A node with requests in flight but no latency yet sorts after every measured one (Finagle's
// first-probe penalty), still ordered by how many it has in flight.
const PENALTY = 2 ** 47;

/** One node's peak-EWMA latency (ms) and when it was last brought up to date. */
interface PeakEwma {
  cost: number;
  stamp: number;
}

interface EwmaOptions extends BaseOptions {
  readonly decayTimeMs: number;
  readonly now: () => number;
}

class EwmaBalancer<N extends BalancerNode> extends BaseBalancer<N, PeakEwma> {
  readonly #decayMs: number;
  readonly #now: () => number;

  constructor(opts: EwmaOptions) {
    super(opts);
    this.#decayMs = opts.decayTimeMs;
    this.#now = opts.now;
  }

  protected newState(): PeakEwma {
    return { cost: 0, stamp: this.#now() };
  }

  protected pickIndex(): number {
    return this.p2cIndex(this.entries.length);
  }

  protected override cost(i: number): number {
    const e = this.entries[i] as Entry<N, PeakEwma>;
    const m = e.state;
    this.#record(m, 0, false);
    const load = e.node.load;
    const c = m.cost === 0 && load > 0 ? PENALTY + load : m.cost * (load + 1);
    return e.weight > 0 ? c / e.weight : Infinity;
  }

  protected override observed(i: number, _node: N, latencyMs: number, failed: boolean): void {
    if (i < 0) return;
    this.#record((this.entries[i] as Entry<N, PeakEwma>).state, Math.max(0, latencyMs), failed);
  }

  /** Decays `m` to now and folds in `rtt`; a failure may raise the cost but never lowers it. */
  #record(m: PeakEwma, rtt: number, failed: boolean): void {
    const now = this.#now();
    const w = Math.exp(-Math.max(0, now - m.stamp) / this.#decayMs);
    m.stamp = now;
    if (rtt > m.cost) m.cost = rtt;
    // A fast failure (a refused connection) must not make a broken node look fast.
    else if (!failed) m.cost = m.cost * w + rtt * (1 - w);
  }
}

export const ewmaKind = defineBalancer({
  kind: 'ewma',
  schema: ewmaSchema,
  create: (cfg, ctx) => {
    const opts: EwmaOptions = { ...baseOptions(cfg, ctx), decayTimeMs: cfg.decayTimeMs, now: ctx.now ?? monotonicMs };
    return <N extends BalancerNode>() => new EwmaBalancer<N>(opts);
  },
});
