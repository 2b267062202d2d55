import { CONNECTION, UPGRADE, VIA } from './names.js';
import type { HeaderMap, HeaderValue } from './types.js';

/**
 * Headers meaningful for one connection only (RFC 7230 §6.1 and RFC 2616 §13.5.1), which a proxy
 * must not forward. `connection` itself is handled apart, since it also names further headers.
 */
export const HOP_BY_HOP_HEADERS: readonly string[] = Object.freeze([
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  UPGRADE,
]);

/** Options of {@link stripHopByHopHeaders}. */
export interface StripHopByHopOptions {
  /**
   * Keep `Upgrade` and `Connection` (an upgrade request such as a WebSocket handshake is forwarded
   * as one). Other headers named in `Connection` are still removed.
   */
  readonly keepUpgrade?: boolean;
}

/**
 * Removes the hop-by-hop headers and every header named in `Connection` (comma-separated,
 * case-insensitive), in place, as Linkerd's StripHopByHopHeadersFilter does for requests and
 * responses alike.
 */
export function stripHopByHopHeaders(headers: HeaderMap, opts?: StripHopByHopOptions): void {
  const keepUpgrade = opts?.keepUpgrade === true;
  const connection = headers[CONNECTION];
  if (connection !== undefined) {
    if (typeof connection === 'string') removeListed(headers, connection, keepUpgrade);
    else for (const value of connection) removeListed(headers, value, keepUpgrade);
    if (!keepUpgrade) delete headers[CONNECTION];
  }
  for (const name of HOP_BY_HOP_HEADERS) {
    if (keepUpgrade && name === UPGRADE) continue;
    if (headers[name] !== undefined) delete headers[name];
  }
}

/** Removes the headers a `Connection` value lists (`close` and `keep-alive` simply match nothing). */
function removeListed(headers: HeaderMap, value: string, keepUpgrade: boolean): void {
  let start = 0;
  while (start <= value.length) {
    let end = value.indexOf(',', start);
    if (end < 0) end = value.length;
    const name = value.slice(start, end).trim().toLowerCase();
    if (name !== '' && !(keepUpgrade && (name === UPGRADE || name === CONNECTION)) && headers[name] !== undefined) {
      delete headers[name];
    }
    start = end + 1;
  }
}

/**
 * Whether `connection` names only tokens that need no header removed beyond the fixed
 * hop-by-hop set (`keep-alive`, `close`, `upgrade`): the common case, which
 * {@link forwardedHeaderList} handles without touching the map.
 */
function connectionIsPlain(connection: HeaderValue | undefined): boolean {
  if (connection === undefined) return true;
  if (typeof connection !== 'string') return false;
  switch (connection.length) {
    case 5:
      return connection === 'close' || connection.toLowerCase() === 'close';
    case 7:
      return connection === 'upgrade' || connection.toLowerCase() === 'upgrade';
    case 10:
      return connection === 'keep-alive' || connection.toLowerCase() === 'keep-alive';
    default:
      return false;
  }
}

/**
 * The headers of `headers` a proxy forwards, as the flat `[name, value, name, value, …]` list
 * Node's `writeHead` takes, with `via` (when given) appended to `Via`: what
 * {@link stripHopByHopHeaders} then `appendVia` leave, built without `delete` (which would turn the
 * map into a slow dictionary). Undefined when `Connection` lists further headers: the caller then
 * strips in place.
 */
export function forwardedHeaderList(headers: HeaderMap, keepUpgrade: boolean, via: string | undefined): HeaderValue[] | undefined {
  if (!connectionIsPlain(headers[CONNECTION])) return undefined;
  const out: HeaderValue[] = [];
  let sawVia = false;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    switch (name) {
      case CONNECTION:
      case UPGRADE:
        if (!keepUpgrade) continue;
        break;
      case 'keep-alive':
      case 'proxy-authenticate':
      case 'proxy-authorization':
      case 'te':
      case 'trailer':
      case 'transfer-encoding':
        continue;
      case VIA:
        if (via !== undefined) {
          sawVia = true;
          out.push(name, `${typeof value === 'string' ? value : value.join(', ')}, ${via}`);
          continue;
        }
        break;
    }
    out.push(name, value);
  }
  if (via !== undefined && !sawVia) out.push(VIA, via);
  return out;
}
