/**
 * The proxy's dashboard (`/`): polls `/admin/summary.json` once a second and turns cumulative
 * counters into rates from the difference between two polls. Routers are collapsible panels with a
 * live uPlot chart; clients are table rows, filtered, sorted and capped so 500 clients stay fast.
 */
import type uPlot from 'uplot';
import { pushPoint, rateChart, type RateHistory } from './charts.js';
import { count, duration, el, bytes, fetchJson, main, ms, pageData, percent, rate, statusLine } from './common.js';

interface Summary {
  readonly time: number;
  readonly layout: number;
  readonly process: { version: string; uptimeMs: number; rss: number; heapUsed: number; heapTotal: number; eventLoopUtilization: number | null };
  readonly routerFields: readonly string[];
  readonly clientFields: readonly string[];
  readonly routers?: readonly { label: string; protocol: string }[];
  readonly clients?: readonly (readonly string[])[];
  readonly routerValues: readonly (readonly (number | null)[])[];
  readonly clientValues: readonly (readonly (number | null)[])[];
}

const POLL_MS = 1000;
const HISTORY = 300; // five minutes of one-second points
const MAX_ROWS = 100;
const CLIENT_HISTORY = 120; // two minutes per client
/** Linkerd's default retry budget: 20% of requests may be retried. */
const RETRY_BUDGET = 0.2;

// Column indexes: must follow ROUTER_FIELDS / CLIENT_FIELDS of summary.ts (the page checks the names).
const R = { requests: 0, success: 1, failures: 2, retries: 3, budgetExhausted: 4, pending: 5, connections: 6, clientConnections: 7 } as const;
const C = { requests: 0, success: 1, failures: 2, p50: 3, p95: 4, p99: 5, lbSize: 6, lbAvailable: 7, removals: 8, connections: 9, pending: 10, requeues: 11 } as const;
const CLIENT_WIDTH = 12;

interface ClientRow {
  readonly id: string;
  readonly tr: HTMLTableRowElement;
  readonly cells: HTMLTableCellElement[];
  rps: number | null;
  successRate: number | null;
  p99: number | null;
  /** The latest row of the summary (CLIENT_FIELDS order). */
  values: readonly (number | null)[];
  /** The last two minutes, kept for every client so a chart opened later has a past. */
  readonly history: RateHistory;
  /** The chart row under this row, while the operator has it open (click the row). */
  detail: { readonly tr: HTMLTableRowElement; readonly chart: uPlot } | undefined;
}

interface RouterView {
  readonly label: string;
  readonly details: HTMLDetailsElement;
  readonly stats: Record<string, HTMLElement>;
  readonly budgetBar: HTMLElement;
  readonly chart: uPlot;
  readonly history: RateHistory;
  readonly tbody: HTMLTableSectionElement;
  readonly clientCount: HTMLElement;
  readonly rows: Map<string, ClientRow>;
  prev: readonly (number | null)[] | undefined;
  lastSuccessRate: number | null;
}

const status = statusLine();
const filterInput = el('input', { type: 'search', placeholder: 'Filter clients (substring)', 'aria-label': 'Filter clients', size: 32 });
const sortSelect = el(
  'select',
  { 'aria-label': 'Sort clients' },
  el('option', { value: 'name' }, 'Sort: name'),
  el('option', { value: 'rps' }, 'Sort: requests/s'),
  el('option', { value: 'success' }, 'Sort: success rate (worst first)'),
  el('option', { value: 'p99' }, 'Sort: p99 latency (slowest first)'),
);
const processStats: Record<string, HTMLElement> = {};
const routersNode = el('div', { id: 'routers' });
const views = new Map<string, RouterView>();
let layout = 0;
let routerOrder: string[] = [];
let clientIds: readonly (readonly string[])[] = [];
let prevTime = 0;
/** Previous counters per client, keyed `<router>\0<client id>`, for rates. */
let prevClients = new Map<string, readonly (number | null)[]>();

function stat(into: Record<string, HTMLElement>, key: string, label: string): HTMLElement {
  const value = el('div', { class: 'value', 'data-stat': key }, '–');
  into[key] = value;
  return el('div', { class: 'stat' }, el('div', { class: 'label' }, label), value);
}

function build(): void {
  const m = main();
  const initial = pageData<{ routers: { label: string; protocol: string }[] } | null>();
  m.append(
    el('section', { class: 'panel', id: 'process' },
      el('div', { class: 'stats' },
        stat(processStats, 'version', 'Version'), stat(processStats, 'uptime', 'Uptime'), stat(processStats, 'rss', 'RSS'),
        stat(processStats, 'heap', 'Heap used / total'), stat(processStats, 'elu', 'Event loop busy'),
        stat(processStats, 'requests', 'Requests'), stat(processStats, 'rps', 'Requests/s'), stat(processStats, 'success', 'Success rate'),
        stat(processStats, 'pending', 'Pending'), stat(processStats, 'connIn', 'Connections in'), stat(processStats, 'connOut', 'Connections out'),
      )),
    el('div', { class: 'controls' }, filterInput, sortSelect,
      el('button', { class: 'secondary', type: 'button', onclick: () => toggleAll(false) }, 'Collapse all'),
      el('button', { class: 'secondary', type: 'button', onclick: () => toggleAll(true) }, 'Expand all'),
      status.node),
    routersNode,
  );
  for (const r of initial?.routers ?? []) routerView(r.label, r.protocol);
  filterInput.addEventListener('input', () => renderAllTables());
  sortSelect.addEventListener('change', () => renderAllTables());
}

function toggleAll(open: boolean): void {
  for (const v of views.values()) v.details.open = open;
}

function routerView(label: string, protocol: string): RouterView {
  const existing = views.get(label);
  if (existing) return existing;
  const stats: Record<string, HTMLElement> = {};
  const budgetBar = el('span');
  const chartNode = el('div', { class: 'chart' });
  const tbody = el('tbody');
  const clientCount = el('span', { class: 'muted' });
  const details = el('details', { class: 'router panel', open: true, 'data-router': label },
    el('summary', {}, el('h2', {}, label), el('span', { class: 'badge' }, protocol)),
    el('div', { class: 'stats' },
      stat(stats, 'requests', 'Requests'), stat(stats, 'rps', 'Requests/s'), stat(stats, 'success', 'Success rate'),
      stat(stats, 'retries', 'Retries'), stat(stats, 'pending', 'Pending'), stat(stats, 'connections', 'Connections'),
      el('div', { class: 'stat' }, el('div', { class: 'label' }, 'Retry budget use'),
        el('div', {}, el('span', { class: 'bar', 'data-budget': label }, budgetBar), ' ', (stats['budget'] = el('span', { class: 'muted' }, '–'))))),
    chartNode,
    el('h3', {}, 'Clients ', clientCount),
    el('table', { class: 'clients' },
      el('thead', {}, el('tr', {},
        el('th', {}, 'Client'), el('th', { class: 'num' }, 'Requests/s'), el('th', { class: 'num' }, 'Success'),
        el('th', { class: 'num' }, 'p50'), el('th', { class: 'num' }, 'p95'), el('th', { class: 'num' }, 'p99'),
        el('th', { class: 'num' }, 'LB size / available'), el('th', { class: 'num' }, 'FA removals'), el('th', { class: 'num' }, 'Connections'))),
      tbody),
  );
  routersNode.append(details);
  const history: RouterView['history'] = [[], [], []];
  const chart = rateChart(chartNode, history, chartWidth(), 160, HISTORY);
  const view: RouterView = { label, details, stats, budgetBar, chart, history, tbody, clientCount, rows: new Map(), prev: undefined, lastSuccessRate: null };
  views.set(label, view);
  return view;
}

function removeRouter(label: string): void {
  const v = views.get(label);
  if (!v) return;
  v.chart.destroy();
  v.details.remove();
  views.delete(label);
}

function successRate(dSuccess: number, dFailures: number): number | null {
  const total = dSuccess + dFailures;
  return total > 0 ? dSuccess / total : null;
}

const delta = (a: number | null | undefined, b: number | null | undefined): number => Math.max(0, (a ?? 0) - (b ?? 0));

function clientRow(view: RouterView, id: string): ClientRow {
  const existing = view.rows.get(id);
  if (existing) return existing;
  const cells = Array.from({ length: 8 }, () => el('td', { class: 'num' }));
  const tr = el('tr', { 'data-client': id, class: 'client', title: 'Click for a chart of this client' }, el('td', { class: 'id' }, `/${id}`), ...cells);
  const created: ClientRow = { id, tr, cells, rps: null, successRate: null, p99: null, values: [], history: [[], [], []], detail: undefined };
  tr.addEventListener('click', () => toggleDetail(created));
  view.rows.set(id, created);
  return created;
}

function toggleDetail(row: ClientRow): void {
  if (row.detail) {
    row.detail.chart.destroy();
    row.detail.tr.remove();
    row.detail = undefined;
    return;
  }
  const holder = el('div', { class: 'chart' });
  const tr = el('tr', { class: 'detail', 'data-detail-of': row.id }, el('td', { colspan: 9 }, holder));
  row.tr.after(tr);
  row.detail = { tr, chart: rateChart(holder, row.history, chartWidth() - 40, 120, CLIENT_HISTORY) };
}

function dropRow(row: ClientRow): void {
  row.detail?.chart.destroy();
  row.detail?.tr.remove();
}

const chartWidth = (): number => Math.max(300, routersNode.clientWidth - 40);

function apply(s: Summary): void {
  if (s.routers && s.clients) {
    layout = s.layout;
    routerOrder = s.routers.map((r) => r.label);
    clientIds = s.clients;
    for (const r of s.routers) routerView(r.label, r.protocol);
    for (const label of [...views.keys()]) if (!routerOrder.includes(label)) removeRouter(label);
  }
  const dt = prevTime === 0 ? 0 : (s.time - prevTime) / 1000;
  const nextClients = new Map<string, readonly (number | null)[]>();
  const totals = { requests: 0, dRequests: 0, dSuccess: 0, dFailures: 0, pending: 0, connIn: 0, connOut: 0 };
  routerOrder.forEach((label, i) => {
    const view = views.get(label);
    const values = s.routerValues[i];
    if (!view || !values) return;
    const prev = view.prev;
    view.prev = values;
    const dReq = prev ? delta(values[R.requests], prev[R.requests]) : 0;
    const dSucc = prev ? delta(values[R.success], prev[R.success]) : 0;
    const dFail = prev ? delta(values[R.failures], prev[R.failures]) : 0;
    const dRetries = prev ? delta(values[R.retries], prev[R.retries]) : 0;
    const rps = dt > 0 ? dReq / dt : null;
    const sr = successRate(dSucc, dFail) ?? view.lastSuccessRate;
    view.lastSuccessRate = sr;
    totals.requests += values[R.requests] ?? 0;
    totals.dRequests += dReq;
    totals.dSuccess += dSucc;
    totals.dFailures += dFail;
    totals.pending += values[R.pending] ?? 0;
    totals.connIn += values[R.connections] ?? 0;
    totals.connOut += values[R.clientConnections] ?? 0;
    set(view.stats, 'requests', count(values[R.requests]));
    set(view.stats, 'rps', rate(rps));
    setRate(view.stats['success'], sr);
    set(view.stats, 'retries', count(values[R.retries]));
    set(view.stats, 'pending', count(values[R.pending]));
    set(view.stats, 'connections', count(values[R.connections]));
    const budgetUse = dReq > 0 ? dRetries / dReq / RETRY_BUDGET : 0;
    view.budgetBar.style.width = `${Math.min(100, budgetUse * 100).toFixed(0)}%`;
    view.budgetBar.parentElement?.setAttribute('class', `bar${budgetUse > 0.75 ? ' bad' : budgetUse > 0.5 ? ' warn' : ''}`);
    set(view.stats, 'budget', `${(budgetUse * 100).toFixed(0)}% of ${RETRY_BUDGET * 100}%`);
    if (dt > 0) {
      pushPoint(view.history, s.time / 1000, rps, sr === null ? null : sr * 100, HISTORY);
      if (view.details.open) view.chart.setData(view.history);
    }
    // clients
    const ids = clientIds[i] ?? [];
    const flat = s.clientValues[i] ?? [];
    ids.forEach((id, j) => {
      const key = `${label}\0${id}`;
      const cur = flat.slice(j * CLIENT_WIDTH, (j + 1) * CLIENT_WIDTH);
      const before = prevClients.get(key);
      nextClients.set(key, cur);
      const row = clientRow(view, id);
      const cd = (k: number): number => (before ? delta(cur[k], before[k]) : 0);
      row.rps = dt > 0 && before ? cd(C.requests) / dt : null;
      // An idle interval keeps the last success rate rather than flickering to '–'.
      row.successRate = (before ? successRate(cd(C.success), cd(C.failures)) : null) ?? row.successRate;
      row.p99 = cur[C.p99] ?? null;
      if (row.rps !== null) pushPoint(row.history, s.time / 1000, row.rps, row.successRate === null ? null : row.successRate * 100, CLIENT_HISTORY);
      row.values = cur;
      if (view.details.open && row.detail) row.detail.chart.setData(row.history);
    });
    const present = new Set(ids);
    for (const [id, row] of view.rows) {
      if (present.has(id)) continue;
      dropRow(row);
      view.rows.delete(id);
    }
  });
  prevClients = nextClients;
  prevTime = s.time;
  const p = s.process;
  set(processStats, 'version', p.version);
  set(processStats, 'uptime', duration(p.uptimeMs));
  set(processStats, 'rss', bytes(p.rss));
  set(processStats, 'heap', `${bytes(p.heapUsed)} / ${bytes(p.heapTotal)}`);
  set(processStats, 'elu', percent(p.eventLoopUtilization, 1));
  set(processStats, 'requests', count(totals.requests));
  set(processStats, 'rps', rate(dt > 0 ? totals.dRequests / dt : null));
  setRate(processStats['success'], successRate(totals.dSuccess, totals.dFailures));
  set(processStats, 'pending', count(totals.pending));
  set(processStats, 'connIn', count(totals.connIn));
  set(processStats, 'connOut', count(totals.connOut));
  renderAllTables();
}

function renderAllTables(): void {
  const filter = filterInput.value.trim().toLowerCase();
  const sort = sortSelect.value;
  for (const view of views.values()) {
    if (!view.details.open) continue;
    let rows = [...view.rows.values()];
    const total = rows.length;
    if (filter !== '') rows = rows.filter((r) => `/${r.id}`.toLowerCase().includes(filter));
    const matching = rows.length;
    rows.sort((a, b) => {
      switch (sort) {
        case 'rps': return (b.rps ?? -1) - (a.rps ?? -1) || cmp(a.id, b.id);
        case 'success': return (a.successRate ?? 2) - (b.successRate ?? 2) || cmp(a.id, b.id);
        case 'p99': return (b.p99 ?? -1) - (a.p99 ?? -1) || cmp(a.id, b.id);
        default: return cmp(a.id, b.id);
      }
    });
    const shown = rows.slice(0, MAX_ROWS);
    // Only the rows on screen are painted: with 500 clients that is a fifth of the DOM writes.
    for (const r of shown) paint(r);
    view.tbody.replaceChildren(...shown.flatMap((r) => (r.detail ? [r.tr, r.detail.tr] : [r.tr])));
    view.clientCount.textContent =
      matching < total || shown.length < matching
        ? `(${shown.length} shown of ${matching} matching, ${total} in all${shown.length < matching ? '; refine the filter to see the rest' : ''})`
        : `(${total})`;
  }
}

function paint(row: ClientRow): void {
  const c = row.cells;
  const v = row.values;
  text(c[0], rate(row.rps));
  text(c[1], percent(row.successRate));
  c[1]?.setAttribute('class', `num ${rateClass(row.successRate)}`);
  text(c[2], ms(v[C.p50]));
  text(c[3], ms(v[C.p95]));
  text(c[4], ms(v[C.p99]));
  text(c[5], `${count(v[C.lbSize])} / ${count(v[C.lbAvailable])}`);
  text(c[6], count(v[C.removals]));
  text(c[7], count(v[C.connections]));
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const rateClass = (r: number | null): string => (r === null ? '' : r >= 0.99 ? 'good' : r >= 0.9 ? 'warn' : 'bad');

function set(stats: Record<string, HTMLElement>, key: string, value: string): void {
  const node = stats[key];
  if (node && node.textContent !== value) node.textContent = value;
}

function setRate(node: HTMLElement | undefined, r: number | null): void {
  if (!node) return;
  node.textContent = percent(r);
  node.className = `value ${rateClass(r)}`;
}

function text(node: HTMLElement | undefined, value: string): void {
  if (node && node.textContent !== value) node.textContent = value;
}

async function poll(): Promise<void> {
  try {
    const s = await fetchJson<Summary>(`/admin/summary.json?layout=${layout}`);
    const started = performance.now();
    apply(s);
    // What one update costs the browser; the 500-client test reports it.
    performance.measure('prx-update', { start: started, end: performance.now() });
    if (performance.getEntriesByName('prx-first-render').length === 0) performance.mark('prx-first-render');
    status.set(`updated ${new Date(s.time).toLocaleTimeString()}`, 'info');
  } catch (e) {
    status.set(`cannot read /admin/summary.json: ${e instanceof Error ? e.message : String(e)}`, 'error');
  } finally {
    setTimeout(() => void poll(), POLL_MS);
  }
}

window.addEventListener('resize', () => {
  for (const v of views.values()) v.chart.setSize({ width: chartWidth(), height: 160 });
});

build();
void poll();
