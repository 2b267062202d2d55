/**
 * `/admin/metrics.json`, as Linkerd's admin metrics export serves it: a flat object keyed by the
 * `/`-joined metric name, counters as integers, gauges as floats (`1.0`), and each histogram as
 * `X.count` plus, when it saw values, `X.max X.min X.p50 X.p90 X.p95 X.p99 X.p9990 X.p9999 X.sum
 * X.avg` from the last snapshot. A histogram appears only after its first snapshot.
 */
import { readGauge, type MetricsNode, type MetricsRegistry, type HistogramSummary, type Metric } from '../service/stats/index.js';

/** Query options of `/admin/metrics.json`. */
export interface MetricsJsonOptions {
  /** `?pretty=1`: keys sorted, output indented. */
  readonly pretty?: boolean;
  /** `?tree=1`: nested objects whose leaves are `{"counter":n}`, `{"gauge":x}`, `{"stat.count":n,…}`. */
  readonly tree?: boolean;
  /** `?q=a/b`: only the subtree at that name (keys relative to it). */
  readonly q?: string | undefined;
}

/** The response: a body to serve with 200, or (for an unknown `q`) with 404. */
export type MetricsJsonResult =
  | { readonly found: true; readonly body: string }
  | { readonly found: false; readonly body: string };

/** Renders the registry (or the `q` subtree) as `metrics.json`. */
export function renderMetricsJson(registry: MetricsRegistry, options: MetricsJsonOptions = {}): MetricsJsonResult {
  const q = options.q;
  const node = q === undefined ? registry.root : registry.find(q);
  if (!node) return { found: false, body: `{"error": ${JSON.stringify(`No such subtree: ${q}`)}}` };
  const pretty = options.pretty === true;
  if (options.tree === true) return { found: true, body: renderTree(node, pretty, 1) };
  const fields: Field[] = [];
  flatten(node, '', fields);
  if (pretty) fields.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { found: true, body: renderObject(fields, pretty, 1) };
}

/** A key and its already-serialized JSON value. */
type Field = readonly [key: string, json: string];

function flatten(node: MetricsNode, name: string, out: Field[]): void {
  if (node.metric) metricFields(name, node.metric, out);
  for (const child of node.children.values()) flatten(child, name === '' ? child.name : `${name}/${child.name}`, out);
}

function metricFields(name: string, metric: Metric, out: Field[]): void {
  switch (metric.kind) {
    case 'counter': {
      const v = metric.value;
      if (Number.isFinite(v)) out.push([name, String(v)]);
      return;
    }
    case 'gauge': {
      const v = readGauge(metric);
      if (v !== undefined) out.push([name, floatJson(v)]);
      return;
    }
    case 'histogram': {
      const s = metric.summaryOrSoFar;
      if (s) summaryFields(name, s, out);
      return;
    }
  }
}

function summaryFields(name: string, s: HistogramSummary, out: Field[]): void {
  out.push([`${name}.count`, String(s.count)]);
  if (s.count === 0) return;
  out.push(
    [`${name}.max`, String(s.max)],
    [`${name}.min`, String(s.min)],
    [`${name}.p50`, String(s.p50)],
    [`${name}.p90`, String(s.p90)],
    [`${name}.p95`, String(s.p95)],
    [`${name}.p99`, String(s.p99)],
    [`${name}.p9990`, String(s.p9990)],
    [`${name}.p9999`, String(s.p9999)],
    [`${name}.sum`, String(s.sum)],
    [`${name}.avg`, floatJson(s.avg)],
  );
}

function renderTree(node: MetricsNode, pretty: boolean, depth: number): string {
  const fields: Field[] = [];
  const m = node.metric;
  if (m) metricFields(m.kind === 'histogram' ? 'stat' : m.kind, m, fields);
  for (const child of node.children.values()) fields.push([child.name, renderTree(child, pretty, depth + 1)]);
  return renderObject(fields, pretty, depth);
}

function renderObject(fields: readonly Field[], pretty: boolean, depth: number): string {
  if (fields.length === 0) return '{}';
  if (!pretty) return `{${fields.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`;
  const pad = '  '.repeat(depth);
  const body = fields.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${v}`).join(',\n');
  return `{\n${body}\n${'  '.repeat(depth - 1)}}`;
}

/** A finite number as a JSON float: integral values keep a `.0` so gauges read as floats. */
function floatJson(v: number): string {
  return Number.isInteger(v) && Math.abs(v) < 1e21 ? `${v}.0` : String(v);
}
