import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';

/**
 * Listeners of this process that routing must not reach: the admin interface (unless
 * `admin.allowProxiedAccess`). The process adds them; a router's clients leave every bound
 * address that is one of them out of their balancer. A dtab (the config's or a request's `prx-dtab`)
 * could otherwise send `POST /admin/shutdown` through the data plane.
 *
 * An endpoint is such a listener when its port is the listener's and its host reaches the
 * listener's address: the address itself; for a loopback listener also `0.0.0.0`/`::` and
 * `localhost`; for a wildcard listener any loopback, unspecified or own interface address.
 * Names other than `localhost` are not resolved here (namers hand over addresses).
 */
export class ProtectedListeners {
  /** Per port, the addresses that reach a protected listener on it (`*` for every local address). */
  readonly #byPort = new Map<number, Set<string>>();
  #local: ReadonlySet<string> | undefined;

  /** Protects the listener bound to `ip`:`port`. */
  add(ip: string, port: number): void {
    let hosts = this.#byPort.get(port);
    if (hosts === undefined) {
      hosts = new Set();
      this.#byPort.set(port, hosts);
    }
    const addr = normalizeHost(ip);
    if (isUnspecified(addr)) hosts.add('*');
    else {
      hosts.add(addr);
      if (isLoopback(addr)) for (const h of ['0.0.0.0', '::', 'localhost']) hosts.add(h);
    }
  }

  /** Whether a request to `host`:`port` would reach a protected listener. */
  covers(host: string, port: number): boolean {
    const hosts = this.#byPort.get(port);
    if (hosts === undefined) return false; // the common case: one map lookup
    const addr = normalizeHost(host);
    if (hosts.has(addr)) return true;
    if (!hosts.has('*')) return false;
    return isUnspecified(addr) || isLoopback(addr) || this.#localAddresses().has(addr);
  }

  #localAddresses(): ReadonlySet<string> {
    if (this.#local === undefined) {
      const own = new Set<string>();
      for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) own.add(normalizeHost(a.address));
      this.#local = own;
    }
    return this.#local;
  }
}

/** Lower-case, without IPv6 brackets or zone, IPv4-mapped IPv6 as plain IPv4. */
function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  const zone = h.indexOf('%');
  if (zone >= 0) h = h.slice(0, zone);
  if (h.startsWith('::ffff:') && isIP(h.slice(7)) === 4) h = h.slice(7);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

function isUnspecified(addr: string): boolean {
  return addr === '0.0.0.0' || addr === '::' || addr === '0:0:0:0:0:0:0:0';
}

function isLoopback(addr: string): boolean {
  if (addr === 'localhost' || addr.endsWith('.localhost')) return true;
  const family = isIP(addr);
  if (family === 4) return addr.startsWith('127.');
  return family === 6 && (addr === '::1' || addr === '0:0:0:0:0:0:0:1');
}
