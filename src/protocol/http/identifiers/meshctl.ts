/**
 * `io.prx.orch.meshctl`: names a request by the mesh control plane's routing (Linkerd 1's
 * `io.l5d.k8s.istio`). The request's authority (Host, with its port when sent) is looked up among
 * the domains of the discovery service's virtual hosts (`/v1/routes`, named `<cluster>|<port>`):
 *
 * - no virtual host has it: `/<dstPrefix>/ext/<host>/<port>` (port 80 when the authority has none);
 * - a route rule for the cluster applies (apiserver `/v1alpha1/config/route-rule`; highest
 *   precedence among those whose `match.httpHeaders` all hold): `/<dstPrefix>/route/<rule>`, the
 *   request rewritten by the rule's `rewrite` (URI prefix or path, Host), or answered 302 by its
 *   `redirect`;
 * - otherwise: `/<dstPrefix>/dest/<cluster>/::/<port>`.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.orch.meshctl
 *   discoveryHost: meshctl-pilot   # /v1/routes
 *   discoveryPort: 8080
 *   apiserverHost: meshctl-pilot   # /v1alpha1/config/route-rule
 *   apiserverPort: 8081
 * ```
 *
 * Both are polled every 5 s; until each has answered once, requests are unidentified (400).
 */
import { z } from 'zod';
import { kindShape, nonEmptyString, port, lazySchema } from '../../../config/index.js';
import { Path, utf8ToBinary } from '../../../naming/index.js';
import { acquireClusterCache, acquireRouteCache, type ClusterCache, type RouteCache } from '../meshctl/pilot.js';
import { redirectLocation, rewrittenUrl, selectRule, type RuleRequest } from '../meshctl/route-rules.js';
import { type HttpIdentifier, type Identification, type IdentifyRequest, defineIdentifier, firstHeader, unidentified } from './types.js';

export const meshctlIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.orch.meshctl'),
  discoveryHost: nonEmptyString.default('meshctl-pilot'),
  discoveryPort: port.default(8080),
  apiserverHost: nonEmptyString.default('meshctl-pilot'),
  apiserverPort: port.default(8081),
}));

export type MeshctlIdentifierConfig = z.output<typeof meshctlIdentifierSchema>;

/** `host[:port]` or `[v6]:port` split; undefined when it is neither. */
function splitAuthority(authority: string): { host: string; port: string } | undefined {
  if (authority.startsWith('[')) {
    const end = authority.indexOf(']');
    if (end < 0) return undefined;
    const rest = authority.slice(end + 1);
    if (rest !== '' && !/^:\d+$/.test(rest)) return undefined;
    return { host: authority.slice(0, end + 1), port: rest === '' ? '80' : rest.slice(1) };
  }
  const parts = authority.split(':');
  if (parts.length === 1) return { host: authority, port: '80' };
  if (parts.length === 2 && parts[0] !== '' && parts[1] !== '') return { host: parts[0] as string, port: parts[1] as string };
  return undefined;
}

export class MeshctlIdentifier implements HttpIdentifier {
  readonly #prefix: readonly string[];
  /** `host` on HTTP/1.1, `:authority` on h2 (Host when absent). */
  readonly #authorityHeader: string;
  readonly #clusters: { value: ClusterCache; release: () => void };
  readonly #routes: { value: RouteCache; release: () => void };
  readonly #absent: Identification;

  constructor(dstPrefix: Path, cfg: MeshctlIdentifierConfig, h2: boolean) {
    this.#prefix = dstPrefix.elems;
    this.#authorityHeader = h2 ? ':authority' : 'host';
    this.#absent = unidentified(h2 ? ':authority header is absent' : 'Host header is absent');
    this.#clusters = acquireClusterCache(cfg.discoveryHost, cfg.discoveryPort);
    this.#routes = acquireRouteCache(cfg.apiserverHost, cfg.apiserverPort);
  }

  #name(...segments: string[]): Path {
    return Path.fromElems([...this.#prefix, ...segments.map(utf8ToBinary)]);
  }

  identify(req: IdentifyRequest): Identification {
    const headers = req.headers;
    const authority = firstHeader(headers, this.#authorityHeader) ?? firstHeader(headers, 'host');
    if (authority === undefined || authority === '') return this.#absent;
    const clusters = this.#clusters.value;
    const routes = this.#routes.value;
    if (!clusters.loaded) return unidentified(`meshctl: no answer yet from the discovery service at ${clusters.source}`);
    if (!routes.loaded) return unidentified(`meshctl: no answer yet from the apiserver at ${routes.source}`);
    const cluster = clusters.get(authority);
    if (cluster === undefined) {
      const hp = splitAuthority(authority);
      if (hp === undefined) return unidentified(`meshctl: unable to parse the authority ${JSON.stringify(authority)}`);
      return { kind: 'identified', dst: this.#name('ext', hp.host, hp.port), meshTarget: { service: hp.host, labels: {} } };
    }
    const url = req.url;
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const scheme = firstHeader(headers, ':scheme') ?? 'http';
    const ruleReq: RuleRequest = { path, scheme, method: req.method, authority, header: (name) => firstHeader(headers, name) };
    const rule = selectRule(routes.rules, cluster.dest, ruleReq);
    if (rule === undefined) {
      return { kind: 'identified', dst: this.#name('dest', cluster.dest, '::', cluster.port), meshTarget: { service: cluster.dest, labels: {} } };
    }
    const redirect = rule.redirect;
    if (redirect !== undefined && ((redirect.uri ?? '') !== '' || (redirect.authority ?? '') !== '')) {
      return { kind: 'redirect', status: 302, location: redirectLocation(rule, scheme, url) };
    }
    const only = rule.route.length === 1 ? rule.route[0] : undefined;
    const rewrittenAuthority = rule.rewrite?.authority;
    const rewritten = rewrittenUrl(rule, path, q < 0 ? '' : url.slice(q));
    return {
      kind: 'identified',
      dst: this.#name('route', rule.name),
      meshTarget: { service: rule.destination, labels: only?.tags ?? {} },
      ...(rewritten === undefined ? {} : { url: rewritten }),
      ...(rewrittenAuthority === undefined || rewrittenAuthority === '' ? {} : { authority: rewrittenAuthority }),
    };
  }

  close(): void {
    this.#clusters.release();
    this.#routes.release();
  }
}

defineIdentifier({
  kind: 'io.prx.orch.meshctl',
  schema: meshctlIdentifierSchema,
  create: (cfg, ctx) => new MeshctlIdentifier(ctx.dstPrefix, cfg, false),
});
