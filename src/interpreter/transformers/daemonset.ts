import { z } from 'zod';
import { ip, port, lazySchema } from '../../config/index.js';
import type { Logger } from '../../core/log.js';
import {
  type Addr, AddrPending, type Address, type State, Var, addrFailed, address, failed, ok, Pending,
} from '../../naming/index.js';
import {
  DEFAULT_ORCH_API_PORT, ENDPOINTS, type EndpointsObject, Informer, OrchApiClient, type OrchApiEnvironment, type OrchApiError,
  type OrchApiTarget, OrchInClusterError,
} from '../../protocol/orch/index.js';
import type { Backoff } from '../../service/policy/index.js';
import { DaemonsetUnavailableError } from '../errors.js';
import {
  defineTransformer, perLeafTransformer, prefixingMapBound, type Transformer, type TransformerContext, transformerPrefix, transformerShape,
} from '../transformer.js';
import { NODE_NAME_META, type NodeKey, gatewaysByNode, mapToGateways, nodeNameKey, subnetKey } from './node-match.js';

/**
 * `io.prx.orch.daemonset`: every address is replaced by the pods of a daemon set on the same node
 * (one proxy per node: traffic goes to the proxy beside its destination). The daemon set is found
 * through its Service: the ready addresses of Endpoints `namespace/service` at the port named
 * `port`, watched live. "Same node" is the same /24 subnet, or with `hostNetwork: true` (daemon
 * pods on the node's network) the same `nodeName` metadata, which the io.prx.orch namer sets on
 * the addresses it binds. Addresses with no daemon pod on their node are dropped, and a set with
 * nothing left is Neg (Linkerd's `io.l5d.k8s.daemonset`). Until the endpoints are first read the
 * addresses are pending; if that read fails they fail with the reason (while retrying); later
 * failures keep the last endpoints read. Ids get the prefix
 * `/%/io.prx.orch.daemonset/<namespace>/<port>/<service>`.
 *
 * The API is reached as the io.prx.orch namer reaches it: plain HTTP to `k8sHost:k8sPort` when
 * either is set (`kubectl proxy`, Linkerd 1's way); with neither, in-cluster HTTPS with the pod's
 * service account when its files exist, else localhost:8001, the spec's defaults.
 */
export const daemonsetTransformerSchema = lazySchema(() => z.strictObject({
  ...transformerShape('io.prx.orch.daemonset'),
  k8sHost: ip.optional(),
  k8sPort: port.optional(),
  namespace: orchLabel('a namespace name'),
  service: orchLabel('a service name'),
  port: z.string().regex(/^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]+(-[a-z0-9]+)*$/, {
    message:
      'expected a port name (the name of the daemon set service\'s port: 1–15 lower-case letters, digits and single "-", at least one letter)',
  }),
  hostNetwork: z.boolean().default(false),
}));
export type DaemonsetTransformerConfig = z.output<typeof daemonsetTransformerSchema>;

function orchLabel(what: string) {
  return z.string().regex(/^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
    message: `expected ${what} (an RFC 1123 label: 1–63 lower-case letters, digits and "-", not at either end)`,
  });
}

/** Knobs outside the config: tests point the client at a fake API server and shorten the backoff. */
export interface DaemonsetOptions {
  /** The client to use instead of one made from `k8sHost`/`k8sPort`. */
  readonly client?: OrchApiClient;
  /** A pod's environment for in-cluster mode (service-account directory, variables). */
  readonly environment?: OrchApiEnvironment;
  readonly backoff?: Backoff;
}

/** The ready addresses of `endpoints` at the port named `portName`, each with its node name in its metadata. */
export function daemonAddresses(endpoints: EndpointsObject | undefined, portName: string): Address[] {
  const out: Address[] = [];
  for (const subset of endpoints?.subsets ?? []) {
    const p = subset.ports?.find((x) => x.name === portName);
    if (p === undefined) continue;
    for (const a of subset.addresses ?? []) {
      out.push(address(a.ip, p.port, 1, a.nodeName === undefined || a.nodeName === '' ? undefined : { [NODE_NAME_META]: a.nodeName }));
    }
  }
  return out;
}

type DaemonsState = State<ReadonlyMap<string, readonly Address[]>>;

/**
 * The daemon set's pods, grouped by node, kept current by an informer on its one Endpoints object.
 * The informer runs while some bound name observes the result and stops after the last one leaves;
 * the pods last read are kept meanwhile, so a name observed again starts from them, not pending.
 */
function watchDaemons(
  cfg: DaemonsetTransformerConfig,
  client: OrchApiClient,
  key: NodeKey,
  opts: DaemonsetOptions,
  log: Logger | undefined,
): Var<DaemonsState> {
  const objectKey = `${cfg.namespace}/${cfg.service}`;
  let lastRead: DaemonsState | undefined;
  return Var.async<DaemonsState>(Pending, (set) => {
    if (lastRead !== undefined) set(lastRead);
    let failing = false;
    const informer = new Informer<EndpointsObject>(
      client,
      ENDPOINTS,
      { namespace: cfg.namespace, name: cfg.service, ...(opts.backoff === undefined ? {} : { backoff: opts.backoff }) },
      (objects) => {
        if (failing) log?.info({ endpoints: objectKey }, 'io.prx.orch.daemonset: reading the daemon set endpoints again');
        failing = false;
        lastRead = ok(gatewaysByNode(daemonAddresses(objects.get(objectKey), cfg.port), key));
        set(lastRead);
      },
      (e: OrchApiError) => {
        if (!failing) log?.warn({ endpoints: objectKey, err: e }, `io.prx.orch.daemonset: cannot read the daemon set endpoints: ${e.message}`);
        failing = true;
        // Once read, the last endpoints stay in force while the informer retries.
        if (lastRead === undefined) set(failed(new DaemonsetUnavailableError(cfg.namespace, cfg.service, e)));
      },
    );
    return { close: () => informer.close() };
  });
}

/** `addr` mapped to the daemons on its nodes: pending until they are known, failed if they cannot be read. */
function withDaemons(addr: Addr, daemons: DaemonsState, key: NodeKey): Addr {
  if (daemons.kind === 'ok') return mapToGateways(addr, daemons.value, key);
  return daemons.kind === 'pending' ? AddrPending : addrFailed(daemons.error);
}

export function createDaemonsetTransformer(
  cfg: DaemonsetTransformerConfig,
  ctx: TransformerContext,
  opts: DaemonsetOptions = {},
): Transformer {
  const prefix = transformerPrefix(cfg.prefix, `/io.prx.orch.daemonset/${cfg.namespace}/${cfg.port}/${cfg.service}`);
  const client = opts.client ?? apiClient(cfg, opts.environment);
  const key = cfg.hostNetwork ? nodeNameKey : subnetKey;
  const daemons = watchDaemons(cfg, client, key, opts, ctx.log);
  // One observation of each: a daemon set change does not re-observe every bound name's addresses.
  const mapAddr = (addr: Var<Addr>): Var<Addr> =>
    Var.collect<unknown>([addr, daemons]).map(([a, s]) => withDaemons(a as Addr, s as DaemonsState, key));
  return perLeafTransformer(cfg.kind, prefix, prefixingMapBound(prefix, mapAddr));
}

/** `k8sHost`/`k8sPort` as the client's target: a port alone means `kubectl proxy` on localhost. */
export function apiTarget(cfg: Pick<DaemonsetTransformerConfig, 'k8sHost' | 'k8sPort'>): OrchApiTarget {
  if (cfg.k8sHost === undefined && cfg.k8sPort === undefined) return {};
  return { host: cfg.k8sHost ?? 'localhost', port: cfg.k8sPort ?? DEFAULT_ORCH_API_PORT };
}

/** The client, made at start-up so that a half-configured pod stops prx there, naming this kind. */
function apiClient(cfg: DaemonsetTransformerConfig, environment: OrchApiEnvironment | undefined): OrchApiClient {
  try {
    return OrchApiClient.create(apiTarget(cfg), environment);
  } catch (e) {
    if (e instanceof OrchInClusterError) throw new OrchInClusterError(`io.prx.orch.daemonset: ${e.message}`);
    throw e;
  }
}

defineTransformer({
  kind: 'io.prx.orch.daemonset',
  schema: daemonsetTransformerSchema,
  create: (cfg, ctx) => createDaemonsetTransformer(cfg, ctx),
});
