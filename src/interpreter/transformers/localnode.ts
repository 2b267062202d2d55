import { z } from 'zod';
import { addIssue, lazySchema } from '../../config/index.js';
import { type Addr, Path } from '../../naming/index.js';
import { LocalnodeEnvError } from '../errors.js';
import { defineTransformer, perLeafTransformer, prefixingMapBound, type Transformer, transformerPrefix, transformerShape } from '../transformer.js';
import { keepMatching } from './ip-filter.js';
import { nodeNameOf, subnet24 } from './node-match.js';

/**
 * `io.prx.orch.localnode`: keeps only the addresses on this proxy's node. By default those on the
 * /24 subnet of `POD_IP` (this pod's IP, IPv4); with `hostNetwork: true` (the proxy runs on the
 * node's network, so its IP says nothing of its pods') those whose `nodeName` metadata, set by the
 * io.prx.orch namer, is `NODE_NAME`. An address set with nothing left is Neg. Ids get the prefix
 * `/%/io.prx.orch.localnode/<POD_IP or NODE_NAME>`, so each node's clients are distinct (Linkerd's
 * `io.l5d.k8s.localnode`). The variables are read when the config is loaded: a missing or bad one
 * is a config error naming the transformer, and the proxy does not start.
 */
export const localnodeTransformerSchema = lazySchema(() => z
  .strictObject({
    ...transformerShape('io.prx.orch.localnode'),
    hostNetwork: z.boolean().default(false),
  })
  .superRefine((cfg, ctx) => {
    const local = localNodeFromEnv(cfg.hostNetwork, process.env);
    if (local instanceof LocalnodeEnvError) addIssue(ctx, cfg.hostNetwork ? ['hostNetwork'] : [], local.reason);
  }));
export type LocalnodeTransformerConfig = z.output<typeof localnodeTransformerSchema>;

/** What this node is known by: the /24 of `POD_IP`, or `NODE_NAME` with hostNetwork. */
export type LocalNode =
  | { readonly by: 'subnet'; readonly podIp: string; readonly subnet: string }
  | { readonly by: 'nodeName'; readonly nodeName: string };

/** This node from the environment, or the error saying which variable is missing or bad. */
export function localNodeFromEnv(hostNetwork: boolean, env: NodeJS.ProcessEnv): LocalNode | LocalnodeEnvError {
  if (hostNetwork) {
    const nodeName = env['NODE_NAME'];
    if (nodeName === undefined || nodeName === '') {
      return new LocalnodeEnvError(
        'hostNetwork: true needs the environment variable NODE_NAME set to the name of this node (downward API: spec.nodeName)',
      );
    }
    if (nodeName.includes('/')) return new LocalnodeEnvError(`NODE_NAME is not a node name, got ${JSON.stringify(nodeName)}`);
    return { by: 'nodeName', nodeName };
  }
  const podIp = env['POD_IP'];
  if (podIp === undefined || podIp === '') {
    return new LocalnodeEnvError(
      'io.prx.orch.localnode needs the environment variable POD_IP set to the IP of this pod (downward API: status.podIP)',
    );
  }
  const subnet = subnet24(podIp);
  if (subnet === undefined) {
    return new LocalnodeEnvError(
      `POD_IP must be an IPv4 address (the subnet compared is its /24; with IPv6 pods use hostNetwork: true and NODE_NAME), got ${JSON.stringify(podIp)}`,
    );
  }
  return { by: 'subnet', podIp, subnet };
}

/** Keeps the addresses of `addr` on `local`'s node. */
export function keepLocalNode(addr: Addr, local: LocalNode): Addr {
  if (local.by === 'subnet') return keepMatching(addr, (a) => subnet24(a.host) === local.subnet);
  return keepMatching(addr, (a) => nodeNameOf(a) === local.nodeName);
}

export function createLocalnodeTransformer(cfg: LocalnodeTransformerConfig, env: NodeJS.ProcessEnv = process.env): Transformer {
  const local = localNodeFromEnv(cfg.hostNetwork, env);
  // Validation refused a config without its variable; only a variable removed since lands here.
  if (local instanceof LocalnodeEnvError) throw local;
  const where = local.by === 'subnet' ? local.podIp : local.nodeName;
  const prefix = transformerPrefix(cfg.prefix, '/io.prx.orch.localnode').concat(Path.of(where));
  const mapAddr = (a: Addr): Addr => keepLocalNode(a, local);
  return perLeafTransformer(cfg.kind, prefix, prefixingMapBound(prefix, (addr) => addr.map(mapAddr)));
}

defineTransformer({
  kind: 'io.prx.orch.localnode',
  schema: localnodeTransformerSchema,
  create: (cfg) => createLocalnodeTransformer(cfg),
});
