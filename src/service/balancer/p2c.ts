import { z } from 'zod';
import { BaseBalancer } from './base.js';
import { balancerShape, baseOptions, defineBalancer, maxEffort } from './kind.js';
import type { BalancerNode } from './types.js';
import { lazySchema } from '../../config/index.js';

/**
 * `p2c` (the default): power of two choices, least loaded. Two distinct nodes are drawn at random
 * in proportion to their weights and the one with fewer outstanding requests per unit of weight
 * wins.
 */
export const p2cSchema = lazySchema(() => z.strictObject({ ...balancerShape('p2c'), maxEffort }));

/** A validated `p2c` config. */
export type P2cConfig = z.output<typeof p2cSchema>;

class P2cBalancer<N extends BalancerNode> extends BaseBalancer<N, undefined> {
  protected newState(): undefined {
    return undefined;
  }

  protected pickIndex(): number {
    return this.p2cIndex(this.entries.length);
  }
}

export const p2cKind = defineBalancer({
  kind: 'p2c',
  schema: p2cSchema,
  create: (cfg, ctx) => {
    const opts = baseOptions(cfg, ctx);
    return <N extends BalancerNode>() => new P2cBalancer<N>(opts);
  },
});
