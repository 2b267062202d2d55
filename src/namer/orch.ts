import { z } from 'zod';
import { addIssue, durationMs, ip, namerShape, nonEmptyString, port, lazySchema } from '../config/index.js';
import { PrxError, errorMessage } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Addr, AddrNeg, AddrPending, BoundName, Neg, Path, Pending, type State, Var, addrBound, addrEquals,
  addrFailed, failed, leaf, ok, type Name, type NameTree,
} from '../naming/index.js';
import { OrchApiClient } from '../protocol/orch/client.js';
import { ENDPOINTS, type OrchObject, SERVICES } from '../protocol/orch/types.js';
import type { Backoff } from '../service/policy/index.js';
import {
  type EndpointsView, type PortRef, type ServiceView, endpointAddresses, externalAddresses, parsePortRef, portSegments,
} from './orch-endpoints.js';
import { ObjectWatches, type WatchedObject } from './orch-watches.js';
import { type EnumeratingNamer, type RunningNamer, type StatefulNamer, defineNamer, sameLookup } from './namer-kind.js';

/**
 * The orchestrator (Kubernetes) namers, Linkerd's `io.l5d.k8s` family:
 * - `io.prx.orch`: `/#/io.prx.orch/<namespace>/<port>/<service>[/<label-value>]` binds the ready
 *   addresses of the service's Endpoints object on that port (a port name, or a Service port
 *   number mapped through its `targetPort`);
 * - `io.prx.orch.ns`: the same without the namespace segment, which comes from an environment
 *   variable (`envVar`, default `POD_NAMESPACE`);
 * - `io.prx.orch.external` (experimental): `/<namespace>/<port>/<service>[/<label-value>]` binds the
 *   Service's load-balancer ingress addresses on that Service port.
 * The first segments are lower-cased (orchestrator names are); the rest is the residual. With
 * `labelSelector: <key>`, the label-value segment is required (else Neg) and only an object
 * labelled `<key>=<value>` exists for the name (Kubernetes copies a Service's labels to its
 * Endpoints). Each object is list+watched on its own; a name unused for `idleTtlMs` releases its
 * watches.
 *
 * ```yaml
 * namers:
 * - kind: io.prx.orch          # no host: in-cluster (service-account token over TLS), else localhost:8001
 *   host: 127.0.0.1            # kubectl proxy
 *   port: 8001
 *   labelSelector: version     # /#/io.prx.orch/prod/http/users/v2
 * ```
 */

/** A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters. */
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** Label values, namespace and object names, port names: anything else cannot exist, so it is Neg without asking. */
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/;

const labelKey = lazySchema(() => z.string().superRefine((key, ctx) => {
  if (!LABEL_KEY.test(key)) addIssue(ctx, [], 'expected a label key, e.g. version or app.example.com/track', { value: key });
}));

function orchApiShape() {
  return {
    /** The API server (plain HTTP, e.g. `kubectl proxy`); unset: in-cluster when a service account is mounted, else localhost. */
    host: ip.optional(),
    port: port.default(8001),
    labelSelector: labelKey.optional(),
    /** How long the watches of a name nobody looks up any more stay open. */
    idleTtlMs: durationMs.default(60_000),
  };
}

export const orchNamerSchema = lazySchema(() => z.strictObject({ ...namerShape('io.prx.orch'), ...orchApiShape() }));
export const orchNsNamerSchema = lazySchema(() => z.strictObject({
  ...namerShape('io.prx.orch.ns'),
  ...orchApiShape(),
  /** The environment variable that holds the namespace (set from the pod's metadata.namespace). */
  envVar: nonEmptyString.default('POD_NAMESPACE'),
}));
export const orchExternalNamerSchema = lazySchema(() => z.strictObject({ ...namerShape('io.prx.orch.external'), ...orchApiShape() }));

/** What the three kinds share. */
export interface OrchApiConfig {
  readonly kind: string;
  readonly host?: string | undefined;
  readonly port: number;
  readonly labelSelector?: string | undefined;
  readonly idleTtlMs: number;
}
export type OrchNamerMode = 'endpoints' | 'external';

/** An environment the namer needs is missing (stable code `PRX_ERR_ORCH_NAMER_ENV`). */
export class OrchNamerEnvError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_ORCH_NAMER_ENV', message);
  }
}

/** Knobs outside the config (tests point in-cluster mode at a fake and shorten the backoff). */
export interface OrchNamerOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly serviceAccountDir?: string;
  readonly backoff?: Backoff;
}

/** What one lookup reads: the Endpoints object and/or the Service, each watched. */
interface Sources {
  readonly endpoints: WatchedObject<EndpointsView> | undefined;
  readonly service: WatchedObject<ServiceView> | undefined;
}

/** A name's parsed segments. */
interface NameParts {
  readonly namespace: string;
  readonly port: PortRef;
  readonly service: string;
  readonly label: string | undefined;
  /** The segments consumed (lower-cased): the bound id's tail. */
  readonly consumed: readonly string[];
}

export class OrchNamer implements EnumeratingNamer, RunningNamer, StatefulNamer {
  readonly #kind: string;
  readonly #prefix: Path;
  readonly #mode: OrchNamerMode;
  readonly #namespace: string | undefined;
  readonly #labelSelector: string | undefined;
  readonly #idleTtlMs: number;
  readonly #client: OrchApiClient;
  readonly #watches: ObjectWatches;

  /**
   * @param namespace for `io.prx.orch.ns`: the fixed namespace (paths then start at the port).
   */
  constructor(cfg: OrchApiConfig, prefix: Path, log: Logger, mode: OrchNamerMode, namespace?: string, opts: OrchNamerOptions = {}) {
    this.#kind = cfg.kind;
    this.#prefix = prefix;
    this.#mode = mode;
    this.#namespace = namespace;
    this.#labelSelector = cfg.labelSelector;
    this.#idleTtlMs = cfg.idleTtlMs;
    this.#client = OrchApiClient.create(
      { ...(cfg.host === undefined ? {} : { host: cfg.host }), port: cfg.port },
      { ...(opts.env ? { env: opts.env } : {}), ...(opts.serviceAccountDir ? { serviceAccountDir: opts.serviceAccountDir } : {}) },
    );
    this.#watches = new ObjectWatches(this.#client, {
      idleTtlMs: cfg.idleTtlMs,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      onError: (what, e) => log.warn({ err: errorMessage(e), api: this.#client.origin }, `${cfg.kind}: cannot watch ${what}: ${errorMessage(e)}; retrying`),
    });
  }

  lookup(path: Path): Activity<NameTree<Name>> {
    const parts = this.#parse(path);
    if (parts === undefined) return Activity.value<NameTree<Name>>(Neg);
    const id = this.#prefix.concat(Path.utf8(...parts.consumed));
    const residual = path.drop(parts.consumed.length);
    const sources = this.#sources(parts);
    const resolve = this.#mode === 'external'
      ? (s: Sources) => externalAddresses(s.service?.object, parts.port)
      : (s: Sources) => endpointAddresses(s.endpoints?.object, s.service?.object, parts.port);
    const addr = sources.map((s): Addr => {
      const st = settled(s);
      if (st.kind === 'pending') return AddrPending;
      if (st.kind === 'failed') return addrFailed(st.error);
      const list = resolve(s);
      return list === undefined ? AddrNeg : addrBound(list);
    }).dedup(addrEquals);
    return new Activity(
      sources
        .map((s): State<NameTree<Name>> => {
          const st = settled(s);
          if (st.kind !== 'ok') return st;
          // Existence alone shapes the tree: address changes flow through `addr` without rebinding.
          return ok(resolve(s) === undefined ? Neg : leaf(new BoundName(id, addr, residual)));
        })
        .dedup(sameLookup),
    );
  }

  /** The names the open watches can bind (their objects' port names and, with the Service watched, its port numbers). */
  boundNames(): Activity<Path[]> {
    return new Activity(
      this.#watches.changes.map((): State<Path[]> => {
        const names = new Map<string, Path>();
        const add = (ns: string, port: string, svc: string, selector: string | undefined): void => {
          const label = selector === undefined ? [] : [selector.slice((this.#labelSelector ?? '').length + 1)];
          const p = this.#prefix.concat(Path.utf8(...(this.#namespace === undefined ? [ns] : []), port, svc, ...label));
          names.set(p.show, p);
        };
        const services = this.#watches.objects<ServiceView & OrchObject>(SERVICES);
        if (this.#mode === 'external') {
          for (const s of services) for (const port of portSegments(undefined, s.object, true)) add(s.namespace, port, s.name, s.labelSelector);
        } else {
          const byName = new Map(services.filter((s) => s.labelSelector === undefined).map((s) => [`${s.namespace}/${s.name}`, s.object]));
          for (const e of this.#watches.objects<EndpointsView & OrchObject>(ENDPOINTS)) {
            if (e.object === undefined) continue;
            for (const port of portSegments(e.object, byName.get(`${e.namespace}/${e.name}`))) add(e.namespace, port, e.name, e.labelSelector);
          }
        }
        return ok([...names.values()].sort((a, b) => (a.show < b.show ? -1 : 1)));
      }),
    );
  }

  /** `/namer_state/<prefix>.json`. */
  adminState(): unknown {
    return {
      kind: this.#kind,
      prefix: this.#prefix.drop(1).show,
      api: this.#client.origin,
      inCluster: this.#client.inCluster,
      ...(this.#namespace === undefined ? {} : { namespace: this.#namespace }),
      ...(this.#labelSelector === undefined ? {} : { labelSelector: this.#labelSelector }),
      idleTtlMs: this.#idleTtlMs,
      watches: this.#watches.info(),
    };
  }

  /** Open watches (tests and the figures script count them). */
  get openWatches(): number {
    return this.#watches.size;
  }

  close(): void {
    this.#watches.close();
    void this.#client.close();
  }

  #parse(path: Path): NameParts | undefined {
    const withNs = this.#namespace === undefined;
    const withLabel = this.#labelSelector !== undefined;
    const n = (withNs ? 3 : 2) + (withLabel ? 1 : 0);
    if (path.size < n) return undefined;
    const consumed: string[] = [];
    for (let i = 0; i < n; i++) consumed.push(path.elemUtf8(i).toLowerCase());
    const rest = withNs ? consumed : [this.#namespace ?? '', ...consumed];
    const [namespace = '', portSeg = '', service = ''] = rest;
    const label = withLabel ? rest[3] : undefined;
    if (!DNS_LABEL.test(namespace) || !DNS_SUBDOMAIN.test(service)) return undefined;
    if (label !== undefined && !LABEL_VALUE.test(label)) return undefined;
    const port = parsePortRef(portSeg);
    if (port.kind === 'number' ? port.number < 1 || port.number > 65535 : !PORT_NAME.test(port.name)) return undefined;
    return { namespace, port, service, label, consumed };
  }

  #sources(p: NameParts): Var<Sources> {
    const selector = p.label === undefined ? undefined : `${this.#labelSelector}=${p.label}`;
    if (this.#mode === 'external') {
      return this.#watches.object<ServiceView & OrchObject>(SERVICES, p.namespace, p.service, selector)
        .map((service) => ({ endpoints: undefined, service }));
    }
    const endpoints = this.#watches.object<EndpointsView & OrchObject>(ENDPOINTS, p.namespace, p.service, selector);
    if (p.port.kind === 'name') return endpoints.map((e) => ({ endpoints: e, service: undefined }));
    // Port numbers go through the Service's ports; one Service watch serves every label value.
    const service = this.#watches.object<ServiceView & OrchObject>(SERVICES, p.namespace, p.service);
    return Var.collect<WatchedObject<unknown>>([endpoints, service]).map(([e, s]) => ({
      endpoints: e as WatchedObject<EndpointsView>,
      service: s as WatchedObject<ServiceView>,
    }));
  }
}

/** Pending until every source has listed once; a failure before that fails the name (the watch keeps retrying). */
function settled(s: Sources): State<void> {
  for (const w of [s.endpoints, s.service]) {
    if (w === undefined || w.synced) continue;
    return w.error === undefined ? Pending : failed(w.error);
  }
  return ok(undefined);
}

function namespaceFrom(env: NodeJS.ProcessEnv, envVar: string): string {
  const value = env[envVar];
  if (value === undefined || value === '') {
    throw new OrchNamerEnvError(
      `io.prx.orch.ns: the environment variable ${envVar} (envVar) is not set; it must hold the namespace to look services up in (in a pod, set it from fieldRef metadata.namespace)`,
    );
  }
  if (!DNS_LABEL.test(value.toLowerCase())) {
    throw new OrchNamerEnvError(`io.prx.orch.ns: the environment variable ${envVar} (envVar) holds ${JSON.stringify(value)}, which is not a namespace name`);
  }
  return value.toLowerCase();
}

/** Builds `io.prx.orch.ns` from its config and an environment (tests pass their own). */
export function createOrchNsNamer(cfg: z.output<typeof orchNsNamerSchema>, prefix: Path, log: Logger, opts: OrchNamerOptions = {}): OrchNamer {
  return new OrchNamer(cfg, prefix, log, 'endpoints', namespaceFrom(opts.env ?? process.env, cfg.envVar), opts);
}

defineNamer({
  kind: 'io.prx.orch',
  schema: orchNamerSchema,
  create: (cfg, ctx) => new OrchNamer(cfg, ctx.prefix, ctx.log, 'endpoints'),
});

defineNamer({
  kind: 'io.prx.orch.ns',
  schema: orchNsNamerSchema,
  create: (cfg, ctx) => createOrchNsNamer(cfg, ctx.prefix, ctx.log),
});

defineNamer({
  kind: 'io.prx.orch.external',
  schema: orchExternalNamerSchema,
  experimental: true,
  create: (cfg, ctx) => new OrchNamer(cfg, ctx.prefix, ctx.log, 'external'),
});
