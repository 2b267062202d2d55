/**
 * Helpers shared by the admin UI pages: a tiny DOM builder, JSON fetches that report errors in
 * the page, and number formatting. No framework: the pages are small and the bundle stays light.
 */
import './ui.css';

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | undefined | ((e: Event) => void)>;

/** Creates an element: `el('td', { class: 'num' }, '12')`. `on…` attributes become listeners. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (v === true) node.setAttribute(k, '');
    else node.setAttribute(k, String(v));
  }
  append(node, children);
  return node;
}

export function append(parent: Node, children: readonly Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

/** The page's `<main>`, below its heading. */
export function main(): HTMLElement {
  const m = document.getElementById('main');
  if (!m) throw new Error('page has no #main');
  return m;
}

/** The JSON the server embedded in the page (`#prx-data`). */
export function pageData<T>(): T {
  const text = document.getElementById('prx-data')?.textContent ?? 'null';
  return JSON.parse(text) as T;
}

/** An HTTP error from the admin, with the body's `error` (or text) as its message. */
export class AdminRequestError extends Error {
  readonly status: number;
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

/** Fetches JSON from the admin; non-2xx answers throw {@link AdminRequestError}. */
export async function fetchJson<T>(url: string, init: RequestInit = {}): Promise<T> {
  const res = await fetch(url, { ...init, headers: { accept: 'application/json', ...(init.headers ?? {}) } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    // plain-text error bodies (the delegator's) stay text
  }
  if (!res.ok) {
    const message = typeof body === 'object' && body !== null && 'error' in body ? String(body.error) : text.trim();
    throw new AdminRequestError(res.status, message || `HTTP ${res.status}`, body);
  }
  return body as T;
}

/** POSTs a JSON body. */
export function postJson<T>(url: string, body: unknown): Promise<T> {
  return fetchJson<T>(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** A status line the page shows (errors of background polls, results of actions). */
export function statusLine(): { readonly node: HTMLElement; set(text: string, kind?: 'error' | 'ok' | 'info'): void } {
  const node = el('p', { class: 'status', role: 'status' });
  return {
    node,
    set(text, kind = 'info') {
      node.textContent = text;
      node.className = `status ${kind}`;
    },
  };
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${UNITS[u] ?? ''}`;
}

export function count(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

export function rate(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1);
}

export function percent(n: number | null | undefined, digits = 2): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  return `${(n * 100).toFixed(digits)}%`;
}

export function ms(n: number | null | undefined): string {
  return n === null || n === undefined ? '–' : `${n} ms`;
}

export function duration(msTotal: number): string {
  let s = Math.floor(msTotal / 1000);
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  return d > 0 ? `${d}d ${h}h ${m}m` : h > 0 ? `${h}h ${m}m ${s}s` : m > 0 ? `${m}m ${s}s` : `${s}s`;
}

/** Query-string state helpers (shareable URLs). */
export function queryParam(name: string): string | null {
  return new URLSearchParams(location.search).get(name);
}

export function replaceQuery(params: Record<string, string>): void {
  const q = new URLSearchParams(params);
  history.replaceState(null, '', `${location.pathname}?${q.toString()}`);
}
