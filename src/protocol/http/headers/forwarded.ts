/**
 * `Forwarded` (RFC 7239), added to every request when a server sets `addForwardedHeader`:
 * `by=<label>;for=<label>[;host=<Host>][;proto=<scheme of an absolute URI>]`, appended as one more
 * `Forwarded` header. Labels come from labelers:
 *
 * ```yaml
 * addForwardedHeader:
 *   by: {kind: router}          # _<router label>
 *   for: {kind: ip}             # 192.0.2.43, "[2001:db8::17]"; a wildcard address is `unknown`
 * # other kinds: ip:port ("192.0.2.43:8080"), connectionRandom, requestRandom (both `_` + 6
 * # alphanumerics, the default), static {label: foo} (_foo)
 * ```
 */
import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { choice, nonEmptyString, lazySchema } from '../../../config/index.js';
import { FORWARDED, HOST } from './names.js';
import type { HeaderMap } from './types.js';
import { addHeaderValue, firstHeaderValue } from './values.js';

const labeler = lazySchema(() => choice(
  'kind',
  {
    ip: z.strictObject({ kind: z.literal('ip') }),
    'ip:port': z.strictObject({ kind: z.literal('ip:port') }),
    connectionRandom: z.strictObject({ kind: z.literal('connectionRandom') }),
    requestRandom: z.strictObject({ kind: z.literal('requestRandom') }),
    router: z.strictObject({ kind: z.literal('router') }),
    static: z.strictObject({ kind: z.literal('static'), label: nonEmptyString }),
  },
  { default: 'requestRandom' },
));

/** A configured endpoint labeler. */
export type LabelerConfig = z.output<typeof labeler>;

/** The server key `addForwardedHeader`: `by` labels the proxy's address, `for` the client's. */
export const forwardedHeaderConfig = lazySchema(() => z.strictObject({ by: labeler, for: labeler }));

/** A validated `addForwardedHeader`. */
export type ForwardedHeaderConfig = z.output<typeof forwardedHeaderConfig>;

/** One side of a connection; `address` is absent for non-IP sockets. */
export interface SocketEndpoint {
  readonly address?: string | undefined;
  readonly port?: number | undefined;
}

const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** An obfuscated identifier (RFC 7239 §6.3): `_` and six random alphanumerics. */
export function randomObfuscatedLabel(random: () => number = Math.random): string {
  let s = '_';
  for (let i = 0; i < 6; i++) s += ALPHANUMERIC[Math.floor(random() * ALPHANUMERIC.length)] as string;
  return s;
}

/** The plain IPv4 form of an IPv4-mapped IPv6 address (as Java sees it), else the address. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && address.indexOf('.') > 0 ? address.slice(7) : address;
}

/** Java's `isAnyLocalAddress`: the wildcard `0.0.0.0` or `::`. */
function isAnyLocal(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '0:0:0:0:0:0:0:0';
}

/** `_label`, unless the label already starts with `_`. */
function obfuscatedStatic(label: string): string {
  return label.startsWith('_') ? label : `_${label}`;
}

/**
 * A label fixed for the connection, or undefined for `requestRandom` (drawn per request).
 * `routerLabel` serves the `router` labeler.
 */
function connectionLabel(cfg: LabelerConfig, end: SocketEndpoint, routerLabel: string, random: () => number): string | undefined {
  switch (cfg.kind) {
    case 'static':
      return obfuscatedStatic(cfg.label);
    case 'router':
      return obfuscatedStatic(routerLabel);
    case 'ip':
    case 'ip:port':
    case 'connectionRandom':
    case 'requestRandom': {
      if (end.address === undefined) return 'unknown';
      const ip = unmapped(end.address);
      if (isAnyLocal(ip)) return 'unknown';
      if (cfg.kind === 'requestRandom') return undefined;
      if (cfg.kind === 'connectionRandom') return randomObfuscatedLabel(random);
      const host = isIPv6(ip) ? `[${ip}]` : ip;
      return cfg.kind === 'ip' ? (isIPv6(ip) ? `"${host}"` : host) : `"${host}:${end.port ?? 0}"`;
    }
  }
}

// Java's URI scheme syntax; the rest of the URI must parse as well for the scheme to count.
const URI_SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/** The scheme of an absolute request URI (`http://a/b` → `http`), or undefined. */
export function uriScheme(uri: string): string | undefined {
  const m = URI_SCHEME.exec(uri);
  return m !== null && URL.canParse(uri) ? m[1] : undefined;
}

/** Options of {@link ForwardedHeader}. */
export interface ForwardedHeaderOptions {
  /** The router's label, for the `router` labeler. */
  readonly routerLabel: string;
  /** Random source in [0, 1) for obfuscated labels. */
  readonly random?: () => number;
}

/** The two ends of an accepted connection, as a socket reports them. */
export interface SocketEndpoints {
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** The `addForwardedHeader` of one server: hands out per-connection labelers. */
export class ForwardedHeader {
  readonly #config: ForwardedHeaderConfig;
  readonly #routerLabel: string;
  readonly #random: () => number;
  readonly #bySocket = new WeakMap<object, ForwardedConnection>();

  constructor(config: ForwardedHeaderConfig, opts: ForwardedHeaderOptions) {
    this.#config = config;
    this.#routerLabel = opts.routerLabel;
    this.#random = opts.random ?? Math.random;
  }

  /**
   * The labels of one accepted connection: `local` is the server's address (`by`), `remote` the
   * client's (`for`). Keep the result with the connection and call `add` for each request.
   */
  /** Adds this hop's `Forwarded` header to a request received on `socket` (labels made once per connection). */
  addTo(socket: SocketEndpoints, headers: HeaderMap, uri: string): void {
    let conn = this.#bySocket.get(socket);
    if (conn === undefined) {
      conn = this.forConnection({ address: socket.localAddress, port: socket.localPort }, { address: socket.remoteAddress, port: socket.remotePort });
      this.#bySocket.set(socket, conn);
    }
    conn.add(headers, uri);
  }

  forConnection(local: SocketEndpoint, remote: SocketEndpoint): ForwardedConnection {
    return new ForwardedConnection(
      connectionLabel(this.#config.by, local, this.#routerLabel, this.#random),
      connectionLabel(this.#config.for, remote, this.#routerLabel, this.#random),
      this.#random,
    );
  }
}

/** The `Forwarded` labels of one connection. */
export class ForwardedConnection {
  // undefined: a requestRandom label, drawn anew for every request.
  readonly #by: string | undefined;
  readonly #for: string | undefined;
  readonly #random: () => number;

  constructor(by: string | undefined, forLabel: string | undefined, random: () => number) {
    this.#by = by;
    this.#for = forLabel;
    this.#random = random;
  }

  /** The `Forwarded` value for one request with target `uri`. */
  value(headers: HeaderMap, uri: string): string {
    let v = `by=${this.#by ?? randomObfuscatedLabel(this.#random)};for=${this.#for ?? randomObfuscatedLabel(this.#random)}`;
    const host = firstHeaderValue(headers, HOST);
    if (host !== undefined) v += `;host=${host}`;
    // Cheap pre-check: only an absolute URI (not starting with `/`) can carry a scheme.
    if (uri.charCodeAt(0) !== 0x2f) {
      const proto = uriScheme(uri);
      if (proto !== undefined) v += `;proto=${proto}`;
    }
    return v;
  }

  /** Appends this hop's `Forwarded` header to a request with target `uri`. */
  add(headers: HeaderMap, uri: string): void {
    addHeaderValue(headers, FORWARDED, this.value(headers, uri));
  }
}
