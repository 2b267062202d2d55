import { z } from 'zod';
import { durationMs, ip, loadTlsMaterial, namerShape, namerTlsSchema, nonEmptyString, port, lazySchema } from '../config/index.js';
import { errorMessage } from '../core/errors.js';
import { AUTHORITY_META_KEY } from '../protocol/http/headers/host-rewrite.js';
import type { Logger } from '../core/log.js';
import {
  Activity, type Addr, AddrNeg, AddrPending, type Address, BoundName, Neg, Pending, type Path, type State, Var, addrBound,
  addrEquals, addrFailed, address, failed, leaf, ok, type Name, type NameTree,
} from '../naming/index.js';
import { type Backoff, exponentialJittered } from '../service/policy/index.js';
import {
  type ConsulAnswer, ConsulClient, HEALTH_STATUSES, type HealthStatus, type ServiceInstance, UnknownDatacenterError, blockingWatch,
  catalogInstances, healthInstances, jsonBody,
} from './kvstore-api.js';
import { type RunningNamer, defineNamer, sameLookup } from './namer-kind.js';

/**
 * `io.prx.kvstore`: services in Consul's catalog (Linkerd's `io.l5d.consul` namer).
 * `/#/io.prx.kvstore/<dc>/<service>[/residual]` binds the instances of `<service>` in datacenter
 * `<dc>` (`.local`: the agent's own); with `includeTag`, `/<dc>/<tag>/<service>` binds those with
 * the tag. A service (or tag) the datacenter's catalog does not list is Neg, and so is a service
 * with no instance left. Every list is watched with blocking queries; while Consul is unreachable
 * or failing, the last answer stays in force and the query is retried with backoff.
 *
 * ```yaml
 * namers:
 * - kind: io.prx.kvstore
 *   host: 127.0.0.1
 *   port: 8500
 *   includeTag: false
 *   useHealthCheck: true          # /v1/health/service, only instances whose checks pass
 *   token: 0b8c…                  # X-Consul-Token
 *   setHost: true                 # addr metadata authority <svc>.service.<dc>.consul
 *   weights: [{tag: canary, weight: 0.1}]
 * ```
 */
export const kvstoreNamerSchema = lazySchema(() => z.strictObject({
  ...namerShape('io.prx.kvstore'),
  host: ip.default('localhost'),
  port: port.default(8500),
  includeTag: z.boolean().default(false),
  /** Ask `/v1/health/service` (instances with their checks) instead of `/v1/catalog/service`. */
  useHealthCheck: z.boolean().default(false),
  /** With useHealthCheck: the statuses (worst check of an instance) that keep an instance. */
  healthStatuses: z.array(z.enum(HEALTH_STATUSES)).min(1, { error: 'expected at least one status' }).default(['passing']),
  token: nonEmptyString.optional(),
  setHost: z.boolean().default(false),
  consistencyMode: z.enum(['default', 'stale', 'consistent']).default('default'),
  /** Fail lookups at once while Consul cannot be reached and nothing is known yet (else they wait). */
  failFast: z.boolean().default(false),
  /** Use an instance's ServiceAddress when it has one (else always its node's Address). */
  preferServiceAddress: z.boolean().default(true),
  /** An instance's weight is the largest of its tags' (1 without any). */
  weights: z.array(z.strictObject({ tag: nonEmptyString, weight: z.number().min(0) })).default([]),
  /** Copy each instance's ServiceMeta into its address metadata. */
  transferMetadata: z.boolean().default(false),
  tls: namerTlsSchema.optional(),
  /** How long one blocking query waits for a change (Consul's `wait`; Consul caps it at 10 minutes). */
  blockingWaitMs: durationMs.default(300_000),
}));
export type KvstoreNamerConfig = z.output<typeof kvstoreNamerSchema>;

/** Knobs outside the config (tests shorten them). */
export interface KvstoreNamerOptions {
  /** Delay before retrying a failed query (Linkerd: exponential jitter up to 5 s). */
  readonly retryBackoff?: Backoff;
}

const LOCAL_DC = '.local';

/** A datacenter's services: lowercased name → the name as listed and its tags (lowercased → as listed). */
type ServiceMap = ReadonlyMap<string, { readonly name: string; readonly tags: ReadonlyMap<string, string> }>;

interface AgentInfo {
  readonly datacenter: string;
  readonly domain: string;
}

export class KvstoreNamer implements RunningNamer {
  readonly #cfg: KvstoreNamerConfig;
  readonly #prefix: Path;
  readonly #log: Logger;
  readonly #client: ConsulClient;
  readonly #backoff: Backoff;
  readonly #weights: ReadonlyMap<string, number>;
  // Shared by every lookup of one datacenter / one service: one blocking query each while observed.
  readonly #services = new Map<string, Var<State<ServiceMap>>>();
  readonly #addrs = new Map<string, Var<Addr>>();
  #agent: Promise<AgentInfo> | undefined;
  readonly #abort = new AbortController();
  #closed = false;

  constructor(cfg: KvstoreNamerConfig, prefix: Path, log: Logger, opts: KvstoreNamerOptions = {}) {
    this.#cfg = cfg;
    this.#prefix = prefix;
    this.#log = log;
    this.#backoff = opts.retryBackoff ?? exponentialJittered(10, 5000);
    const weights = new Map<string, number>();
    for (const w of cfg.weights) weights.set(w.tag, w.weight);
    this.#weights = weights;
    this.#client = new ConsulClient({
      host: cfg.host,
      port: cfg.port,
      tls: cfg.tls === undefined ? undefined : loadTlsMaterial(cfg.tls),
      token: cfg.token,
      blockingWaitMs: cfg.blockingWaitMs,
    });
  }

  lookup(path: Path): Activity<NameTree<Name>> {
    const take = this.#cfg.includeTag ? 3 : 2;
    if (path.size < take) return Activity.value<NameTree<Name>>(Neg);
    const dc = path.elemUtf8(0);
    const tag = this.#cfg.includeTag ? path.elemUtf8(1) : undefined;
    const service = path.elemUtf8(take - 1);
    const id = this.#prefix.concat(path.take(take));
    const residual = path.drop(take);
    return new Activity(
      this.#servicesOf(dc)
        .map((s): State<NameTree<Name>> => {
          if (s.kind !== 'ok') return s;
          // Consul matches service names and tags regardless of case.
          const listed = s.value.get(service.toLowerCase());
          const listedTag = tag === undefined ? undefined : listed?.tags.get(tag.toLowerCase());
          if (listed === undefined || (tag !== undefined && listedTag === undefined)) return ok(Neg);
          return ok(leaf(new BoundName(id, this.#addrOf(dc, listed.name, listedTag), residual)));
        })
        .dedup(sameLookup),
    );
  }

  /** Stops every watch and drops the connections. */
  close(): void {
    this.#closed = true;
    this.#abort.abort();
    this.#client.close();
  }

  #query(dc: string, extra: Record<string, string> = {}): URLSearchParams {
    const q = new URLSearchParams(extra);
    if (dc !== LOCAL_DC) q.set('dc', dc);
    if (this.#cfg.consistencyMode !== 'default') q.set(this.#cfg.consistencyMode, '');
    return q;
  }


  #servicesOf(dc: string): Var<State<ServiceMap>> {
    let v = this.#services.get(dc);
    if (v === undefined) {
      const path = '/v1/catalog/services';
      v = Var.async<State<ServiceMap>>(Pending, (set) => {
        let known = false;
        return blockingWatch(this.#client, path, () => this.#query(dc), (a) => servicesOf(a, path), {
          value: (services) => {
            known = true;
            set(ok(services));
          },
          error: (e, retryInMs) => {
            if (e instanceof UnknownDatacenterError) {
              known = true;
              set(ok(new Map()));
              return;
            }
            this.#warn(e, retryInMs, { dc }, `cannot list the services of datacenter ${dc}`);
            // Nothing known yet: the lookup waits (Pending), or with failFast fails with the reason.
            if (!known && this.#cfg.failFast) set(failed(e));
          },
        }, this.#backoff);
      });
      this.#services.set(dc, v);
    }
    return v;
  }

  #addrOf(dc: string, service: string, tag: string | undefined): Var<Addr> {
    const key = `${dc}\u0000${service}\u0000${tag ?? ''}`;
    let v = this.#addrs.get(key);
    if (v === undefined) {
      const health = this.#cfg.useHealthCheck;
      const path = `/v1/${health ? 'health' : 'catalog'}/service/${encodeURIComponent(service)}`;
      const extra: Record<string, string> = tag === undefined ? {} : { tag };
      // The one status Consul can filter on itself.
      const onlyPassing = health && this.#cfg.healthStatuses.length === 1 && this.#cfg.healthStatuses[0] === 'passing';
      if (onlyPassing) extra['passing'] = 'true';
      v = Var.async<Addr>(AddrPending, (set) => {
        let known = false;
        let meta: Readonly<Record<string, unknown>> | undefined = this.#cfg.setHost ? undefined : {};
        let pending: ServiceInstance[] | undefined;
        const publish = (instances: ServiceInstance[]): void => {
          if (meta === undefined) {
            pending = instances; // waiting for the agent's domain
            return;
          }
          known = true;
          set(this.#addrFrom(instances, meta));
        };
        if (meta === undefined) {
          this.#agentInfo().then(
            (info) => {
              const host = `${tag === undefined ? '' : `${tag}.`}${service}.service.${dc === LOCAL_DC ? info.datacenter : dc}.${info.domain}`;
              meta = { [AUTHORITY_META_KEY]: host };
              if (pending !== undefined) publish(pending);
            },
            () => undefined, // only on close
          );
        }
        const watch = blockingWatch(this.#client, path, () => this.#query(dc, extra), (a) => this.#instancesOf(a, path, health, onlyPassing), {
          value: publish,
          error: (e, retryInMs) => {
            if (e instanceof UnknownDatacenterError) {
              known = true;
              set(AddrNeg);
              return;
            }
            this.#warn(e, retryInMs, { dc, service }, `cannot read the instances of ${service} in datacenter ${dc}`);
            if (!known && this.#cfg.failFast) set(addrFailed(e));
          },
        }, this.#backoff);
        return watch;
      }).dedup(addrEquals);
      this.#addrs.set(key, v);
    }
    return v;
  }

  #instancesOf(a: ConsulAnswer, path: string, health: boolean, filtered: boolean): ServiceInstance[] {
    if (!health) return catalogInstances(jsonBody(a, path, 'array'));
    const all = healthInstances(jsonBody(a, path, 'array'));
    if (filtered) return all;
    const keep = new Set<HealthStatus>(this.#cfg.healthStatuses);
    return all.filter((i) => i.status !== undefined && keep.has(i.status));
  }

  #addrFrom(instances: readonly ServiceInstance[], meta: Readonly<Record<string, unknown>>): Addr {
    const out: Address[] = [];
    const seen = new Set<string>();
    for (const i of instances) {
      const host = this.#cfg.preferServiceAddress && i.serviceAddress !== '' ? i.serviceAddress : i.nodeAddress;
      // Instances without an address or a usable port cannot be dialled: Linkerd skips them too.
      if (host === '' || i.port === undefined || !Number.isInteger(i.port) || i.port < 1 || i.port > 65535) continue;
      const key = `${host} ${i.port}`;
      if (seen.has(key)) continue;
      seen.add(key);
      let weight: number | undefined;
      for (const t of i.tags) {
        const w = this.#weights.get(t);
        if (w !== undefined && (weight === undefined || w > weight)) weight = w;
      }
      out.push(address(host, i.port, weight ?? 1, this.#cfg.transferMetadata ? { ...i.meta } : {}));
    }
    out.sort((x, y) => (x.host === y.host ? x.port - y.port : x.host < y.host ? -1 : 1));
    return out.length === 0 ? AddrNeg : addrBound(out, meta);
  }

  /** The agent's datacenter and DNS domain (for setHost), read once, retried until it answers. */
  #agentInfo(): Promise<AgentInfo> {
    this.#agent ??= (async () => {
      const delays = this.#backoff.stream();
      const path = '/v1/agent/self';
      for (;;) {
        try {
          const a = await this.#client.get(path, new URLSearchParams(), this.#abort.signal);
          const self = jsonBody<{ Config?: { Datacenter?: string; Domain?: string }; DebugConfig?: { DNSDomain?: string } }>(a, path, 'object');
          const domain = (self.Config?.Domain ?? self.DebugConfig?.DNSDomain ?? 'consul').replace(/^\.+|\.+$/g, '') || 'consul';
          return { datacenter: self.Config?.Datacenter ?? LOCAL_DC, domain };
        } catch (e) {
          if (this.#closed) throw e;
          const wait = delays.nextMs();
          this.#warn(e, wait, {}, 'cannot read the Consul agent configuration (for setHost)');
          await new Promise((r) => setTimeout(r, wait).unref());
        }
      }
    })();
    return this.#agent;
  }

  #warn(e: unknown, retryInMs: number, fields: Record<string, string>, what: string): void {
    if (this.#closed) return;
    this.#log.warn({ ...fields, err: errorMessage(e), consul: `${this.#cfg.host}:${this.#cfg.port}` }, `${what}: ${errorMessage(e)}; retrying in ${retryInMs} ms`);
  }
}

function servicesOf(a: ConsulAnswer, path: string): ServiceMap {
  const body = jsonBody<Record<string, unknown>>(a, path, 'object');
  const out = new Map<string, { name: string; tags: ReadonlyMap<string, string> }>();
  for (const [name, tags] of Object.entries(body)) {
    const list = Array.isArray(tags) ? tags.filter((t): t is string => typeof t === 'string') : [];
    out.set(name.toLowerCase(), { name, tags: new Map(list.map((t) => [t.toLowerCase(), t])) });
  }
  return out;
}

defineNamer({
  kind: 'io.prx.kvstore',
  schema: kvstoreNamerSchema,
  create: (cfg, ctx) => new KvstoreNamer(cfg, ctx.prefix, ctx.log),
});
