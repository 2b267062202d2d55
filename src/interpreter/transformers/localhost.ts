import { lookup } from 'node:dns/promises';
import { hostname, networkInterfaces } from 'node:os';
import { z } from 'zod';
import { defineTransformer, perLeafTransformer, prefixingMapBound, type Transformer, transformerPrefix, transformerShape } from '../transformer.js';
import { filterByIps, resolveOnce } from './ip-filter.js';
import { lazySchema } from '../../config/index.js';

/**
 * `io.prx.localhost`: keeps only the addresses of this host — those of the host name (looked up
 * once, at start-up) and of every network interface, loopback included (Linkerd 1.7 uses all
 * interfaces that are up). An address set with nothing local left becomes Neg. Ids get the prefix
 * `/%/io.prx.localhost`.
 */
export const localhostTransformerSchema = lazySchema(() => z.strictObject({ ...transformerShape('io.prx.localhost') }));
export type LocalhostTransformerConfig = z.output<typeof localhostTransformerSchema>;

/** The IPs of this host: its name's DNS addresses (when it resolves) and its interfaces'. */
export async function localIps(): Promise<string[]> {
  const ips = Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
  try {
    for (const a of await lookup(hostname(), { all: true })) ips.push(a.address);
  } catch {
    // A host name without a DNS entry is common in containers; the interfaces still say who we are.
  }
  return ips;
}

export function createLocalhostTransformer(
  cfg: LocalhostTransformerConfig,
  findIps: () => Promise<Iterable<string>> = localIps,
): Transformer {
  const prefix = transformerPrefix(cfg.prefix, '/io.prx.localhost');
  return perLeafTransformer(cfg.kind, prefix, prefixingMapBound(prefix, filterByIps(resolveOnce(findIps))));
}

defineTransformer({
  kind: 'io.prx.localhost',
  schema: localhostTransformerSchema,
  create: (cfg) => createLocalhostTransformer(cfg),
});
