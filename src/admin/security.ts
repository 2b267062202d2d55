/**
 * Admin endpoint security (config `admin.security`): every path falls in one category, categories
 * can be switched off, and path regexes can punch holes either way. Requests that can change the
 * process are also refused when a browser sent them on another site's behalf (CSRF).
 *
 * The categories follow Linkerd 1: `ui` is what the dashboard needs, `control` changes the
 * process, and `diagnostics` is everything else (metrics exports, pprof, threads, state dumps).
 */
import type { IncomingHttpHeaders } from 'node:http';

/** The three endpoint categories. */
export type AdminCategory = 'ui' | 'control' | 'diagnostics';

/** The `admin.security` config object. Absent fields take the defaults (everything enabled). */
export interface AdminSecurity {
  readonly uiEnabled?: boolean;
  readonly controlEnabled?: boolean;
  readonly diagnosticsEnabled?: boolean;
  /** Regexes of paths that stay available although their category is disabled. */
  readonly pathWhitelist?: readonly string[];
  /** Regexes of paths that are unavailable although their category is enabled. */
  readonly pathBlacklist?: readonly string[];
}

// Patterns are matched against the whole path (anchored), as Linkerd matches them.
const anchored = (source: string): RegExp => new RegExp(`^(?:${source})$`);

const UI_PATHS = [
  '/',
  '/files/.*',
  '/admin/files/.*',
  '/config.json',
  '/metrics.json',
  '/admin/metrics.json',
  '/admin/metrics',
  '/delegator',
  '/delegator.json',
  '/logging',
  '/help',
  // The UI's own data: the dashboard's summary and the resolver's dtab list and checks.
  '/admin/summary.json',
  '/dtab/namespaces.json',
  '/dtab/check.json',
].map(anchored);

// `/admin/tracing` switches tracing on and off (`?enable=true`), so it is control too.
const CONTROL_PATHS = ['/admin/shutdown', '/logging.json', '/admin/tracing', '/dtab/save.json'].map(anchored);

/** The category a request path belongs to. */
export function categoryOf(path: string): AdminCategory {
  if (UI_PATHS.some((re) => re.test(path))) return 'ui';
  if (CONTROL_PATHS.some((re) => re.test(path))) return 'control';
  return 'diagnostics';
}

/**
 * A compiled security policy. Decision (the spec's rule): a path is available iff
 * (its category is enabled and no blacklist regex matches it) or
 * (its category is disabled and a whitelist regex matches it).
 */
export class SecurityPolicy {
  readonly #enabled: Readonly<Record<AdminCategory, boolean>>;
  readonly #whitelist: readonly RegExp[];
  readonly #blacklist: readonly RegExp[];

  /** Compiles `security`; an invalid regex throws a `SyntaxError` naming it. */
  constructor(security: AdminSecurity) {
    this.#enabled = {
      ui: security.uiEnabled ?? true,
      control: security.controlEnabled ?? true,
      diagnostics: security.diagnosticsEnabled ?? true,
    };
    this.#whitelist = (security.pathWhitelist ?? []).map(anchored);
    this.#blacklist = (security.pathBlacklist ?? []).map(anchored);
  }

  /** Whether `path`, in `category`, may be served. */
  allows(path: string, category: AdminCategory = categoryOf(path)): boolean {
    return this.#enabled[category]
      ? !this.#blacklist.some((re) => re.test(path))
      : this.#whitelist.some((re) => re.test(path));
  }
}

/** The policy of "no security object": everything is available. */
export const OPEN_POLICY = new SecurityPolicy({});

/** Whether a request can change the process: every control endpoint, and any method but GET and HEAD. */
export function changesState(method: string, category: AdminCategory): boolean {
  return category === 'control' || (method !== 'GET' && method !== 'HEAD');
}

/** Content types an HTML form (or a `no-cors` fetch) can send to another origin without a preflight. */
const SIMPLE_FORM_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);

/**
 * Why a state-changing request looks like a cross-site (CSRF) request, or undefined when it does
 * not. Browsers mark what a page sends: an `Origin` other than the admin's own (`scheme://Host`),
 * a `Sec-Fetch-Site` other than `same-origin` or `none` (which also covers GETs from `<img>`), or a
 * body a plain HTML form can post. curl and prxctl send none of these.
 */
export function crossSiteReason(headers: IncomingHttpHeaders, scheme: 'http' | 'https'): string | undefined {
  const origin = headers.origin;
  if (origin !== undefined && !sameOrigin(origin, scheme, headers.host)) {
    return `its Origin (${origin}) is not this admin interface (${scheme}://${headers.host ?? ''})`;
  }
  const site = headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `it was sent by a ${site} web page (Sec-Fetch-Site)`;
  const type = headers['content-type']?.split(';')[0]?.trim().toLowerCase();
  if (type !== undefined && SIMPLE_FORM_TYPES.has(type)) return `its body is ${type}, which any web page's form can post`;
  return undefined;
}

/** Whether `origin` names this server: same scheme, and the same host and port as the `Host` header. */
function sameOrigin(origin: string, scheme: string, host: string | undefined): boolean {
  if (host === undefined || host === '' || !URL.canParse(origin) || !URL.canParse(`${scheme}://${host}`)) return false;
  const o = new URL(origin);
  const own = new URL(`${scheme}://${host}`);
  return o.protocol === own.protocol && o.host === own.host;
}
