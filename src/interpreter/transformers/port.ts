import { z } from 'zod';
import { port, lazySchema } from '../../config/index.js';
import { type Addr, type Address, address, addrBound, addressKey } from '../../naming/index.js';
import { defineTransformer, perLeafTransformer, prefixingMapBound, type Transformer, transformerPrefix, transformerShape } from '../transformer.js';

/**
 * `io.prx.port`: every address keeps its IP and gets `port` (to reach a proxy listening on each
 * host). Addresses that become equal collapse into the first. Ids get the prefix
 * `/%/io.prx.port/<port>`, e.g. `/%/io.prx.port/4141/#/io.prx.fs/hello`.
 */
export const portTransformerSchema = lazySchema(() => z.strictObject({
  ...transformerShape('io.prx.port'),
  port,
}));
export type PortTransformerConfig = z.output<typeof portTransformerSchema>;

/** `addr` with every address moved to `newPort`. */
export function withPort(addr: Addr, newPort: number): Addr {
  if (addr.kind !== 'bound') return addr;
  const seen = new Set<string>();
  const out: Address[] = [];
  for (const a of addr.addresses) {
    const moved = a.port === newPort ? a : address(a.host, newPort, a.weight, a.meta);
    const key = addressKey(moved);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(moved);
  }
  return addrBound(out, addr.meta);
}

export function createPortTransformer(cfg: PortTransformerConfig): Transformer {
  const prefix = transformerPrefix(cfg.prefix, `/io.prx.port/${cfg.port}`);
  const newPort = cfg.port;
  const mapAddr = (a: Addr): Addr => withPort(a, newPort);
  return perLeafTransformer(cfg.kind, prefix, prefixingMapBound(prefix, (addr) => addr.map(mapAddr)));
}

defineTransformer({
  kind: 'io.prx.port',
  schema: portTransformerSchema,
  create: (cfg) => createPortTransformer(cfg),
});
