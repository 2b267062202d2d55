/**
 * Route rules of the mesh control plane's v1 config API (`GET /v1alpha1/config/route-rule` on the
 * apiserver: `[{type: "route-rule", name, spec: RouteRule}]`, RouteRule in its JSON form with
 * camel-case keys) and how Linkerd 1's istio identifier applied them to a request: among the rules
 * whose `destination` is the request's cluster and whose `match.httpHeaders` all hold, the one of
 * highest `precedence` wins; it redirects, or rewrites the URI and authority and names the request
 * by the rule. Pure: no I/O.
 */
import { z } from 'zod';
import { lazySchema } from '../../../config/index.js';

/** One `StringMatch` (`exact`, `prefix` or `regex`, case-sensitive); a regex matches the whole value. */
export type StringMatch =
  | { readonly kind: 'exact'; readonly value: string }
  | { readonly kind: 'prefix'; readonly value: string }
  | { readonly kind: 'regex'; readonly value: string; readonly re: RegExp };

/** A `redirect` or `rewrite`: the new URI and/or authority (absent or empty: unchanged). */
export interface UriAuthority {
  readonly uri?: string | undefined;
  readonly authority?: string | undefined;
}

export interface RouteRule {
  readonly name: string;
  readonly destination: string;
  readonly precedence: number;
  /** `match.httpHeaders`: keys lower-case; `uri`, `scheme`, `method`, `authority` are the request's. */
  readonly httpHeaders: ReadonlyMap<string, StringMatch>;
  /** The rule names a caller (`match.source` / `match.sourceTags`), which prx cannot know: it never applies. */
  readonly sourceConditioned: boolean;
  readonly redirect: UriAuthority | undefined;
  readonly rewrite: UriAuthority | undefined;
  /** `route[]`: weighted destinations (tags); reported to the mixer when there is exactly one. */
  readonly route: readonly { readonly tags: Readonly<Record<string, string>>; readonly weight: number }[];
}

const stringMatchJson = lazySchema(() => z.looseObject({ exact: z.string().optional(), prefix: z.string().optional(), regex: z.string().optional() }));
const uriAuthority = lazySchema(() => z.looseObject({ uri: z.string().optional(), authority: z.string().optional() }));

const routeRuleSpecJson = lazySchema(() => z.looseObject({
  destination: z.string().min(1),
  precedence: z.number().int().optional(),
  match: z
    .looseObject({
      source: z.string().optional(),
      sourceTags: z.record(z.string(), z.string()).optional(),
      httpHeaders: z.record(z.string(), stringMatchJson).optional(),
    })
    .optional(),
  route: z.array(z.looseObject({ tags: z.record(z.string(), z.string()).optional(), weight: z.number().int().optional() })).nullish(),
  redirect: uriAuthority.optional(),
  rewrite: uriAuthority.optional(),
}));

/** The apiserver's answer: a list of configs; entries of other types are skipped. */
export const routeRuleListJson = lazySchema(() => z.array(z.looseObject({ type: z.string().optional(), name: z.string().optional(), spec: z.unknown().optional() })));

/** A rule the proxy cannot use, and why (logged; the other rules stay in force). */
export interface RejectedRule {
  readonly name: string;
  readonly reason: string;
}

/** The rules of one apiserver answer, by name, and those rejected. */
export function parseRouteRules(body: unknown): { rules: Map<string, RouteRule>; rejected: RejectedRule[] } {
  const list = routeRuleListJson.parse(body);
  const rules = new Map<string, RouteRule>();
  const rejected: RejectedRule[] = [];
  for (const entry of list) {
    if (entry.type !== undefined && entry.type !== 'route-rule') continue;
    const name = entry.name;
    if (name === undefined || name === '') {
      rejected.push({ name: '(unnamed)', reason: 'a route rule without a name' });
      continue;
    }
    const spec = routeRuleSpecJson.safeParse(entry.spec);
    if (!spec.success) {
      rejected.push({ name, reason: spec.error.issues.map((i) => `${i.path.join('.') || 'spec'}: ${i.message}`).join('; ') });
      continue;
    }
    try {
      rules.set(name, toRule(name, spec.data));
    } catch (e) {
      rejected.push({ name, reason: e instanceof Error ? e.message : String(e) });
    }
  }
  return { rules, rejected };
}

function toRule(name: string, spec: z.output<typeof routeRuleSpecJson>): RouteRule {
  const httpHeaders = new Map<string, StringMatch>();
  for (const [header, m] of Object.entries(spec.match?.httpHeaders ?? {})) httpHeaders.set(header.toLowerCase(), toStringMatch(header, m));
  const match = spec.match;
  const sourceTags = match?.sourceTags;
  return {
    name,
    destination: spec.destination,
    precedence: spec.precedence ?? 0,
    httpHeaders,
    sourceConditioned: (match?.source !== undefined && match.source !== '') || (sourceTags !== undefined && Object.keys(sourceTags).length > 0),
    redirect: spec.redirect,
    rewrite: spec.rewrite,
    route: (spec.route ?? []).map((d) => ({ tags: d.tags ?? {}, weight: d.weight ?? 0 })),
  };
}

function toStringMatch(header: string, m: z.output<typeof stringMatchJson>): StringMatch {
  const set = [m.exact, m.prefix, m.regex].filter((v) => v !== undefined).length;
  if (set !== 1) throw new Error(`httpHeaders.${header}: expected exactly one of exact, prefix or regex`);
  if (m.exact !== undefined) return { kind: 'exact', value: m.exact };
  if (m.prefix !== undefined) return { kind: 'prefix', value: m.prefix };
  const source = m.regex as string;
  let re: RegExp;
  try {
    re = new RegExp(`^(?:${source})$`, 'u');
  } catch (e) {
    throw new Error(`httpHeaders.${header}: invalid regex ${JSON.stringify(source)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return { kind: 'regex', value: source, re };
}

/** What a rule matches against: the request's path (no query), scheme, method, authority and headers. */
export interface RuleRequest {
  readonly path: string;
  readonly scheme: string;
  readonly method: string;
  readonly authority: string;
  /** A header's first value by lower-case name. */
  header(name: string): string | undefined;
}

export function stringMatches(value: string, m: StringMatch): boolean {
  switch (m.kind) {
    case 'exact':
      return value === m.value;
    case 'prefix':
      return value.startsWith(m.value);
    case 'regex':
      return m.re.test(value);
  }
}

function conditionsHold(rule: RouteRule, req: RuleRequest): boolean {
  if (rule.sourceConditioned) return false;
  for (const [name, m] of rule.httpHeaders) {
    let value: string | undefined;
    if (name === 'uri') value = req.path;
    else if (name === 'scheme') value = req.scheme;
    else if (name === 'method') value = req.method;
    else if (name === 'authority') value = req.authority;
    else value = req.header(name);
    if (value === undefined || !stringMatches(value, m)) return false;
  }
  return true;
}

/**
 * The rule for a request to `destination`: the highest `precedence` among the rules whose
 * conditions hold (ties go to the first name in code-point order, so the choice is stable).
 */
export function selectRule(rules: Iterable<RouteRule>, destination: string, req: RuleRequest): RouteRule | undefined {
  let best: RouteRule | undefined;
  for (const rule of rules) {
    if (rule.destination !== destination || !conditionsHold(rule, req)) continue;
    if (best === undefined || rule.precedence > best.precedence || (rule.precedence === best.precedence && rule.name < best.name)) best = rule;
  }
  return best;
}

/**
 * A rewrite's new path: with a `uri` prefix condition the matched prefix is replaced, otherwise the
 * whole path; the query is kept.
 */
export function rewrittenUrl(rule: RouteRule, path: string, query: string): string | undefined {
  const replacement = rule.rewrite?.uri;
  if (replacement === undefined || replacement === '') return undefined;
  const cond = rule.httpHeaders.get('uri');
  const next = cond?.kind === 'prefix' && path.startsWith(cond.value) ? replacement + path.slice(cond.value.length) : replacement;
  return next + query;
}

/** A redirect's `Location`: the rule's URI (else the request's), absolute when the rule sets an authority. */
export function redirectLocation(rule: RouteRule, scheme: string, url: string): string {
  const r = rule.redirect ?? {};
  const uri = r.uri !== undefined && r.uri !== '' ? r.uri : url;
  return r.authority !== undefined && r.authority !== '' ? `${scheme}://${r.authority}${uri}` : uri;
}
