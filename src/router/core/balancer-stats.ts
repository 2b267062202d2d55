import type { Balancer, BalancerNode } from '../../service/balancer/types.js';
import type { Counter, StatsReceiver } from '../../service/stats/index.js';

/** What the stats read of a balanced endpoint. */
export interface BalancedEndpoint extends BalancerNode {
  readonly closed: boolean;
  readonly load: number;
  readonly weight: number;
}

/**
 * A client's `loadbalancer/*` stats, Finagle's names: gauges `size`, `available`, `busy` (taken
 * out by failure accrual or fail-fast), `closed`, `load` (requests outstanding on the balanced
 * endpoints) and `meanweight`; counters `updates` (address sets received), `adds` and `removes`
 * (endpoints entering and leaving the set, probation included); with `aperture`, the window's
 * size as the `aperture` gauge.
 */
export class LoadBalancerStats<E extends BalancedEndpoint> {
  readonly #adds: Counter;
  readonly #removes: Counter;
  readonly #updates: Counter;
  readonly #balancer: Balancer<E>;

  constructor(stats: StatsReceiver, balancer: Balancer<E>) {
    this.#balancer = balancer;
    const lb = stats.scope('loadbalancer');
    lb.gauge(['size'], () => balancer.size);
    lb.gauge(['available'], () => balancer.available);
    lb.gauge(['busy'], () => {
      let n = 0;
      for (const e of balancer.nodes) if (!e.closed && !e.available) n++;
      return n;
    });
    lb.gauge(['closed'], () => {
      let n = 0;
      for (const e of balancer.nodes) if (e.closed) n++;
      return n;
    });
    lb.gauge(['load'], () => {
      let n = 0;
      for (const e of balancer.nodes) n += e.load;
      return n;
    });
    lb.gauge(['meanweight'], () => {
      const nodes = balancer.nodes;
      if (nodes.length === 0) return 0;
      let w = 0;
      for (const e of nodes) w += e.weight;
      return w / nodes.length;
    });
    if (balancer.aperture !== undefined) lb.gauge(['aperture'], () => balancer.aperture ?? 0);
    this.#adds = lb.counter('adds');
    this.#removes = lb.counter('removes');
    this.#updates = lb.counter('updates');
  }

  /** The balancer took a new address set; `before` is the node set it had. */
  updated(before: ReadonlySet<E>): void {
    this.#updates.incr();
    let kept = 0;
    for (const e of this.#balancer.nodes) {
      if (before.has(e)) kept++;
      else this.#adds.incr();
    }
    const removed = before.size - kept;
    if (removed > 0) this.#removes.incr(removed);
  }

  /** An endpoint left the set outside an update (its probation ended). */
  removed(): void {
    this.#removes.incr();
  }
}
