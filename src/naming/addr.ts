/** One endpoint: an IP literal (or host name a resolver has not expanded) and a port. */
export interface Address {
  readonly host: string;
  readonly port: number;
  /** Relative load-balancing weight of this endpoint (fs namer's `host port * weight`). */
  readonly weight: number;
  readonly meta: Readonly<Record<string, unknown>>;
}

const NO_META: Readonly<Record<string, unknown>> = Object.freeze({});

export function address(host: string, port: number, weight = 1, meta: Readonly<Record<string, unknown>> = NO_META): Address {
  return { host, port, weight, meta };
}

/** `host:port`, with IPv6 hosts in brackets: the identity of an endpoint. */
export function addressKey(a: Address): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/**
 * What a bound name currently resolves to (Finagle `Addr`): a set of endpoints (possibly empty),
 * Neg (the name does not exist), Pending (not known yet) or Failed.
 */
export type Addr =
  | { readonly kind: 'bound'; readonly addresses: readonly Address[]; readonly meta: Readonly<Record<string, unknown>> }
  | { readonly kind: 'neg' }
  | { readonly kind: 'pending' }
  | { readonly kind: 'failed'; readonly error: Error };

export const AddrNeg: Addr = Object.freeze({ kind: 'neg' });
export const AddrPending: Addr = Object.freeze({ kind: 'pending' });

export function addrBound(addresses: readonly Address[], meta: Readonly<Record<string, unknown>> = NO_META): Addr {
  return { kind: 'bound', addresses, meta };
}

export function addrFailed(error: unknown): Addr {
  return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) };
}

/** Metadata key carrying the innermost union weight of a bound leaf (Finagle's name). */
export const WEIGHT_META_KEY = 'namer_nametree_weight';

/** Structural equality, so unchanged re-resolutions do not churn load balancers. */
export function addrEquals(a: Addr, b: Addr): boolean {
  if (a === b) return true;
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'bound': {
      const bb = b as typeof a;
      if (a.addresses.length !== bb.addresses.length) return false;
      if (!shallowEqual(a.meta, bb.meta)) return false;
      for (let i = 0; i < a.addresses.length; i++) {
        const x = a.addresses[i] as Address;
        const y = bb.addresses[i] as Address;
        if (x.host !== y.host || x.port !== y.port || x.weight !== y.weight || !shallowEqual(x.meta, y.meta)) return false;
      }
      return true;
    }
    case 'failed':
      return a.error.message === (b as typeof a).error.message;
    case 'neg':
    case 'pending':
      return true;
  }
}

function shallowEqual(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => Object.is(a[k], b[k]));
}
