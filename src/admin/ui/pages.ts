/**
 * The admin UI's HTML pages: a small shell per page (title, navigation, the page's bundle, and the
 * server-side facts the page starts from as a JSON data island), rendered per request. All
 * behaviour is in the bundles; the shell carries no inline script, so the strict CSP holds.
 */
import type { AdminEndpoint, AdminRequest, AdminResponse } from '../handler.js';
import { encoded, gzip, UI_CSP, UI_SECURITY_HEADERS, type UiAssets } from './assets.js';

/** One page of the UI. */
export interface UiPage {
  readonly path: string;
  /** The bundle entry (a key of the manifest's `pages`). */
  readonly bundle: string;
  readonly title: string;
  /** The navigation label; absent: the page is not in the navigation bar. */
  readonly nav?: string;
  readonly description: string;
  /** Facts the page starts from (router names, dtabs), embedded as JSON. */
  readonly data?: () => unknown;
}

/** Which process serves the UI: names the product in the header. */
export interface UiShell {
  readonly product: string;
  readonly pages: readonly UiPage[];
}

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** JSON that is safe inside a `<script type="application/json">` element. */
const islandJson = (value: unknown): string => JSON.stringify(value ?? null).replace(/</g, '\\u003c');

/** Renders one page's HTML. */
export function renderPage(assets: UiAssets, shell: UiShell, page: UiPage): string {
  const entry = assets.manifest.pages[page.bundle];
  if (!entry) throw new Error(`UI bundle ${page.bundle} is missing from the manifest; run: npm run build`);
  const nav = shell.pages
    .filter((p) => p.nav !== undefined)
    .map((p) => `<a href="${p.path}"${p === page ? ' aria-current="page"' : ''}>${escapeHtml(p.nav ?? '')}</a>`)
    .join('');
  const css = entry.css.map((f) => `<link rel="stylesheet" href="/files/${escapeHtml(f)}">`).join('');
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">',
    `<title>${escapeHtml(`${shell.product} · ${page.title}`)}</title>`,
    css,
    `<script type="module" src="/files/${escapeHtml(entry.js)}"></script>`,
    `</head><body data-page="${escapeHtml(page.bundle)}">`,
    `<header class="topbar"><span class="brand">${escapeHtml(shell.product)}</span><nav>${nav}</nav>`,
    '<a class="json-link" href="/help#endpoints">JSON endpoints</a></header>',
    `<main id="main"><h1>${escapeHtml(page.title)}</h1><noscript>This page needs JavaScript; every figure it shows is also served as JSON (see <a href="/admin">/admin</a>).</noscript></main>`,
    `<script type="application/json" id="prx-data">${islandJson(page.data?.())}</script>`,
    '</body></html>',
  ].join('');
}

/** The endpoints serving `shell`'s pages (category `ui`). */
export function pageEndpoints(assets: UiAssets, shell: UiShell): AdminEndpoint[] {
  return shell.pages.map((page) => ({
    path: page.path,
    method: 'GET',
    category: 'ui' as const,
    description: page.description,
    handler: (req: AdminRequest): AdminResponse => {
      const html = Buffer.from(renderPage(assets, shell, page), 'utf8');
      const { body, headers } = encoded(req, html, () => gzip(html));
      return {
        contentType: 'text/html; charset=utf-8',
        body,
        headers: {
          ...UI_SECURITY_HEADERS,
          ...headers,
          'content-security-policy': UI_CSP,
          'x-frame-options': 'DENY',
          'cache-control': 'no-cache',
        },
      };
    },
  }));
}
