import { lookup } from 'node:dns/promises';
import { type Addr, AddrNeg, AddrPending, type HostResolver, Var, addrBound, addrEquals, addrFailed, address } from '../naming/index.js';

/** How often `/$/inet` re-resolves a host name (Finagle's InetResolver polls every 5 s). */
export const DNS_REFRESH_MS = 5000;

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA']);

/**
 * A host resolver backed by the system resolver (getaddrinfo, like the JVM's). A name that does
 * not exist is Neg; other failures are Failed. `fixed` resolutions are made once and kept. The
 * refresh loop runs only while someone observes the address, and its timer never holds the
 * process open.
 */
export function dnsResolver(refreshMs = DNS_REFRESH_MS): HostResolver {
  const fixedCache = new Map<string, Var<Addr>>();
  return (host, port, fixed) => {
    if (fixed) {
      const key = `${host}:${port}`;
      let v = fixedCache.get(key);
      if (!v) {
        const once = resolving(host, port, 0);
        // Keep the first non-pending answer for the life of the process.
        let settled: Addr | undefined;
        v = Var.async<Addr>(AddrPending, (set) => {
          if (settled) {
            set(settled);
            return { close() {} };
          }
          return once.observe((a) => {
            if (a.kind !== 'pending') settled = a;
            set(a);
          });
        });
        fixedCache.set(key, v);
      }
      return v;
    }
    return resolving(host, port, refreshMs).dedup(addrEquals);
  };
}

function resolving(host: string, port: number, refreshMs: number): Var<Addr> {
  return Var.async<Addr>(AddrPending, (set) => {
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const resolve = async (): Promise<void> => {
      let result: Addr;
      try {
        const found = await lookup(host, { all: true });
        result = found.length === 0 ? AddrNeg : addrBound(found.map((f) => address(f.address, port)));
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? '';
        result = NOT_FOUND.has(code) ? AddrNeg : addrFailed(e);
      }
      if (stopped) return;
      set(result);
      if (refreshMs > 0) {
        timer = setTimeout(() => void resolve(), refreshMs);
        timer.unref();
      }
    };
    void resolve();
    return {
      close() {
        stopped = true;
        if (timer) clearTimeout(timer);
      },
    };
  });
}
