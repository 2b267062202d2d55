/**
 * The metrics tree of a process as plain data, and the merge of several such trees into one
 * registry: how a proxy running several worker processes shows one set of metrics. Each worker
 * sends {@link snapshotRegistry} of its registry; the primary builds a registry from them with
 * {@link mergeSnapshots}, which every exporter (`metrics.json`, Prometheus, the dashboard, usage)
 * renders as it renders a live one.
 *
 * Counters are summed. Histograms are merged bucket by bucket, so a merged p99 is the p99 of all
 * the workers' values together (each worker closes its one-minute interval on its own clock).
 * Gauges are summed where a sum is a figure of the whole proxy (connections, pending requests,
 * memory, CPU time) and otherwise take the largest or the mean value: {@link gaugeMerge}.
 */
import { mergeBuckets, summariseBuckets, type HistogramBuckets } from './histogram.js';
import { readGauge, type HistogramMetric } from './metrics.js';
import { MetricsRegistry, type MetricsNode } from './registry.js';
import type { Scheduler } from './scheduler.js';

/**
 * One node of a snapshot: its name segment, its metric (a counter's or gauge's value, or a
 * histogram's last completed interval and the interval so far) and its children.
 */
export interface SnapshotNode {
  readonly name: string;
  readonly counter?: number;
  readonly gauge?: number;
  readonly histogram?: { readonly last?: HistogramBuckets; readonly soFar?: HistogramBuckets };
  readonly children?: readonly SnapshotNode[];
}

/** The whole tree of one registry (its root has the empty name). */
export function snapshotRegistry(registry: MetricsRegistry): SnapshotNode {
  return snapshotNode(registry.root);
}

function snapshotNode(node: MetricsNode): SnapshotNode {
  const out: { -readonly [K in keyof SnapshotNode]: SnapshotNode[K] } = { name: node.name };
  const m = node.metric;
  if (m?.kind === 'counter') out.counter = m.value;
  else if (m?.kind === 'gauge') {
    const v = readGauge(m);
    if (v !== undefined) out.gauge = v;
  } else if (m?.kind === 'histogram') {
    const last = m.lastBuckets;
    out.histogram = { ...(last === undefined ? {} : { last }), ...(m.count > 0 ? { soFar: m.peekBuckets() } : {}) };
  }
  if (node.children.size > 0) out.children = [...node.children.values()].map(snapshotNode);
  return out;
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

/** A scheduler whose timers never fire: a merged registry is rebuilt, not snapshotted. */
const STILL: Scheduler = { now: () => Date.now(), after: () => () => {}, every: () => () => {} };

/** One registry holding the merge of `snapshots` (see the module documentation). */
export function mergeSnapshots(snapshots: readonly SnapshotNode[]): MetricsRegistry {
  const registry = new MetricsRegistry({ scheduler: STILL });
  mergeChildren(registry, [], snapshots);
  return registry;
}

function mergeChildren(registry: MetricsRegistry, name: readonly string[], nodes: readonly SnapshotNode[]): void {
  // Children by name, in order of first appearance across the processes.
  const byName = new Map<string, SnapshotNode[]>();
  for (const node of nodes) {
    for (const child of node.children ?? []) {
      const same = byName.get(child.name);
      if (same) same.push(child);
      else byName.set(child.name, [child]);
    }
  }
  for (const [childName, same] of byName) {
    const path = [...name, childName];
    mergeMetric(registry, path, same);
    mergeChildren(registry, path, same);
  }
}

function mergeMetric(registry: MetricsRegistry, path: readonly string[], nodes: readonly SnapshotNode[]): void {
  const first = nodes[0];
  if (first === undefined) return;
  if (first.counter !== undefined) {
    let sum = 0;
    for (const n of nodes) sum += n.counter ?? 0;
    registry.counter(path).incr(sum);
  } else if (first.gauge !== undefined) {
    const values = nodes.flatMap((n) => (n.gauge === undefined ? [] : [n.gauge]));
    const how = gaugeMerge(path);
    const sum = values.reduce((a, b) => a + b, 0);
    registry.settableGauge(path).set(how === 'sum' ? sum : how === 'mean' ? sum / values.length : Math.max(...values));
  } else if (first.histogram !== undefined) {
    const last = nodes.flatMap((n) => (n.histogram?.last === undefined ? [] : [n.histogram.last]));
    // Before a worker's first snapshot its values so far stand in for its interval, as in one process.
    const soFar = nodes.flatMap((n) => {
      const h = n.histogram;
      const b = h?.last ?? h?.soFar;
      return b === undefined ? [] : [b];
    });
    const merged = soFar.length === 0 ? undefined : summariseBuckets(mergeBuckets(soFar));
    (registry.histogram(path) as HistogramMetric).present(last.length === 0 ? undefined : summariseBuckets(mergeBuckets(last)), merged);
  }
}
