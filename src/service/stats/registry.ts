import { EmptyMetricNameError, MetricTypeConflictError } from './errors.js';
import {
  CounterMetric,
  GaugeMetric,
  HistogramMetric,
  type Counter,
  type Gauge,
  type Histogram,
  type Metric,
  type SettableGauge,
} from './metrics.js';
import type { StatsReceiver } from './receiver.js';
import { systemScheduler, type Cancel, type Scheduler } from './scheduler.js';

/** A read-only view of one node of the metrics tree, for exporters. */
export interface MetricsNode {
  /** This node's segment (empty for the root). */
  readonly name: string;
  readonly metric: Metric | undefined;
  /** Children in creation order. */
  readonly children: ReadonlyMap<string, MetricsNode>;
}

class Node implements MetricsNode {
  readonly name: string;
  readonly parent: Node | undefined;
  metric: Metric | undefined;
  readonly children = new Map<string, Node>();

  constructor(name: string, parent: Node | undefined) {
    this.name = name;
    this.parent = parent;
  }

  /** True while this node is still reachable from the root. */
  get attached(): boolean {
    const parent = this.parent;
    if (!parent) return true;
    return parent.children.get(this.name) === this && parent.attached;
  }
}

/** Options of a {@link MetricsRegistry}. */
export interface MetricsRegistryOptions {
  /** How often histograms are summarised and reset (Linkerd: one minute). */
  readonly snapshotIntervalMs?: number;
  readonly scheduler?: Scheduler;
}

/** Default histogram snapshot interval. */
export const DEFAULT_SNAPSHOT_INTERVAL_MS = 60_000;

/**
 * The process's metrics: a tree keyed by name segments whose nodes may hold a counter, a gauge
 * or a histogram. Exporters (`metrics.json`, Prometheus, usage) walk it; the router records into
 * it through {@link MetricsRegistry.stats}. Every `snapshotIntervalMs` each histogram publishes
 * the summary of the interval and resets, as Linkerd's admin export does; the (unref'd) snapshot
 * timer starts with the registry and stops at {@link MetricsRegistry.close}.
 */
export class MetricsRegistry {
  readonly #root = new Node('', undefined);
  readonly #cancelSnapshots: Cancel;
  #snapshots = 0;
  /** The receiver scoped at the root of this registry. */
  readonly stats: StatsReceiver;

  constructor(options: MetricsRegistryOptions = {}) {
    const scheduler = options.scheduler ?? systemScheduler;
    this.#cancelSnapshots = scheduler.every(options.snapshotIntervalMs ?? DEFAULT_SNAPSHOT_INTERVAL_MS, () =>
      this.snapshotHistograms(),
    );
    this.stats = new RegistryStatsReceiver(this, []);
  }

  /** The root of the tree. */
  get root(): MetricsNode {
    return this.#root;
  }

  counter(name: readonly string[]): Counter {
    const node = this.#nodeFor(name);
    const m = node.metric;
    if (m === undefined) return (node.metric = new CounterMetric());
    if (m.kind === 'counter') return m;
    throw conflict(name, m, 'counter');
  }

  /** A function-backed gauge; registering the same name again replaces the function. */
  gauge(name: readonly string[], fn: () => number): Gauge {
    const node = this.#nodeFor(name);
    const m = node.metric;
    if (m === undefined) return this.#attachGauge(node, fn);
    if (m.kind === 'gauge' && !m.settable) {
      m.replaceFn(fn);
      return m;
    }
    throw conflict(name, m, 'gauge');
  }

  settableGauge(name: readonly string[]): SettableGauge {
    const node = this.#nodeFor(name);
    const m = node.metric;
    if (m === undefined) return this.#attachGauge(node, undefined);
    if (m.kind === 'gauge' && m.settable) return m;
    throw conflict(name, m, 'settable gauge');
  }

  histogram(name: readonly string[]): Histogram {
    const node = this.#nodeFor(name);
    const m = node.metric;
    if (m === undefined) return (node.metric = new HistogramMetric());
    if (m.kind === 'histogram') return m;
    throw conflict(name, m, 'histogram');
  }

  /**
   * Removes the subtree at `prefix` (all its metrics). Instances already handed out keep working
   * but are no longer exported. Returns whether anything was removed.
   */
  prune(prefix: readonly string[]): boolean {
    const node = this.#lookup(prefix);
    if (!node?.parent) return false;
    node.parent.children.delete(node.name);
    removeIfEmpty(node.parent);
    return true;
  }

  /** The node at exactly these segments. */
  resolve(name: readonly string[]): MetricsNode | undefined {
    return this.#lookup(name);
  }

  /**
   * The node whose flat name (segments joined by `/`) is `path`, e.g. `rt/http/client/$/inet/127.1/8080`.
   * Segments containing `/` are matched whole; leading and trailing slashes are ignored.
   */
  find(path: string): MetricsNode | undefined {
    const q = path.replace(/^\/+|\/+$/g, '');
    return q === '' ? this.#root : findFlat(this.#root, q);
  }

  /** Ends the current histogram interval everywhere (runs on the snapshot timer). */
  snapshotHistograms(): void {
    snapshotAll(this.#root);
    this.#snapshots++;
  }

  /** How many histogram intervals have ended: tells a reader whether the last intervals changed. */
  get snapshotCount(): number {
    return this.#snapshots;
  }

  /** Stops the snapshot timer. */
  close(): void {
    this.#cancelSnapshots();
  }

  #attachGauge(node: Node, fn: (() => number) | undefined): GaugeMetric {
    const g: GaugeMetric = new GaugeMetric(fn, () => {
      // Only this exact gauge is removed: after a prune a new one may live at the same name.
      if (node.metric === g && node.attached) {
        node.metric = undefined;
        removeIfEmpty(node);
      }
    });
    node.metric = g;
    return g;
  }

  #nodeFor(name: readonly string[]): Node {
    let node = this.#root;
    for (const seg of name) {
      if (seg === '') continue;
      let child = node.children.get(seg);
      if (!child) {
        child = new Node(seg, node);
        node.children.set(seg, child);
      }
      node = child;
    }
    if (node === this.#root) throw new EmptyMetricNameError();
    return node;
  }

  #lookup(name: readonly string[]): Node | undefined {
    let node: Node | undefined = this.#root;
    for (const seg of name) {
      if (seg === '') continue;
      node = node.children.get(seg);
      if (!node) return undefined;
    }
    return node;
  }
}

function conflict(name: readonly string[], existing: Metric, requested: string): MetricTypeConflictError {
  const kind = existing.kind === 'gauge' && existing.settable ? 'settable gauge' : existing.kind;
  return new MetricTypeConflictError(name.filter((s) => s !== '').join('/'), kind, requested);
}

/** Drops empty nodes upward so removed gauges and pruned scopes leave no residue. */
function removeIfEmpty(node: Node): void {
  let n = node;
  while (n.parent && n.metric === undefined && n.children.size === 0) {
    n.parent.children.delete(n.name);
    n = n.parent;
  }
}

function snapshotAll(node: Node): void {
  if (node.metric?.kind === 'histogram') node.metric.snapshot();
  for (const child of node.children.values()) snapshotAll(child);
}

function findFlat(node: Node, rest: string): Node | undefined {
  for (const [name, child] of node.children) {
    if (rest === name) return child;
    if (rest.startsWith(name) && rest.charCodeAt(name.length) === 0x2f /* / */) {
      const found = findFlat(child, rest.slice(name.length + 1));
      if (found) return found;
    }
  }
  return undefined;
}

/** The receiver over a registry: a fixed scope, resolved to nodes only when metrics are created. */
class RegistryStatsReceiver implements StatsReceiver {
  readonly isNull = false;
  readonly #registry: MetricsRegistry;
  readonly #scope: readonly string[];

  constructor(registry: MetricsRegistry, scope: readonly string[]) {
    this.#registry = registry;
    this.#scope = scope;
  }

  scope(...names: string[]): StatsReceiver {
    const extra = names.filter((n) => n !== '');
    return extra.length === 0 ? this : new RegistryStatsReceiver(this.#registry, [...this.#scope, ...extra]);
  }

  counter(...names: string[]): Counter {
    return this.#registry.counter([...this.#scope, ...names]);
  }

  gauge(names: readonly string[], fn: () => number): Gauge {
    return this.#registry.gauge([...this.#scope, ...names], fn);
  }

  settableGauge(...names: string[]): SettableGauge {
    return this.#registry.settableGauge([...this.#scope, ...names]);
  }

  stat(...names: string[]): Histogram {
    return this.#registry.histogram([...this.#scope, ...names]);
  }

  prune(...names: string[]): void {
    this.#registry.prune([...this.#scope, ...names]);
  }
}
