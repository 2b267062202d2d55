/**
 * The routing table of the `io.prx.ingress` identifier: the rules of the Ingress resources
 * (networking.k8s.io/v1) of one class, as an ingress controller reads them. Pure: built from a
 * snapshot of the objects, asked per request.
 *
 * Which rule serves a request, when several match (Kubernetes leaves the order to controllers;
 * Linkerd 1 took the first in list order):
 * 1. the host: a rule whose host equals the request's beats a `*.` wildcard rule, which beats a
 *    rule without host;
 * 2. then the longest path, an `Exact` path before a prefix of the same length (Kubernetes' rule);
 * 3. then list order (namespace, name, then rule and path order within the Ingress).
 * No rule matching, the first default backend in that order serves (unless ignored).
 */
import { Path, utf8ToBinary } from '../../../naming/index.js';
import type { IngressBackend, IngressObject } from '../../orch/index.js';

/** The annotation Linkerd 1 and most controllers read (`kubernetes.io/ingress.class`). */
export const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';

export interface IngressTableOptions {
  /** The class this proxy serves: the annotation's value, or `spec.ingressClassName`. */
  readonly ingressClass: string;
  readonly ignoreDefaultBackends: boolean;
  /** The router's `dstPrefix`: names are `/<dstPrefix>/<namespace>/<port>/<service>`. */
  readonly dstPrefix: Path;
}

/** What a matched rule names, and where it came from (for explanations). */
export interface IngressTarget {
  readonly dst: Path;
  /** `namespace/name` of the Ingress. */
  readonly ingress: string;
}

type PathMatch = 'exact' | 'prefix' | 'textPrefix';

interface Route {
  readonly path: string;
  readonly match: PathMatch;
  readonly target: IngressTarget;
  readonly order: number;
}

/**
 * Whether an Ingress belongs to `ingressClass`: its `kubernetes.io/ingress.class` annotation
 * decides when present, else its `spec.ingressClassName`; one with neither is served (as Linkerd 1
 * served every Ingress without the annotation).
 */
export function servesIngress(ingress: IngressObject, ingressClass: string): boolean {
  const annotated = ingress.metadata.annotations?.[INGRESS_CLASS_ANNOTATION];
  if (annotated !== undefined) return annotated === ingressClass;
  const className = ingress.spec?.ingressClassName;
  return className === undefined || className === ingressClass;
}

export class IngressTable {
  readonly #exactHosts = new Map<string, Route[]>();
  /** By the part after `*.`: `*.example.com` is under `example.com`. */
  readonly #wildcardHosts = new Map<string, Route[]>();
  readonly #anyHost: Route[] = [];
  readonly #fallback: IngressTarget | undefined;
  /** Ingresses of this class (namespace/name), for the state view. */
  readonly served: readonly string[];

  constructor(ingresses: Iterable<IngressObject>, opts: IngressTableOptions) {
    const sorted = [...ingresses].filter((i) => servesIngress(i, opts.ingressClass)).sort(byNamespaceAndName);
    const served: string[] = [];
    let order = 0;
    let fallback: IngressTarget | undefined;
    for (const ingress of sorted) {
      const namespace = ingress.metadata.namespace ?? 'default';
      const source = `${namespace}/${ingress.metadata.name}`;
      served.push(source);
      const spec = ingress.spec ?? {};
      if (!opts.ignoreDefaultBackends && fallback === undefined && spec.defaultBackend !== undefined) {
        fallback = targetOf(spec.defaultBackend, namespace, source, opts.dstPrefix);
      }
      for (const rule of spec.rules ?? []) {
        const host = rule.host === undefined || rule.host === '' ? undefined : rule.host.toLowerCase();
        for (const p of rule.http?.paths ?? []) {
          const target = targetOf(p.backend, namespace, source, opts.dstPrefix);
          if (target === undefined) continue;
          const match: PathMatch = p.pathType === 'Exact' ? 'exact' : p.pathType === 'Prefix' ? 'prefix' : 'textPrefix';
          const route: Route = { path: normalPath(p.path, match), match, target, order: order++ };
          if (host === undefined) this.#anyHost.push(route);
          else if (host.startsWith('*.')) pushTo(this.#wildcardHosts, host.slice(2), route);
          else pushTo(this.#exactHosts, host, route);
        }
      }
    }
    for (const routes of [this.#anyHost, ...this.#exactHosts.values(), ...this.#wildcardHosts.values()]) routes.sort(byPrecedence);
    this.#fallback = fallback;
    this.served = served;
  }

  /** The target of a request with this Host (or `:authority`; any `:port` is ignored) and path (no query). */
  match(hostHeader: string | undefined, path: string): IngressTarget | undefined {
    const host = hostHeader === undefined ? undefined : hostOnly(hostHeader);
    if (host !== undefined && host !== '') {
      const exact = firstMatch(this.#exactHosts.get(host), path);
      if (exact !== undefined) return exact;
      const dot = host.indexOf('.');
      // A wildcard covers exactly one label: `*.example.com` serves `a.example.com`, not `example.com` or `b.a.example.com`.
      if (dot > 0) {
        const wild = firstMatch(this.#wildcardHosts.get(host.slice(dot + 1)), path);
        if (wild !== undefined) return wild;
      }
    }
    return firstMatch(this.#anyHost, path) ?? this.#fallback;
  }

  /** Every rule, in precedence order per host, for the state view. */
  rules(): { host: string; path: string; pathType: string; dst: string; ingress: string }[] {
    const show = (host: string, routes: readonly Route[]) =>
      routes.map((r) => ({ host, path: r.path, pathType: PATH_TYPE_NAMES[r.match], dst: r.target.dst.show, ingress: r.target.ingress }));
    return [
      ...[...this.#exactHosts].flatMap(([h, routes]) => show(h, routes)),
      ...[...this.#wildcardHosts].flatMap(([h, routes]) => show(`*.${h}`, routes)),
      ...show('', this.#anyHost),
    ];
  }

  get defaultBackend(): IngressTarget | undefined {
    return this.#fallback;
  }
}

const PATH_TYPE_NAMES: Record<PathMatch, string> = { exact: 'Exact', prefix: 'Prefix', textPrefix: 'ImplementationSpecific' };

function firstMatch(routes: readonly Route[] | undefined, path: string): IngressTarget | undefined {
  if (routes === undefined) return undefined;
  for (const r of routes) if (pathMatches(r, path)) return r.target;
  return undefined;
}

function pathMatches(route: Route, path: string): boolean {
  const p = route.path;
  switch (route.match) {
    case 'exact':
      return path === p;
    case 'textPrefix':
      return path.startsWith(p);
    case 'prefix':
      // Element-wise: `/foo` serves `/foo`, `/foo/` and `/foo/bar`, not `/foobar`.
      if (p === '') return true;
      return path.startsWith(p) && (path.length === p.length || path.charCodeAt(p.length) === 0x2f);
  }
}

/**
 * The path as matched: `Prefix` without its trailing slashes (`/` becomes ``, matching all);
 * `Exact` as written (`/` when absent); `ImplementationSpecific` as a plain text prefix, as
 * Linkerd 1 read paths without regex (absent: ``, matching all).
 */
function normalPath(path: string | undefined, match: PathMatch): string {
  if (match === 'exact') return path === undefined || path === '' ? '/' : path;
  if (path === undefined) return '';
  if (match === 'prefix') {
    let end = path.length;
    while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
    return path.slice(0, end);
  }
  return path;
}

/** Longest path first, Exact before a prefix of the same length, then list order. */
function byPrecedence(a: Route, b: Route): number {
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  const ea = a.match === 'exact' ? 0 : 1;
  const eb = b.match === 'exact' ? 0 : 1;
  return ea !== eb ? ea - eb : a.order - b.order;
}

function byNamespaceAndName(a: IngressObject, b: IngressObject): number {
  const na = a.metadata.namespace ?? 'default';
  const nb = b.metadata.namespace ?? 'default';
  if (na !== nb) return na < nb ? -1 : 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

function pushTo(map: Map<string, Route[]>, key: string, route: Route): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [route]);
  else list.push(route);
}

/** A service backend's name, or undefined for a backend prx cannot name (a `resource`, no port). */
function targetOf(backend: IngressBackend, namespace: string, ingress: string, dstPrefix: Path): IngressTarget | undefined {
  const svc = backend.service;
  if (svc === undefined || svc.name === undefined || svc.name === '') return undefined;
  const port = svc.port?.name !== undefined && svc.port.name !== '' ? svc.port.name : svc.port?.number !== undefined ? String(svc.port.number) : undefined;
  if (port === undefined) return undefined;
  const dst = Path.fromElems([...dstPrefix.elems, utf8ToBinary(namespace), utf8ToBinary(port), utf8ToBinary(svc.name)]);
  return { dst, ingress };
}

/** The host of a Host header, lower-cased, without `:port` (IPv6 literals keep their brackets). */
export function hostOnly(header: string): string {
  let host = header;
  if (header.startsWith('[')) {
    const close = header.indexOf(']');
    if (close > 0) host = header.slice(0, close + 1);
  } else {
    const colon = header.indexOf(':');
    // A bare IPv6 literal (several colons) has no port to strip.
    if (colon >= 0 && header.indexOf(':', colon + 1) < 0) host = header.slice(0, colon);
  }
  return host.toLowerCase();
}
