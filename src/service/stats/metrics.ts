import { BucketedHistogram, type HistogramBuckets, type HistogramSummary } from './histogram.js';

/** A monotonically increasing count. `incr` is O(1) and allocation-free. */
export interface Counter {
  incr(delta?: number): void;
  readonly value: number;
}

/** A value read when exported. `remove` unregisters it (a no-op once removed or pruned). */
export interface Gauge {
  readonly value: number;
  remove(): void;
}

/** A gauge whose value is pushed rather than computed. */
export interface SettableGauge extends Gauge {
  set(value: number): void;
  add(delta: number): void;
}

/** A distribution of values (latencies, sizes). `add` is O(1) and allocation-free. */
export interface Histogram {
  add(value: number): void;
}

/** A registry counter. */
export class CounterMetric implements Counter {
  readonly kind = 'counter';
  #value = 0;

  incr(delta = 1): void {
    this.#value += delta;
  }

  get value(): number {
    return this.#value;
  }
}

/**
 * A registry gauge: function-backed when `fn` is set, otherwise settable. `detach` is wired by the
 * registry so `remove()` unregisters exactly this instance.
 */
export class GaugeMetric implements SettableGauge {
  readonly kind = 'gauge';
  readonly settable: boolean;
  #fn: (() => number) | undefined;
  #value = 0;
  #detach: (() => void) | undefined;

  constructor(fn: (() => number) | undefined, detach: () => void) {
    this.#fn = fn;
    this.settable = fn === undefined;
    this.#detach = detach;
  }

  /** The current value; a throwing gauge function propagates (exporters catch and skip). */
  get value(): number {
    return this.#fn ? this.#fn() : this.#value;
  }

  set(value: number): void {
    this.#value = value;
  }

  add(delta: number): void {
    this.#value += delta;
  }

  /** Replaces the function of a function-backed gauge (re-registration: the latest wins). */
  replaceFn(fn: () => number): void {
    this.#fn = fn;
  }

  remove(): void {
    const detach = this.#detach;
    this.#detach = undefined;
    detach?.();
  }
}

/** A registry histogram: accumulates the current interval and keeps the last snapshot. */
export class HistogramMetric extends BucketedHistogram implements Histogram {
  readonly kind = 'histogram';
  #summary: HistogramSummary | undefined;
  #lastBuckets: HistogramBuckets | undefined;
  /** Set only on a histogram that shows merged figures (see {@link HistogramMetric.present}). */
  #presentedSoFar: HistogramSummary | undefined;

  /** The summary of the last completed interval; undefined until the first snapshot. */
  get summary(): HistogramSummary | undefined {
    return this.#summary;
  }

  /**
   * What `/admin/metrics.json` shows: the last completed interval's summary; before the first
   * snapshot, the values recorded so far (once there are any), so latencies appear within
   * seconds of start-up rather than after a whole interval. Prometheus keeps Linkerd's rule and
   * shows only completed intervals.
   */
  get summaryOrSoFar(): HistogramSummary | undefined {
    if (this.#summary !== undefined) return this.#summary;
    if (this.#presentedSoFar !== undefined) return this.#presentedSoFar;
    return this.count > 0 ? this.peek() : undefined;
  }

  /** The last completed interval as sparse buckets; undefined until the first snapshot. */
  get lastBuckets(): HistogramBuckets | undefined {
    return this.#lastBuckets;
  }

  /** Ends the current interval, publishing its summary. */
  snapshot(): void {
    this.#lastBuckets = this.peekBuckets();
    this.#summary = this.snapshotAndReset();
  }

  /**
   * Makes this histogram show figures computed elsewhere (the merge of several processes'
   * histograms): `summary` as the last completed interval, `soFar` before there is one.
   */
  present(summary: HistogramSummary | undefined, soFar: HistogramSummary | undefined): void {
    this.#summary = summary;
    this.#presentedSoFar = soFar;
  }
}

/** Any registered metric. */
export type Metric = CounterMetric | GaugeMetric | HistogramMetric;

/** Reads a gauge for export: undefined when its function throws or yields a non-finite number. */
export function readGauge(g: Gauge): number | undefined {
  try {
    const v = g.value;
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
