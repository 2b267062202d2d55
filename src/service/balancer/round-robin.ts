import { z } from 'zod';
import { BaseBalancer, type Entry } from './base.js';
import { balancerShape, baseOptions, defineBalancer, maxEffort } from './kind.js';
import type { BalancerNode } from './types.js';
import { lazySchema } from '../../config/index.js';

/**
 * `roundRobin`: nodes in turn, weighted. Each visit credits a node its weight relative to the
 * heaviest node; a node is picked when its credit reaches one. Equal weights give a plain cycle;
 * weights 3:1 give a a a b. The heaviest node is picked on every visit, so a pick visits at most
 * every node once.
 */
export const roundRobinSchema = lazySchema(() => z.strictObject({ ...balancerShape('roundRobin'), maxEffort }));

/** A validated `roundRobin` config. */
export type RoundRobinConfig = z.output<typeof roundRobinSchema>;

/** Credit carried between visits; kept while the node's key stays. */
interface Credit {
  value: number;
}

// Credits are sums of fractions; a sum meant to be 1 may land just below it.
const EPSILON = 1e-9;

class RoundRobinBalancer<N extends BalancerNode> extends BaseBalancer<N, Credit> {
  #cursor = 0;
  /** The key of the node at the cursor, so the turn order survives an update. */
  #cursorKey: string | undefined;
  #maxWeight = 0;

  protected newState(): Credit {
    return { value: 0 };
  }

  protected override rebuilt(): void {
    let max = 0;
    for (const e of this.entries) if (e.weight > max) max = e.weight;
    this.#maxWeight = max;
    const n = this.entries.length;
    const at = this.#cursorKey === undefined ? undefined : this.indexOf(this.#cursorKey);
    this.#cursor = at ?? (n === 0 ? 0 : this.#cursor % n);
  }

  protected pickIndex(): number {
    const n = this.entries.length;
    for (let visits = 0; visits < n; visits++) {
      const i = this.#cursor;
      const e = this.entries[i] as Entry<N, Credit>;
      this.#advance(i + 1);
      // All weights 0: every node counts as equally heavy.
      e.state.value += this.#maxWeight > 0 ? e.weight / this.#maxWeight : 1;
      if (e.state.value >= 1 - EPSILON) {
        e.state.value = Math.max(0, e.state.value - 1);
        return i;
      }
    }
    // Unreachable: the heaviest node's credit reaches one on every visit.
    return this.#cursor;
  }

  /** The next available node in turn, ignoring credit (fallback after maxEffort picks). */
  protected override pickAvailableIndex(): number {
    const n = this.entries.length;
    for (let k = 0; k < n; k++) {
      const i = (this.#cursor + k) % n;
      if ((this.entries[i] as Entry<N, Credit>).node.available) {
        this.#advance(i + 1);
        return i;
      }
    }
    return -1;
  }

  #advance(next: number): void {
    this.#cursor = next >= this.entries.length ? 0 : next;
    this.#cursorKey = (this.entries[this.#cursor] as Entry<N, Credit>).node.key;
  }
}

export const roundRobinKind = defineBalancer({
  kind: 'roundRobin',
  schema: roundRobinSchema,
  create: (cfg, ctx) => {
    const opts = baseOptions(cfg, ctx);
    return <N extends BalancerNode>() => new RoundRobinBalancer<N>(opts);
  },
});
