import type { Counter, Gauge, Histogram, SettableGauge } from './metrics.js';

/**
 * Where components record stats, in Finagle's shape. Names are hierarchical: a receiver has a
 * scope (a list of segments) and every metric name extends it. A segment may itself contain `/`
 * (a client id such as `$/inet/127.1/8080`); it stays one segment, which is how exporters know it
 * is a single label value. Empty segments are ignored.
 *
 * Metrics are created once (at stack build time) and then updated on the hot path; creating the
 * same name again returns the same instance where the receiver keeps instances.
 */
export interface StatsReceiver {
  /** A receiver whose metrics live under this scope + `names`. */
  scope(...names: string[]): StatsReceiver;
  counter(...names: string[]): Counter;
  /** A function-backed gauge; registering a name again replaces the function (the latest wins). */
  gauge(names: readonly string[], fn: () => number): Gauge;
  settableGauge(...names: string[]): SettableGauge;
  /** A histogram (Finagle calls it a stat). */
  stat(...names: string[]): Histogram;
  /** Removes every metric under this scope + `names` (an evicted client or service). */
  prune(...names: string[]): void;
  /** True for receivers that drop everything, so broadcasts can skip them. */
  readonly isNull: boolean;
}

const nullCounter: Counter = { incr() {}, value: 0 };
const nullHistogram: Histogram = { add() {} };

class NullGauge implements SettableGauge {
  readonly value = 0;
  set(): void {}
  add(): void {}
  remove(): void {}
}
const nullGauge = new NullGauge();

/** A receiver that records nothing. */
export const NullStatsReceiver: StatsReceiver = {
  isNull: true,
  scope: () => NullStatsReceiver,
  counter: () => nullCounter,
  gauge: () => nullGauge,
  settableGauge: () => nullGauge,
  stat: () => nullHistogram,
  prune() {},
};

class BroadcastCounter implements Counter {
  readonly #parts: readonly Counter[];
  constructor(parts: readonly Counter[]) {
    this.#parts = parts;
  }
  incr(delta = 1): void {
    for (let i = 0; i < this.#parts.length; i++) (this.#parts[i] as Counter).incr(delta);
  }
  /** The first receiver's value (by convention the registry). */
  get value(): number {
    return (this.#parts[0] as Counter).value;
  }
}

class BroadcastHistogram implements Histogram {
  readonly #parts: readonly Histogram[];
  constructor(parts: readonly Histogram[]) {
    this.#parts = parts;
  }
  add(value: number): void {
    for (let i = 0; i < this.#parts.length; i++) (this.#parts[i] as Histogram).add(value);
  }
}

class BroadcastGauge implements SettableGauge {
  readonly #parts: readonly Gauge[];
  constructor(parts: readonly Gauge[]) {
    this.#parts = parts;
  }
  get value(): number {
    return (this.#parts[0] as Gauge).value;
  }
  set(value: number): void {
    for (const g of this.#parts) (g as SettableGauge).set(value);
  }
  add(delta: number): void {
    for (const g of this.#parts) (g as SettableGauge).add(delta);
  }
  remove(): void {
    for (const g of this.#parts) g.remove();
  }
}

class BroadcastStatsReceiver implements StatsReceiver {
  readonly isNull = false;
  readonly #parts: readonly StatsReceiver[];
  constructor(parts: readonly StatsReceiver[]) {
    this.#parts = parts;
  }
  scope(...names: string[]): StatsReceiver {
    return broadcastStats(this.#parts.map((r) => r.scope(...names)));
  }
  counter(...names: string[]): Counter {
    return new BroadcastCounter(this.#parts.map((r) => r.counter(...names)));
  }
  gauge(names: readonly string[], fn: () => number): Gauge {
    return new BroadcastGauge(this.#parts.map((r) => r.gauge(names, fn)));
  }
  settableGauge(...names: string[]): SettableGauge {
    return new BroadcastGauge(this.#parts.map((r) => r.settableGauge(...names)));
  }
  stat(...names: string[]): Histogram {
    return new BroadcastHistogram(this.#parts.map((r) => r.stat(...names)));
  }
  prune(...names: string[]): void {
    for (const r of this.#parts) r.prune(...names);
  }
}

/**
 * One receiver feeding several (the registry plus telemeters' sinks). Null receivers are dropped,
 * and a single remaining receiver is returned as is, so the common case adds no indirection.
 */
export function broadcastStats(receivers: readonly StatsReceiver[]): StatsReceiver {
  const live = receivers.filter((r) => !r.isNull);
  if (live.length === 0) return NullStatsReceiver;
  if (live.length === 1) return live[0] as StatsReceiver;
  return new BroadcastStatsReceiver(live);
}
