/**
 * Admin endpoint security (config `admin.security`): every path falls in one category, categories
 * can be switched off, and path regexes can punch holes either way.
 *
 * The categories follow Linkerd 1: `ui` is what the dashboard needs, `control` changes the
 * process, and `diagnostics` is everything else (metrics exports, pprof, threads, state dumps).
 */

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
].map(anchored);

const CONTROL_PATHS = ['/admin/shutdown', '/logging.json'].map(anchored);

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
