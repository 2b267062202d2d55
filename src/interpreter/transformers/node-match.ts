import { isIPv4, isIPv6 } from 'node:net';
import { type Addr, AddrNeg, type Address, addrBound, addressKey } from '../../naming/index.js';

// How the orchestrator transformers tell which node an address is on: by its /24 subnet (each
// node of a cluster gets its own /24 of pod IPs) or, for pods on the host network (whose IP is the
// node's), by the node name the io.prx.orch namer puts in the address metadata.

/** The address-metadata key holding the name of the node an address is on (Linkerd's `nodeName`). */
export const NODE_NAME_META = 'nodeName';

/**
 * The /24 subnet of an IPv4 literal (`10.1.2.3` → `10.1.2`), IPv4-mapped IPv6 forms included
 * (`::ffff:10.1.2.3`); undefined for host names and other IPv6 addresses, which have no /24.
 */
export function subnet24(host: string): string | undefined {
  let ip = host;
  if (!isIPv4(ip)) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
    if (mapped === null || !isIPv6(ip)) return undefined;
    ip = mapped[1] as string;
  }
  return ip.slice(0, ip.lastIndexOf('.'));
}

/** The node name in an address's metadata; undefined when absent or not a non-empty string. */
export function nodeNameOf(a: Address): string | undefined {
  const v = a.meta[NODE_NAME_META];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** Which node an address is on, as a key: its /24 subnet, or its node name with `hostNetwork`. */
export type NodeKey = (a: Address) => string | undefined;

export const subnetKey: NodeKey = (a) => subnet24(a.host);
export const nodeNameKey: NodeKey = nodeNameOf;

/** Gateway addresses (a daemon set's pods) grouped by node key; addresses without one are left out. */
export function gatewaysByNode(gateways: readonly Address[], key: NodeKey): ReadonlyMap<string, readonly Address[]> {
  const byNode = new Map<string, Address[]>();
  for (const g of gateways) {
    const k = key(g);
    if (k === undefined) continue;
    const list = byNode.get(k);
    if (list === undefined) byNode.set(k, [g]);
    else list.push(g);
  }
  return byNode;
}

/**
 * Every address of `addr` replaced by the gateways on its node (all of them, when several run
 * there), duplicates collapsed. An address with no gateway on its node is dropped, and an address
 * set with nothing left is Neg (Linkerd's `GatewayTransformer`), so an Alt falls through. Neg,
 * Pending and Failed pass through unchanged.
 */
export function mapToGateways(addr: Addr, gateways: ReadonlyMap<string, readonly Address[]>, key: NodeKey): Addr {
  if (addr.kind !== 'bound') return addr;
  const seen = new Set<string>();
  const out: Address[] = [];
  for (const a of addr.addresses) {
    const k = key(a);
    const here = k === undefined ? undefined : gateways.get(k);
    if (here === undefined) continue;
    for (const g of here) {
      const id = addressKey(g);
      if (seen.has(id)) continue;
      seen.add(id);
      out.push(g);
    }
  }
  return out.length === 0 ? AddrNeg : addrBound(out, addr.meta);
}
