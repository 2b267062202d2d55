/**
 * Prometheus text exposition (format 0.0.4) of the metrics registry, with Linkerd's label
 * extraction: router, service, client and server scopes become labels, so
 * `rt/http/client/$/inet/127.1/8080/service/svc/dog/requests` is exported as
 * `rt:client:service:requests{rt="http",client="$/inet/127.1/8080",service="svc/dog"}`.
 * Label values come from whole name segments (see `service/stats/scopes.ts`), never from
 * re-splitting strings. Exception breakdowns (`…/failures/<exc>…`, `…/exn/<exc>…`) become an
 * `exception` label, nested names joined by `:`, and `exn` is exported as `exceptions`.
 *
 * Where Linkerd's output breaks the official format, the format wins: label values escape `\`,
 * `"` and newline as `\\`, `\"` and `\n`; labels are separated by `,` alone; every line of a
 * metric family is emitted together under one `# TYPE` line; and names are made valid for
 * `[a-zA-Z_:][a-zA-Z0-9_:]*`. Histograms are summaries of the last snapshot: quantile lines
 * (0, 0.5 … 0.9999, 1) and `_avg` when the interval saw values, `_sum` and `_count` always once
 * snapshotted; a histogram never snapshotted is omitted.
 */
import {
  readGauge,
  type HistogramSummary,
  type MetricsNode,
  type MetricsRegistry,
} from '../service/stats/index.js';

type Labels = readonly (readonly [name: string, value: string])[];
type FamilyType = 'counter' | 'gauge' | 'summary';

interface Family {
  readonly type: FamilyType;
  readonly lines: string[];
}

/** Media type of the text exposition format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Renders the registry; `prefix` (e.g. `prx_`) is prepended to every metric name. */
export function renderPrometheus(registry: MetricsRegistry, prefix = ''): string {
  const out = new Exposition(prefix);
  out.walk(registry.root, [], []);
  return out.render();
}

class Exposition {
  readonly #prefix: string;
  readonly #families = new Map<string, Family>();
  readonly #series = new Set<string>();

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  walk(node: MetricsNode, name: readonly string[], labels: Labels): void {
    for (const child of node.children.values()) {
      const [childName, childLabels] = extractLabels([...name, child.name], labels);
      const m = child.metric;
      if (m) {
        const family = metricName(this.#prefix, childName);
        if (family !== '') {
          switch (m.kind) {
            case 'counter':
              this.#sample(family, 'counter', family, childLabels, m.value);
              break;
            case 'gauge': {
              const v = readGauge(m);
              if (v !== undefined) this.#sample(family, 'gauge', family, childLabels, v);
              break;
            }
            case 'histogram':
              if (m.summary) this.#summary(family, childLabels, m.summary);
              break;
          }
        }
      }
      this.walk(child, childName, childLabels);
    }
  }

  render(): string {
    let text = '';
    for (const [name, f] of this.#families) text += `# TYPE ${name} ${f.type}\n${f.lines.join('')}`;
    return text;
  }

  #summary(family: string, labels: Labels, s: HistogramSummary): void {
    if (s.count > 0) {
      const quantiles: [string, number][] = [
        ['0', s.min],
        ['0.5', s.p50],
        ['0.9', s.p90],
        ['0.95', s.p95],
        ['0.99', s.p99],
        ['0.999', s.p9990],
        ['0.9999', s.p9999],
        ['1', s.max],
      ];
      for (const [q, v] of quantiles) this.#sample(family, 'summary', family, [...labels, ['quantile', q]], v);
    }
    this.#sample(family, 'summary', `${family}_sum`, labels, s.sum);
    this.#sample(family, 'summary', `${family}_count`, labels, s.count);
    // Not part of a Prometheus summary, so exported as its own gauge family.
    if (s.count > 0) this.#sample(`${family}_avg`, 'gauge', `${family}_avg`, labels, s.avg);
  }

  #sample(familyName: string, type: FamilyType, name: string, labels: Labels, value: number): void {
    let family = this.#families.get(familyName);
    if (!family) {
      family = { type, lines: [] };
      this.#families.set(familyName, family);
    } else if (family.type !== type) {
      return; // Two metrics sanitised to one name with different types: keep the first.
    }
    const series = name + renderLabels(labels);
    if (this.#series.has(series)) return; // Distinct scopes that sanitise to the same series.
    this.#series.add(series);
    family.lines.push(`${series} ${formatValue(value)}\n`);
  }
}

/**
 * Linkerd's rewrites, applied as the walk descends: `rt/<router>` → label `rt`;
 * `rt/{service,client,server}/<id>` → label of that name; `rt/client/service/<path>` → `service`;
 * `failures|exn/<exc>…` → `exception`.
 */
function extractLabels(name: readonly string[], labels: Labels): [readonly string[], Labels] {
  const has = (k: string): boolean => labels.some(([l]) => l === k);
  const [a, b, c, d] = name;
  if (name.length === 2 && a === 'rt' && !has('rt')) return [['rt'], [...labels, ['rt', b as string]]];
  if (name.length === 3 && a === 'rt' && (b === 'service' || b === 'client' || b === 'server') && !has(b)) {
    return [['rt', b], [...labels, [b, c as string]]];
  }
  if (name.length === 4 && a === 'rt' && b === 'client' && c === 'service' && !has('service')) {
    return [['rt', 'client', 'service'], [...labels, ['service', d as string]]];
  }
  const parent = name[name.length - 2];
  const last = name[name.length - 1] as string;
  const exc = labels.findIndex(([l]) => l === 'exception');
  if (exc >= 0 && isExceptionScope(parent)) {
    // Below an exception label: deeper segments are nested exception names.
    const [, v] = labels[exc] as readonly [string, string];
    const next = [...labels];
    next[exc] = ['exception', `${v}:${last}`];
    return [name.slice(0, -1), next];
  }
  if (exc < 0 && (parent === 'failures' || parent === 'exn')) {
    const base = name.slice(0, -2);
    return [[...base, parent === 'exn' ? 'exceptions' : 'failures'], [...labels, ['exception', last]]];
  }
  return [name, labels];
}

function isExceptionScope(segment: string | undefined): boolean {
  return segment === 'failures' || segment === 'exceptions';
}

/** Segments joined by `:` with the prefix, reduced to the metric-name alphabet. */
function metricName(prefix: string, name: readonly string[]): string {
  const raw = (prefix + name.join(':')).replace(/[^a-zA-Z0-9_:]/g, '_');
  return /^[0-9]/.test(raw) ? `_${raw}` : raw;
}

function renderLabels(labels: Labels): string {
  if (labels.length === 0) return '';
  return `{${labels.map(([k, v]) => `${k.replace(/[^a-zA-Z0-9_]/g, '_')}="${escapeLabelValue(v)}"`).join(',')}}`;
}

function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (ch) => (ch === '\n' ? '\\n' : `\\${ch}`));
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
