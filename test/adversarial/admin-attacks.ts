// Attacks on an admin interface, as a web page in the operator's browser (CSRF) or a request
// routed through the data plane would make them. Each takes the admin's base URL (or the router's
// port and the admin's), so any process with a prx-style admin can be tried. Shared by the
// adversarial tests and scripts that replay the attacks.
import { request } from 'undici';

/** What a request came back with (status and body), bounded in time. */
export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

async function send(url: string, init: RequestInit): Promise<Reply> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const EVIL = 'http://evil.example';

/** State-changing requests a foreign web page can make the operator's browser send. */
export const CROSS_SITE_ATTACKS: readonly { readonly name: string; readonly send: (admin: string) => Promise<Reply> }[] = [
  {
    // <form method=post action=…/admin/shutdown> submitted by a script on another site.
    name: 'an HTML form posting /admin/shutdown from another origin',
    send: (admin) =>
      send(`${admin}/admin/shutdown`, {
        method: 'POST',
        headers: { origin: EVIL, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'cross-site' },
        body: 'x=1',
      }),
  },
  {
    // Older browsers send no Origin on a form post: the form's content type still gives it away.
    name: 'a form post without Origin (older browsers)',
    send: (admin) =>
      send(`${admin}/admin/shutdown`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'x=1' }),
  },
  {
    name: 'a multipart form changing a log level',
    send: (admin) => {
      const form = new FormData();
      form.set('logger', 'root');
      form.set('level', 'trace');
      return send(`${admin}/logging.json?logger=root&level=trace`, { method: 'POST', body: form });
    },
  },
  {
    // fetch(url, {mode: 'no-cors', method: 'POST', body: 'string'}) sends text/plain with no preflight.
    name: 'a no-cors text/plain post changing a log level',
    send: (admin) => send(`${admin}/logging.json?logger=root&level=trace`, { method: 'POST', body: 'logger=root&level=trace' }),
  },
  {
    name: 'a JSON post from another origin (a preflight the admin never answers, or a lax browser)',
    send: (admin) =>
      send(`${admin}/logging.json`, {
        method: 'POST',
        headers: { origin: EVIL, 'content-type': 'application/json' },
        body: JSON.stringify({ logger: 'root', level: 'trace' }),
      }),
  },
  {
    // <img src=…/admin/tracing?enable=true>: a GET, no Origin, but Sec-Fetch-Site says who asked.
    name: 'an <img> on another site toggling tracing',
    send: (admin) => send(`${admin}/admin/tracing?enable=true`, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' } }),
  },
  {
    // Another port on the same host is "same-site" but not the same origin.
    name: 'a page on another local port toggling tracing',
    send: (admin) => send(`${admin}/admin/tracing?enable=true`, { headers: { origin: 'http://127.0.0.1:1', 'sec-fetch-site': 'same-site' } }),
  },
];

/**
 * A request routed through a router on `routerPort` to the admin on `adminPort`, by a `prx-dtab`
 * override naming the admin's address as `host` (`127.0.0.1`, `localhost`, `0.0.0.0`).
 */
export async function throughRouter(
  routerPort: number,
  adminPort: number,
  path: string,
  options: { method?: 'GET' | 'POST'; host?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Record<string, unknown>; text: string }> {
  const headers = { host: 'victim', 'prx-dtab': `/svc/victim=>/$/inet/${options.host ?? '127.0.0.1'}/${adminPort}`, ...options.headers };
  const r = await request(`http://127.0.0.1:${routerPort}${path}`, { method: options.method ?? 'GET', headers, headersTimeout: 5000, bodyTimeout: 5000 });
  return { status: r.statusCode, headers: r.headers, text: await r.body.text() };
}
