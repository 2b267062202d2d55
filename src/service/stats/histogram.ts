/**
 * A fixed-memory histogram with log-linear buckets, in the spirit of Finagle's BucketedHistogram:
 * values are integers in [0, 2^31-1]; buckets are one unit wide up to about 100 and then grow by
 * 1% each, so a reported percentile (a bucket midpoint) is within 0.5% of the true value, plus
 * at most one unit from the integer bucket limits. About 1800 buckets per histogram, counted in
 * pages of 64 allocated as values first land in them: a latency or size histogram touches one to
 * three pages (under 1 KB) where the whole table would be 7 KB, and a proxy has hundreds of them.
 */

/** Quantiles reported by every snapshot, as `p50`, `p90`, `p95`, `p99`, `p9990`, `p9999`. */
export const QUANTILES = [0.5, 0.9, 0.95, 0.99, 0.999, 0.9999] as const;

/** Largest recorded value; larger values are clamped to it. */
export const MAX_HISTOGRAM_VALUE = 2 ** 31 - 1;

/** One interval of a histogram: what `metrics.json` and the Prometheus export serve. */
export interface HistogramSummary {
  readonly count: number;
  readonly sum: number;
  readonly avg: number;
  readonly min: number;
  readonly max: number;
  readonly p50: number;
  readonly p90: number;
  readonly p95: number;
  readonly p99: number;
  readonly p9990: number;
  readonly p9999: number;
}

const ERROR = 0.005;
const GROWTH = 1 + 2 * ERROR;

/**
 * Bucket `i` holds values in [LIMITS[i-1], LIMITS[i]) (with LIMITS[-1] = 0); the extra last bucket
 * holds everything from the last limit up.
 */
const LIMITS: Int32Array = (() => {
  const out = [1];
  for (let n = GROWTH; n < MAX_HISTOGRAM_VALUE; n *= GROWTH) {
    const limit = Math.floor(n) + 1;
    if (limit !== out[out.length - 1]) out.push(limit);
  }
  return Int32Array.from(out);
})();

const BUCKETS = LIMITS.length + 1;
const PAGE_SHIFT = 6;
const PAGE_BUCKETS = 1 << PAGE_SHIFT;
const PAGE_MASK = PAGE_BUCKETS - 1;
const PAGES = Math.ceil(BUCKETS / PAGE_BUCKETS);

// Below LINEAR_END every limit is value+1, so a value is its own bucket index. Above it, the
// logarithm gives the index up to a small drift that bucketOf() corrects with a step or two.
const LINEAR_END = (() => {
  let i = 0;
  while (i < LIMITS.length && LIMITS[i] === i + 1) i++;
  return i;
})();
const INV_LOG_GROWTH = 1 / Math.log(GROWTH);
const LOG_OFFSET = LINEAR_END - Math.floor(Math.log(LINEAR_END) * INV_LOG_GROWTH);

/** Index of the bucket holding the integer `v` (0 ≤ v ≤ MAX_HISTOGRAM_VALUE). O(1). */
export function bucketOf(v: number): number {
  if (v < LINEAR_END) return v;
  let i = Math.floor(Math.log(v) * INV_LOG_GROWTH) + LOG_OFFSET;
  if (i > LIMITS.length) i = LIMITS.length;
  while (i < LIMITS.length && (LIMITS[i] as number) <= v) i++;
  while (i > 0 && (LIMITS[i - 1] as number) > v) i--;
  return i;
}

/** The value reported for bucket `i`: the midpoint of its range. */
function midpoint(i: number): number {
  if (i === 0) return 0;
  if (i >= LIMITS.length) return MAX_HISTOGRAM_VALUE;
  return Math.floor(((LIMITS[i - 1] as number) + (LIMITS[i] as number)) / 2);
}

/** The bucket bounds, exposed for tests and exporters that want the raw distribution. */
export function bucketRange(i: number): readonly [lo: number, hi: number] {
  const lo = i === 0 ? 0 : (LIMITS[i - 1] ?? MAX_HISTOGRAM_VALUE);
  const hi = i < LIMITS.length ? (LIMITS[i] as number) : Infinity;
  return [lo, hi];
}

/** Number of buckets per histogram. */
export const BUCKET_COUNT = BUCKETS;

/**
 * The accumulating side of a histogram. `add` is O(1) and allocation-free; `snapshotAndReset`
 * summarises the values added since the previous call and starts a new interval.
 */
export class BucketedHistogram {
  /** Page `p` counts buckets [p × 64, p × 64 + 64); null until a value lands in it. */
  #pages: (Uint32Array | null)[] | null = null;
  #count = 0;
  #sum = 0;
  #min = Infinity;
  #max = -Infinity;

  /** Records one value, truncated to an integer and clamped to [0, 2^31-1]; NaN counts as 0. */
  add(value: number): void {
    const v = value > 0 ? (value < MAX_HISTOGRAM_VALUE ? Math.floor(value) : MAX_HISTOGRAM_VALUE) : 0;
    const pages = this.#pages ?? (this.#pages = new Array<Uint32Array | null>(PAGES).fill(null));
    const b = bucketOf(v);
    const p = b >>> PAGE_SHIFT;
    const page = pages[p] ?? (pages[p] = new Uint32Array(PAGE_BUCKETS));
    (page[b & PAGE_MASK] as number)++;
    this.#count++;
    this.#sum += v;
    if (v < this.#min) this.#min = v;
    if (v > this.#max) this.#max = v;
  }

  /** Values added in the current interval. */
  get count(): number {
    return this.#count;
  }

  /** Summarises the current interval and clears it. */
  snapshotAndReset(): HistogramSummary {
    const summary = this.peek();
    if (summary.count === 0) return summary;
    for (const page of this.#pages as (Uint32Array | null)[]) page?.fill(0);
    this.#count = 0;
    this.#sum = 0;
    this.#min = Infinity;
    this.#max = -Infinity;
    return summary;
  }

  /** Summarises the current interval so far, leaving it running. */
  peek(): HistogramSummary {
    const count = this.#count;
    const pages = this.#pages;
    if (count === 0 || pages === null) return EMPTY_SUMMARY;
    return summarise(count, this.#sum, this.#min, this.#max, (visit) => {
      for (let p = 0; p < PAGES; p++) {
        const page = pages[p];
        if (page === null || page === undefined) continue;
        for (let i = 0; i < PAGE_BUCKETS; i++) if (visit((p << PAGE_SHIFT) + i, page[i] as number)) return;
      }
    });
  }

  /** The current interval so far as sparse buckets (for merging histograms of several processes). */
  peekBuckets(): HistogramBuckets {
    const pages = this.#pages;
    const index: number[] = [];
    const n: number[] = [];
    if (pages !== null && this.#count > 0) {
      for (let p = 0; p < PAGES; p++) {
        const page = pages[p];
        if (page === null || page === undefined) continue;
        for (let i = 0; i < PAGE_BUCKETS; i++) {
          const c = page[i] as number;
          if (c > 0) {
            index.push((p << PAGE_SHIFT) + i);
            n.push(c);
          }
        }
      }
    }
    return { count: this.#count, sum: this.#sum, min: this.#min, max: this.#max, index, n };
  }
}

/**
 * One interval of a histogram as its non-empty buckets (`index[i]` holds `n[i]` values) and exact
 * count, sum, min and max: what a worker process sends so the primary can merge distributions.
 */
export interface HistogramBuckets {
  readonly count: number;
  readonly sum: number;
  readonly min: number;
  readonly max: number;
  readonly index: readonly number[];
  readonly n: readonly number[];
}

/** Several intervals' buckets as one (the distribution of all their values together). */
export function mergeBuckets(parts: readonly HistogramBuckets[]): HistogramBuckets {
  const counts = new Map<number, number>();
  let count = 0;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const p of parts) {
    if (p.count === 0) continue;
    count += p.count;
    sum += p.sum;
    if (p.min < min) min = p.min;
    if (p.max > max) max = p.max;
    p.index.forEach((b, i) => counts.set(b, (counts.get(b) ?? 0) + (p.n[i] ?? 0)));
  }
  const index = [...counts.keys()].sort((a, b) => a - b);
  return { count, sum, min, max, index, n: index.map((b) => counts.get(b) ?? 0) };
}

/** The summary of sparse buckets, with the same quantile rule as {@link BucketedHistogram.peek}. */
export function summariseBuckets(buckets: HistogramBuckets): HistogramSummary {
  if (buckets.count === 0) return EMPTY_SUMMARY;
  return summarise(buckets.count, buckets.sum, buckets.min, buckets.max, (visit) => {
    for (let i = 0; i < buckets.index.length; i++) if (visit(buckets.index[i] as number, buckets.n[i] as number)) return;
  });
}

/** Walks buckets in ascending order (`each` stops when `visit` returns true) and reads the quantiles. */
function summarise(
  count: number,
  sum: number,
  min: number,
  max: number,
  each: (visit: (bucket: number, n: number) => boolean) => void,
): HistogramSummary {
  const q = new Array<number>(QUANTILES.length);
  let qi = 0;
  let target = Math.round((QUANTILES[0] as number) * count);
  let seen = 0;
  each((b, n) => {
    seen += n;
    // Several quantiles may fall into the same bucket.
    while (qi < QUANTILES.length && seen >= target) {
      // The exact min and max are known, so a bucket midpoint outside them is pulled in.
      q[qi++] = Math.min(max, Math.max(min, midpoint(b)));
      target = Math.round((QUANTILES[qi] ?? 1) * count);
    }
    return qi >= QUANTILES.length;
  });
  return {
    count,
    sum,
    avg: sum / count,
    min,
    max,
    p50: q[0] ?? max,
    p90: q[1] ?? max,
    p95: q[2] ?? max,
    p99: q[3] ?? max,
    p9990: q[4] ?? max,
    p9999: q[5] ?? max,
  };
}

/** The summary of an interval in which nothing was recorded. */
export const EMPTY_SUMMARY: HistogramSummary = Object.freeze({
  count: 0,
  sum: 0,
  avg: 0,
  min: 0,
  max: 0,
  p50: 0,
  p90: 0,
  p95: 0,
  p99: 0,
  p9990: 0,
  p9999: 0,
});
