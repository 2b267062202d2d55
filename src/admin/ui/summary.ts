/**
 * `/admin/summary.json`: what the dashboard draws, and nothing else, in a shape that is cheap to
 * build and to send every second with hundreds of clients.
 *
 * Why not `metrics.json`: Linkerd's dashboard polled the whole metrics tree every second, which
 * for 500 clients is thousands of keys rendered, sent and parsed per poll. This endpoint reads
 * a dozen metrics per client straight from the registry's nodes and answers with flat number
 * arrays whose columns are named once (`fields`). Names (routers, clients) change rarely, so they
 * are sent only when the caller's `layout` query differs from the current layout version; the page
 * keeps them and, between layout changes, receives numbers only. Counters are cumulative: the page
 * computes rates from the deltas between two polls, so a missed poll loses nothing.
 */
import { readGauge, type HistogramMetric, type HistogramSummary, type MetricsNode, type MetricsRegistry } from '../../service/stats/index.js';
import type { RegistrySource } from '../endpoints/metrics.js';
import { jsonResponse, type AdminEndpoint } from '../handler.js';

/** Columns of a router row. */
export const ROUTER_FIELDS = [
  'requests', 'success', 'failures', 'retries', 'budgetExhausted', 'pending', 'connections', 'clientConnections',
] as const;

/** Columns of a client row. `null` where the client has not produced the metric yet. */
export const CLIENT_FIELDS = [
  'requests', 'success', 'failures', 'p50', 'p95', 'p99', 'lbSize', 'lbAvailable', 'removals', 'connections', 'pending', 'requeues',
] as const;

/** A router the dashboard shows (its label is the `rt/<label>` scope). */
export interface DashboardRouter {
  readonly label: string;
  readonly protocol: string;
}

/** The `process` figures of a poll: this process's own unless the options say otherwise. */
export interface ProcessFigures {
  readonly uptimeMs: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly eventLoopUtilization?: number | undefined;
}

export interface SummaryOptions {
  readonly registry: MetricsRegistry;
  readonly routers: () => readonly DashboardRouter[];
  readonly version: string;
  /** Event-loop utilisation of the last window (0–1), when a monitor measures it. */
  readonly eventLoopUtilization?: () => number | undefined;
  /** Figures of the whole proxy when it is more than this process (its workers' totals). */
  readonly processFigures?: (registry: MetricsRegistry) => ProcessFigures;
}

type Num = number | null;

/** The response body. `routers` and `clients` only when the layout changed (see module comment). */
export interface SummaryBody {
  readonly time: number;
  readonly layout: number;
  readonly process: {
    readonly version: string;
    readonly uptimeMs: number;
    readonly rss: number;
    readonly heapUsed: number;
    readonly heapTotal: number;
    readonly eventLoopUtilization: Num;
  };
  readonly routerFields: typeof ROUTER_FIELDS;
  readonly clientFields: typeof CLIENT_FIELDS;
  readonly routers?: readonly DashboardRouter[];
  /** Per router (same order as `routers`), its client ids (the scope segment: the id without its leading `/`). */
  readonly clients?: readonly (readonly string[])[];
  /** Per router, one row of `routerFields`. */
  readonly routerValues: readonly Num[][];
  /** Per router, its clients' rows flattened: `clientFields.length` numbers per client, in `clients` order. */
  readonly clientValues: readonly Num[][];
}

/**
 * Tracks the layout (routers and their client ids) between polls; the version goes up whenever
 * it changes. One instance per endpoint, shared by every page polling it.
 */
export class LayoutTracker {
  #version = 1;
  #routers: readonly DashboardRouter[] = [];
  #clients: string[][] = [];

  /** Compares with the previous poll's layout, bumping the version on any difference. */
  update(routers: readonly DashboardRouter[], clients: string[][]): number {
    if (!sameRouters(routers, this.#routers) || !sameClients(clients, this.#clients)) {
      this.#version++;
      this.#routers = routers;
      this.#clients = clients;
    }
    return this.#version;
  }
}

function sameRouters(a: readonly DashboardRouter[], b: readonly DashboardRouter[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i]?.label !== b[i]?.label || a[i]?.protocol !== b[i]?.protocol) return false;
  return true;
}

function sameClients(a: readonly (readonly string[])[], b: readonly (readonly string[])[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as readonly string[];
    const y = b[i] as readonly string[];
    if (x.length !== y.length) return false;
    for (let j = 0; j < x.length; j++) if (x[j] !== y[j]) return false;
  }
  return true;
}

/** The summary endpoint (category `ui`: the dashboard cannot work without it). */
export function summaryEndpoint(options: Omit<SummaryOptions, 'registry'> & { readonly registry: RegistrySource }): AdminEndpoint {
  const tracker = new LayoutTracker();
  const { registry } = options;
  return {
    path: '/admin/summary.json',
    method: 'GET',
    category: 'ui',
    description: 'Compact live summary the dashboard polls: process, routers, clients. Query `layout` (the version the caller has).',
    handler:
      typeof registry === 'function'
        ? async (req) => {
            const known = Number(req.query.get('layout') ?? '0');
            return jsonResponse(buildSummary({ ...options, registry: await registry(req) }, tracker, known));
          }
        : (req) => {
            const known = Number(req.query.get('layout') ?? '0');
            return jsonResponse(buildSummary({ ...options, registry }, tracker, known));
          },
  };
}

/** Builds one poll's body; exported for the cost measurement and tests. */
export function buildSummary(options: SummaryOptions, tracker: LayoutTracker, knownLayout: number): SummaryBody {
  const { registry } = options;
  const routers = options.routers();
  const rt = registry.root.children.get('rt');
  const clients: string[][] = [];
  const routerValues: Num[][] = [];
  const clientValues: Num[][] = [];
  const now = Date.now();
  for (const router of routers) {
    const scope = rt?.children.get(router.label);
    const clientScope = scope?.children.get('client');
    const ids = clientScope ? [...clientScope.children.keys()] : [];
    clients.push(ids);
    const rows: Num[] = [];
    let retries = 0;
    let clientConnections = 0;
    if (clientScope) {
      for (const client of clientScope.children.values()) {
        const requeues = counter(client, 'retries', 'requeues');
        const connections = gauge(client, 'connections');
        retries += requeues ?? 0;
        clientConnections += connections ?? 0;
        const latency = histogram(client, 'request_latency_ms', now);
        rows.push(
          counter(client, 'requests'), counter(client, 'success'), counter(client, 'failures'),
          latency?.p50 ?? null, latency?.p95 ?? null, latency?.p99 ?? null,
          gauge(client, 'loadbalancer', 'size'), gauge(client, 'loadbalancer', 'available'),
          counter(client, 'failure_accrual', 'removals'), connections, gauge(client, 'pending'), requeues,
        );
      }
    }
    let budgetExhausted = 0;
    for (const service of scope?.children.get('service')?.children.values() ?? []) {
      retries += counter(service, 'retries', 'total') ?? 0;
      budgetExhausted += counter(service, 'retries', 'budget_exhausted') ?? 0;
    }
    let requests = 0;
    let success = 0;
    let failures = 0;
    let pending = 0;
    let connections = 0;
    for (const server of scope?.children.get('server')?.children.values() ?? []) {
      requests += counter(server, 'requests') ?? 0;
      success += counter(server, 'success') ?? 0;
      failures += counter(server, 'failures') ?? 0;
      pending += gauge(server, 'pending') ?? 0;
      connections += gauge(server, 'connections') ?? 0;
    }
    routerValues.push([requests, success, failures, retries, budgetExhausted, pending, connections, clientConnections]);
    clientValues.push(rows);
  }
  const layout = tracker.update(routers, clients);
  const figures = options.processFigures?.(registry) ?? ownFigures(options);
  const elu = figures.eventLoopUtilization;
  return {
    time: now,
    layout,
    process: {
      version: options.version,
      uptimeMs: figures.uptimeMs,
      rss: figures.rss,
      heapUsed: figures.heapUsed,
      heapTotal: figures.heapTotal,
      eventLoopUtilization: elu === undefined ? null : elu,
    },
    routerFields: ROUTER_FIELDS,
    clientFields: CLIENT_FIELDS,
    ...(knownLayout === layout ? {} : { routers: routers.map(({ label, protocol }) => ({ label, protocol })), clients }),
    routerValues,
    clientValues,
  };
}

function ownFigures(options: SummaryOptions): ProcessFigures {
  const memory = process.memoryUsage();
  return {
    uptimeMs: Math.round(process.uptime() * 1000),
    rss: memory.rss,
    heapUsed: memory.heapUsed,
    heapTotal: memory.heapTotal,
    eventLoopUtilization: options.eventLoopUtilization?.(),
  };
}

function child(node: MetricsNode, a: string, b?: string): MetricsNode | undefined {
  const n = node.children.get(a);
  return b === undefined ? n : n?.children.get(b);
}

function counter(node: MetricsNode, a: string, b?: string): Num {
  const m = child(node, a, b)?.metric;
  return m?.kind === 'counter' ? m.value : null;
}

function gauge(node: MetricsNode, a: string, b?: string): Num {
  const m = child(node, a, b)?.metric;
  return m?.kind === 'gauge' ? (readGauge(m) ?? null) : null;
}

/** How long a latency summary computed from live buckets is reused. */
const LIVE_SUMMARY_REUSE_MS = 5000;
const liveSummaries = new WeakMap<HistogramMetric, { readonly at: number; readonly summary: HistogramSummary | undefined }>();

/**
 * The last completed interval's summary, or before the first snapshot (the first minute of a
 * client) the values recorded so far. Those come from a scan of the live buckets (about 1800 per
 * histogram), so a scan is reused for a few seconds rather than repeated on every poll.
 */
function histogram(node: MetricsNode, a: string, now: number): HistogramSummary | undefined {
  const m = node.children.get(a)?.metric;
  if (m?.kind !== 'histogram') return undefined;
  if (m.summary !== undefined) return m.summary;
  const cached = liveSummaries.get(m);
  if (cached !== undefined && now - cached.at < LIVE_SUMMARY_REUSE_MS) return cached.summary;
  const summary = m.summaryOrSoFar;
  liveSummaries.set(m, { at: now, summary });
  return summary;
}
