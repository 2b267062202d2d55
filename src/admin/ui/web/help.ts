/** `/help`: what each page shows, and a link to every JSON endpoint the admin serves (from `/admin`). */
import { el, fetchJson, main, statusLine } from './common.js';

interface EndpointInfo {
  readonly path: string;
  readonly description: string;
  readonly category: string;
}

const status = statusLine();
const list = el('tbody');

const isPage = (p: string): boolean => p === '/' || p === '/delegator' || p === '/logging' || p === '/help' || p.endsWith('/*');

async function load(): Promise<void> {
  const endpoints = await fetchJson<EndpointInfo[]>('/admin');
  list.replaceChildren(
    ...endpoints
      .filter((e) => !isPage(e.path))
      .map((e) => el('tr', {}, el('td', { class: 'id' }, el('a', { href: e.path }, e.path)), el('td', {}, el('span', { class: 'badge' }, e.category)), el('td', {}, e.description))),
  );
}

main().append(
  el('section', { class: 'panel' },
    el('h2', {}, 'Pages'),
    el('ul', {},
      el('li', {}, el('b', {}, 'Dashboard'), ' (proxy) — live request rate, success rate, retries and connections per router, and per client latency, load-balancer size and failure-accrual removals. Filter, sort and collapse to keep hundreds of clients usable. It polls the compact ', el('code', {}, '/admin/summary.json'), ' once a second.'),
      el('li', {}, el('b', {}, 'Dtab playground'), ' (proxy) — how a path delegates through a router\'s dtab, with your edits, step by step; the URL keeps the state, so it can be shared.'),
      el('li', {}, el('b', {}, 'Namespaces'), ' (resolver) — the stored dtabs: edit with checks as you type, save with compare-and-set (a conflicting save is refused and shown), delegate through a namespace.'),
      el('li', {}, el('b', {}, 'Logging'), ' — view and change log levels.'),
    ),
    el('p', { class: 'muted' }, 'Pages belong to the ui security category; changing log levels or dtabs needs the control category.'),
  ),
  el('section', { class: 'panel', id: 'endpoints' }, el('h2', {}, 'JSON endpoints'), status.node,
    el('table', {}, el('thead', {}, el('tr', {}, el('th', {}, 'Path'), el('th', {}, 'Category'), el('th', {}, 'Description'))), list)),
);
load().catch((e: unknown) => status.set(`cannot read /admin: ${e instanceof Error ? e.message : String(e)}`, 'error'));
