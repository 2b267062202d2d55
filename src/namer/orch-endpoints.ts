import { type Address, address } from '../naming/index.js';

/**
 * The `io.prx.orch` namers' arithmetic, free of I/O: which addresses an Endpoints object (and, for
 * a port number, its Service) gives one `<port>` path segment. The shapes below are the fields
 * read, so any object of the orchestrator API's wire format fits them.
 */

export interface EndpointPortView {
  readonly name?: string;
  readonly port: number;
  readonly protocol?: string;
}

export interface EndpointAddressView {
  readonly ip: string;
  readonly nodeName?: string;
}

export interface EndpointsView {
  readonly subsets?: readonly {
    readonly addresses?: readonly EndpointAddressView[];
    readonly notReadyAddresses?: readonly EndpointAddressView[];
    readonly ports?: readonly EndpointPortView[];
  }[];
}

export interface ServicePortView {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number | string;
  readonly protocol?: string;
}

export interface ServiceView {
  readonly spec?: { readonly ports?: readonly ServicePortView[] };
  readonly status?: { readonly loadBalancer?: { readonly ingress?: readonly { readonly ip?: string; readonly hostname?: string }[] } };
}

/** A `<port>` path segment: a port name, or (all digits) a Service port number. */
export type PortRef = { readonly kind: 'name'; readonly name: string } | { readonly kind: 'number'; readonly number: number };

/** Address metadata key of the node an endpoint runs on (Linkerd's `nodeName`; the daemonset transformer reads it). */
export const NODE_NAME_META_KEY = 'nodeName';

export function parsePortRef(segment: string): PortRef {
  return /^[0-9]+$/.test(segment) ? { kind: 'number', number: Number(segment) } : { kind: 'name', name: segment };
}

/** Only TCP ports can be dialled; a port without `protocol` is TCP. */
function tcp(p: { readonly protocol?: string }): boolean {
  return p.protocol === undefined || p.protocol.toUpperCase() === 'TCP';
}

function samePortName(a: string | undefined, b: string | undefined): boolean {
  return (a ?? '') === (b ?? '');
}

/** Sorted and without duplicates, so an unchanged set compares equal across updates. */
function normalized(list: Address[]): Address[] {
  const seen = new Set<string>();
  const out: Address[] = [];
  for (const a of list) {
    const key = `${a.host} ${a.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(a);
  }
  return out.sort((x, y) => (x.host === y.host ? x.port - y.port : x.host < y.host ? -1 : 1));
}

function endpointAddress(a: EndpointAddressView, port: number): Address {
  return address(a.ip, port, 1, a.nodeName === undefined ? undefined : { [NODE_NAME_META_KEY]: a.nodeName });
}

/**
 * The ready addresses of `endpoints` for `port`, or undefined when the name does not exist (Neg).
 *
 * A port name must be the name of a TCP port of some subset of the Endpoints object (a missing
 * object knows no port): each subset contributes its ready addresses with its port of that name.
 * A port number must be a TCP port of the Service; an integer `targetPort` (or none: the same
 * number) is that port on every ready address; a named `targetPort` is, per subset, the endpoints
 * port that carries the Service port's name (or else the target's name, as Linkerd looked it up).
 * A known port without ready addresses is an empty set, not Neg.
 */
export function endpointAddresses(endpoints: EndpointsView | undefined, service: ServiceView | undefined, port: PortRef): Address[] | undefined {
  const subsets = endpoints?.subsets ?? [];
  if (port.kind === 'name') {
    let known = false;
    const out: Address[] = [];
    for (const s of subsets) {
      const p = s.ports?.find((x) => tcp(x) && x.name === port.name);
      if (p === undefined) continue;
      known = true;
      for (const a of s.addresses ?? []) out.push(endpointAddress(a, p.port));
    }
    return known ? normalized(out) : undefined;
  }
  const sp = service?.spec?.ports?.find((x) => tcp(x) && x.port === port.number);
  if (sp === undefined) return undefined;
  const target = sp.targetPort ?? sp.port;
  const out: Address[] = [];
  for (const s of subsets) {
    let number: number | undefined;
    if (typeof target === 'number') number = target;
    else {
      const ports = (s.ports ?? []).filter(tcp);
      number = (ports.find((x) => samePortName(x.name, sp.name)) ?? ports.find((x) => x.name === target))?.port;
    }
    if (number === undefined) continue;
    for (const a of s.addresses ?? []) out.push(endpointAddress(a, number));
  }
  return normalized(out);
}

/**
 * `io.prx.orch.external`: the load balancer's ingress addresses of `service` (each ingress's IP,
 * else its host name) with the Service port named by `port` (its name, or its number), or
 * undefined (Neg) when there is no such Service or port. No ingress yet is an empty set.
 */
export function externalAddresses(service: ServiceView | undefined, port: PortRef): Address[] | undefined {
  if (service === undefined) return undefined;
  const sp = service.spec?.ports?.find((x) => tcp(x) && (port.kind === 'name' ? x.name === port.name : x.port === port.number));
  if (sp === undefined) return undefined;
  const out: Address[] = [];
  for (const i of service.status?.loadBalancer?.ingress ?? []) {
    const host = i.ip ?? i.hostname;
    if (host !== undefined && host !== '') out.push(address(host, sp.port));
  }
  return normalized(out);
}

/**
 * The port segments that bind for one object: the Endpoints object's TCP port names and the
 * Service's port numbers; with `external`, the Service's port names and numbers.
 */
export function portSegments(endpoints: EndpointsView | undefined, service: ServiceView | undefined, external = false): string[] {
  const out = new Set<string>();
  for (const s of endpoints?.subsets ?? []) for (const p of s.ports ?? []) if (tcp(p) && p.name) out.add(p.name);
  for (const p of service?.spec?.ports ?? []) {
    if (!tcp(p)) continue;
    out.add(String(p.port));
    if (external && p.name) out.add(p.name);
  }
  return [...out].sort();
}
