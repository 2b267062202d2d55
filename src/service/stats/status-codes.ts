import type { Counter } from './metrics.js';
import type { StatsReceiver } from './receiver.js';

/**
 * Linkerd's StatusCodeStatsFilter counters under a scope: `status/<code>` and `status/<N>XX` for
 * each response. Counters are made on first use and kept, so recording allocates nothing.
 */
export class StatusCodeCounters {
  readonly #stats: StatsReceiver;
  readonly #byCode = new Map<number, Counter>();
  readonly #byClass = new Map<number, Counter>();

  constructor(stats: StatsReceiver) {
    this.#stats = stats;
  }

  record(status: number): void {
    let c = this.#byCode.get(status);
    if (c === undefined) {
      c = this.#stats.counter('status', String(status));
      this.#byCode.set(status, c);
    }
    c.incr();
    const cls = Math.floor(status / 100);
    let k = this.#byClass.get(cls);
    if (k === undefined) {
      k = this.#stats.counter('status', `${cls}XX`);
      this.#byClass.set(cls, k);
    }
    k.incr();
  }
}
