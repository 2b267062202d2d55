/**
 * The metrics of several processes as one registry: how a proxy running several worker processes
 * shows one set of metrics. Each worker answers its primary with a {@link StatsSnapshot} of its
 * registry ({@link SnapshotSource}); the primary keeps a {@link MergedStats} and renders its
 * {@link MergedStats.registry} with every exporter (`metrics.json`, Prometheus, the dashboard,
 * usage) as it renders a live one.
 *
 * Counters are summed. Histograms are merged bucket by bucket, so a merged p99 is the p99 of all
 * the workers' values together (each worker closes its one-minute interval on its own clock).
 * Gauges are summed where a sum is a figure of the whole proxy (connections, pending requests,
 * memory, CPU time) and otherwise take the largest or the mean value: {@link gaugeMerge}.
 *
 * The dashboard polls every second, so a snapshot is cheap to take, send and merge: metric names
 * travel only when the set of metrics changed (a layout version the primary echoes back), values
 * as one `Float64Array`, and histogram buckets only once per completed interval (or, before a
 * histogram's first interval, its values so far). The merged registry is kept between polls and
 * only its values are updated while no layout changes.
 */
import { mergeBuckets, summariseBuckets, type HistogramBuckets } from './histogram.js';
import { readGauge, type CounterMetric, type GaugeMetric, type HistogramMetric, type Metric } from './metrics.js';
import { MetricsRegistry, type MetricsNode } from './registry.js';
import type { Scheduler } from './scheduler.js';

const COUNTER = 1;
const GAUGE = 2;
const HISTOGRAM = 3;

/** What the requester already has of a source: its process id, layout version and histogram interval count. */
export interface SnapshotKnown {
  readonly pid: number;
  readonly version: number;
  readonly intervals: number;
}

/** One process's metrics at one moment (see the module documentation). */
export interface StatsSnapshot {
  readonly pid: number;
  readonly version: number;
  /** Each metric's name segments and kind; sent only when the requester's version differs. */
  readonly layout?: { readonly names: readonly (readonly string[])[]; readonly kinds: Uint8Array };
  /** Counter and gauge values by metric index (NaN for histograms and unreadable gauges). */
  readonly values: Float64Array;
  readonly intervals: number;
  /** Each histogram's last completed interval (by metric index); only when `intervals` or the layout changed. */
  readonly last?: readonly (readonly [index: number, buckets: HistogramBuckets])[];
  /** Values so far of histograms that have not completed an interval yet. */
  readonly soFar: readonly (readonly [index: number, buckets: HistogramBuckets])[];
}

/** Collects every metric of the tree in walk order (children in creation order). */
function collect(node: MetricsNode, metrics: Metric[], names: string[][] | undefined, path: string[]): void {
  for (const child of node.children.values()) {
    const p = names ? [...path, child.name] : path;
    if (child.metric) {
      metrics.push(child.metric);
      names?.push(p);
    }
    if (child.children.size > 0) collect(child, metrics, names, p);
  }
}

/** The side of a worker: snapshots of its registry for its primary. */
export class SnapshotSource {
  readonly #registry: MetricsRegistry;
  #metrics: Metric[] = [];
  #names: string[][] = [];
  #kinds = new Uint8Array(0);
  #version = 0;

  constructor(registry: MetricsRegistry) {
    this.#registry = registry;
  }

  snapshot(known: SnapshotKnown | undefined): StatsSnapshot {
    const metrics: Metric[] = [];
    collect(this.#registry.root, metrics, undefined, []);
    if (metrics.length !== this.#metrics.length || metrics.some((m, i) => m !== this.#metrics[i])) {
      const names: string[][] = [];
      this.#metrics = [];
      collect(this.#registry.root, this.#metrics, names, []);
      this.#names = names;
      this.#kinds = Uint8Array.from(this.#metrics, (m) => (m.kind === 'counter' ? COUNTER : m.kind === 'gauge' ? GAUGE : HISTOGRAM));
      this.#version++;
    }
    const current = known !== undefined && known.pid === process.pid;
    const sendLayout = !current || known.version !== this.#version;
    const intervals = this.#registry.snapshotCount;
    const sendLast = sendLayout || known.intervals !== intervals;
    const values = new Float64Array(this.#metrics.length);
    const last: [number, HistogramBuckets][] = [];
    const soFar: [number, HistogramBuckets][] = [];
    this.#metrics.forEach((m, i) => {
      if (m.kind === 'counter') values[i] = m.value;
      else if (m.kind === 'gauge') values[i] = readGauge(m) ?? NaN;
      else {
        values[i] = NaN;
        const lastBuckets = m.lastBuckets;
        if (lastBuckets === undefined) {
          if (m.count > 0) soFar.push([i, m.peekBuckets()]);
        } else if (sendLast) last.push([i, lastBuckets]);
      }
    });
    return {
      pid: process.pid,
      version: this.#version,
      ...(sendLayout ? { layout: { names: this.#names, kinds: this.#kinds } } : {}),
      values,
      intervals,
      ...(sendLast ? { last } : {}),
      soFar,
    };
  }
}

/** How the gauges at one name combine across processes. */
export type GaugeMerge = 'sum' | 'max' | 'mean';

/**
 * Gauges whose sum means nothing: every worker balances over the same endpoints (so `size` is
 * the same figure N times), and uptime, CPU count and event-loop delays are per process. The
 * rest (connections, pending, load, memory, CPU time, cache sizes, budgets) add up.
 */
export function gaugeMerge(name: readonly string[]): GaugeMerge {
  const last = name[name.length - 1];
  const parent = name[name.length - 2];
  if (parent === 'loadbalancer') {
    if (last === 'meanweight') return 'mean';
    if (last === 'size' || last === 'available' || last === 'busy' || last === 'closed' || last === 'aperture') return 'max';
  }
  if (name[0] === 'process') {
    if (last === 'uptime' || last === 'num_cpus') return 'max';
    if (parent === 'delay_ms') return 'max';
    if (last === 'utilization') return 'mean';
  }
  if (last === 'originator') return 'max';
  return 'sum';
}

/** What the primary keeps of one source between polls. */
interface SourceState {
  pid: number;
  version: number;
  intervals: number;
  names: readonly (readonly string[])[];
  kinds: Uint8Array;
  values: Float64Array;
  last: Map<number, HistogramBuckets>;
  soFar: readonly (readonly [number, HistogramBuckets])[];
}

/** A merged registry over a fixed set of sources and their layouts, updated in place between polls. */
interface MergedView {
  readonly key: string;
  readonly registry: MetricsRegistry;
  /** Per source (in `sources` order), each of its metric indices' position in `metrics`. */
  readonly positions: readonly Int32Array[];
  readonly metrics: readonly Metric[];
  readonly modes: readonly GaugeMerge[];
  /** The sources' interval counts the histograms' last intervals were merged at. */
  intervals: string;
}

/** A scheduler whose timers never fire: a merged registry is updated, not snapshotted. */
const STILL: Scheduler = { now: () => Date.now(), after: () => () => {}, every: () => () => {} };

/** The primary's side: the last snapshot of every source, and merged registries over them. */
export class MergedStats {
  readonly #sources = new Map<number, SourceState>();
  readonly #views = new Map<string, MergedView>();

  /** What to tell source `id` it need not send again. */
  known(id: number): SnapshotKnown | undefined {
    const s = this.#sources.get(id);
    return s && { pid: s.pid, version: s.version, intervals: s.intervals };
  }

  /** Records a snapshot of source `id` (a worker slot). */
  update(id: number, snap: StatsSnapshot): void {
    let s = this.#sources.get(id);
    if (snap.layout) {
      s = { pid: snap.pid, version: snap.version, intervals: -1, names: snap.layout.names, kinds: snap.layout.kinds, values: snap.values, last: new Map(), soFar: [] };
      this.#sources.set(id, s);
    }
    if (!s || s.pid !== snap.pid || s.version !== snap.version) return; // a reply to a request made before a newer layout
    s.values = snap.values;
    s.soFar = snap.soFar;
    if (snap.last) s.last = new Map(snap.last);
    s.intervals = snap.intervals;
  }

  /** Forgets a source (its process is gone). */
  forget(id: number): void {
    this.#sources.delete(id);
  }

  /** The merge of the given sources' last snapshots (those never heard from are left out). */
  registry(ids: readonly number[]): MetricsRegistry {
    const sources = ids.flatMap((id) => {
      const s = this.#sources.get(id);
      return s ? [s] : [];
    });
    const key = sources.map((s) => `${s.pid}:${s.version}`).join(',');
    const viewKey = ids.join(',');
    let view = this.#views.get(viewKey);
    if (view?.key !== key) {
      view = buildView(key, sources);
      this.#views.set(viewKey, view);
    }
    updateView(view, sources);
    return view.registry;
  }
}

function buildView(key: string, sources: readonly SourceState[]): MergedView {
  const registry = new MetricsRegistry({ scheduler: STILL });
  const index = new Map<string, number>();
  const metrics: Metric[] = [];
  const modes: GaugeMerge[] = [];
  const positions = sources.map((s) => {
    const pos = new Int32Array(s.names.length);
    s.names.forEach((name, i) => {
      const k = name.join('\u0000');
      let at = index.get(k);
      if (at === undefined) {
        at = metrics.length;
        index.set(k, at);
        const kind = s.kinds[i];
        metrics.push(kind === COUNTER ? (registry.counter(name) as CounterMetric) : kind === GAUGE ? (registry.settableGauge(name) as GaugeMetric) : (registry.histogram(name) as HistogramMetric));
        modes.push(kind === GAUGE ? gaugeMerge(name) : 'sum');
      }
      pos[i] = metrics[at]?.kind === (s.kinds[i] === COUNTER ? 'counter' : s.kinds[i] === GAUGE ? 'gauge' : 'histogram') ? at : -1;
    });
    return pos;
  });
  return { key, registry, positions, metrics, modes, intervals: '' };
}

function updateView(view: MergedView, sources: readonly SourceState[]): void {
  const n = view.metrics.length;
  const acc = new Float64Array(n);
  const seen = new Uint16Array(n);
  const max = new Float64Array(n).fill(-Infinity);
  sources.forEach((s, k) => {
    const pos = view.positions[k] as Int32Array;
    for (let i = 0; i < pos.length; i++) {
      const at = pos[i] as number;
      const v = s.values[i] as number;
      if (at < 0 || Number.isNaN(v)) continue;
      acc[at] = (acc[at] as number) + v;
      seen[at] = (seen[at] as number) + 1;
      if (v > (max[at] as number)) max[at] = v;
    }
  });
  const intervals = sources.map((s) => s.intervals).join(',');
  const lastChanged = intervals !== view.intervals;
  view.intervals = intervals;
  // Histograms: every source's buckets by merged position.
  const last = new Map<number, HistogramBuckets[]>();
  const soFar = new Map<number, HistogramBuckets[]>();
  const add = (into: Map<number, HistogramBuckets[]>, at: number, b: HistogramBuckets): void => {
    const list = into.get(at);
    if (list) list.push(b);
    else into.set(at, [b]);
  };
  sources.forEach((s, k) => {
    const pos = view.positions[k] as Int32Array;
    if (lastChanged) {
      for (const [i, b] of s.last) {
        const at = pos[i] ?? -1;
        if (at >= 0) add(last, at, b);
      }
    }
    for (const [i, b] of s.soFar) {
      const at = pos[i] ?? -1;
      if (at >= 0) add(soFar, at, b);
    }
  });
  view.metrics.forEach((m, at) => {
    if (m.kind === 'counter') {
      m.incr((acc[at] as number) - m.value);
    } else if (m.kind === 'gauge') {
      const count = seen[at] as number;
      if (count === 0) return;
      const mode = view.modes[at];
      m.set(mode === 'sum' ? (acc[at] as number) : mode === 'mean' ? (acc[at] as number) / count : (max[at] as number));
    } else {
      const lastParts = last.get(at);
      const summary = lastChanged ? (lastParts === undefined ? undefined : summariseBuckets(mergeBuckets(lastParts))) : m.summary;
      // Values so far show only until some worker completes an interval, as in one process.
      const parts = summary === undefined ? soFar.get(at) : undefined;
      m.present(summary, parts === undefined ? undefined : summariseBuckets(mergeBuckets(parts)));
    }
  });
}
