import { BlockList, isIP } from 'node:net';
import {
  type Addr, AddrNeg, AddrPending, type Address, MutableVar, type State, Var, addrBound, addrFailed, failed, ok, Pending,
} from '../../naming/index.js';

/**
 * A fixed set of IP addresses. IPv4-mapped IPv6 forms match their IPv4 address (`::ffff:127.0.0.1`
 * is `127.0.0.1`), and IPv6 text forms match whatever their spelling.
 */
export class IpSet {
  readonly #list = new BlockList();
  readonly ips: readonly string[];

  constructor(ips: Iterable<string>) {
    const kept: string[] = [];
    for (const raw of ips) {
      const ip = withoutZone(raw);
      const family = isIP(ip);
      if (family === 0) continue;
      this.#list.addAddress(ip, family === 4 ? 'ipv4' : 'ipv6');
      kept.push(ip);
    }
    this.ips = kept;
  }

  /** True when `host` is an IP literal in the set; host names never match. */
  has(host: string): boolean {
    const ip = withoutZone(host);
    const family = isIP(ip);
    if (family === 0) return false;
    return this.#list.check(ip, family === 4 ? 'ipv4' : 'ipv6');
  }
}

/** `fe80::1%eth0` → `fe80::1`: interface addresses carry the zone separately. */
function withoutZone(ip: string): string {
  const i = ip.indexOf('%');
  return i < 0 ? ip : ip.slice(0, i);
}

/**
 * A set of IPs found once, asynchronously, at start-up (Linkerd resolves them when the
 * transformer is built). Until the lookup finishes the set is pending; a failed lookup stays failed.
 */
export function resolveOnce(lookup: () => Promise<Iterable<string>>): Var<State<IpSet>> {
  const state = new MutableVar<State<IpSet>>(Pending);
  lookup().then(
    (ips) => state.update(ok(new IpSet(ips))),
    (e: unknown) => state.update(failed(e)),
  );
  return state;
}

/**
 * The addresses of `addr` whose host is in `ips`. Nothing left is Neg (Linkerd's
 * `FilteringNameTreeTransformer`), so an Alt falls through to its next branch; Neg, Pending and
 * Failed pass through unchanged.
 */
export function keepAddresses(addr: Addr, ips: IpSet): Addr {
  return keepMatching(addr, (a) => ips.has(a.host));
}

/** The addresses of `addr` that `keep` accepts, as {@link keepAddresses}; an unchanged set is the same object. */
export function keepMatching(addr: Addr, keep: (a: Address) => boolean): Addr {
  if (addr.kind !== 'bound') return addr;
  let kept: Address[] | undefined;
  const all = addr.addresses;
  for (let i = 0; i < all.length; i++) {
    const a = all[i] as Address;
    if (keep(a)) {
      if (kept !== undefined) kept.push(a);
    } else {
      kept ??= all.slice(0, i);
    }
  }
  if (kept === undefined) return all.length === 0 ? AddrNeg : addr;
  return kept.length === 0 ? AddrNeg : addrBound(kept, addr.meta);
}

/** Maps a bound name's address var through the IP filter, pending until the IPs are known. */
export function filterByIps(ips: Var<State<IpSet>>): (addr: Var<Addr>) => Var<Addr> {
  return (addr) =>
    ips.flatMap((s): Var<Addr> => {
      if (s.kind === 'ok') return addr.map((a) => keepAddresses(a, s.value));
      return Var.value(s.kind === 'pending' ? AddrPending : addrFailed(s.error));
    });
}
