import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ip, lazySchema } from '../../config/index.js';
import { TransformerHostLookupError } from '../errors.js';
import { defineTransformer, perLeafTransformer, prefixingMapBound, type Transformer, transformerPrefix, transformerShape } from '../transformer.js';
import { filterByIps, resolveOnce } from './ip-filter.js';

/**
 * `io.prx.specificHost`: keeps only the addresses whose IP is `host`'s (an IP literal, or a name
 * looked up once at start-up; a failed lookup fails the addresses with the reason). An address
 * set with nothing left becomes Neg. Ids get the prefix `/%/io.prx.specificHost`.
 */
export const specificHostTransformerSchema = lazySchema(() => z.strictObject({
  ...transformerShape('io.prx.specificHost'),
  host: ip,
}));
export type SpecificHostTransformerConfig = z.output<typeof specificHostTransformerSchema>;

async function hostIps(host: string): Promise<string[]> {
  if (isIP(host) !== 0) return [host];
  try {
    return (await lookup(host, { all: true })).map((a) => a.address);
  } catch (e) {
    throw new TransformerHostLookupError('io.prx.specificHost', host, e);
  }
}

export function createSpecificHostTransformer(cfg: SpecificHostTransformerConfig): Transformer {
  const prefix = transformerPrefix(cfg.prefix, '/io.prx.specificHost');
  const ips = resolveOnce(() => hostIps(cfg.host));
  return perLeafTransformer(cfg.kind, prefix, prefixingMapBound(prefix, filterByIps(ips)));
}

defineTransformer({
  kind: 'io.prx.specificHost',
  schema: specificHostTransformerSchema,
  create: (cfg) => createSpecificHostTransformer(cfg),
});
