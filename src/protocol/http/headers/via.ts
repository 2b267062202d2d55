/**
 * `Via`: each prx hop appends itself to requests and responses (`1.1 prx`; `h2 prx` on the h2
 * router), and a request already carrying more than `maxCallDepth` entries is refused, which
 * breaks routing loops.
 */
import { HOST, VIA } from './names.js';
import { MaxCallDepthExceededError } from './proxy-errors.js';
import type { HeaderMap } from './types.js';
import { joinedHeaderValue } from './values.js';

/** Default `maxCallDepth` of a server. */
export const DEFAULT_MAX_CALL_DEPTH = 1000;

/** The h2 router's Via entry. */
export const VIA_H2 = 'h2 prx';

/** This hop's Via entry for an HTTP message of `httpVersion` (`1.1` → `1.1 prx`). */
export function viaEntry(httpVersion: string): string {
  switch (httpVersion) {
    case '1.1':
      return '1.1 prx';
    case '1.0':
      return '1.0 prx';
    default:
      return `${httpVersion} prx`;
  }
}

/**
 * Appends `entry` to `Via` with `, ` (or sets it when absent), replacing the header with the one
 * combined value. Repeated Via headers are folded first, as Node folds them on input.
 */
export function appendVia(headers: HeaderMap, entry: string): void {
  const current = joinedHeaderValue(headers, VIA);
  headers[VIA] = current === undefined ? entry : `${current}, ${entry}`;
}

/**
 * The request side of Linkerd's ViaHeaderAppender: appends this hop and gives a request without
 * `Host` an empty one (RFC 2616 §14.23: a request without a host in its URI sends `Host:` empty).
 */
export function appendViaToRequest(headers: HeaderMap, entry: string): void {
  appendVia(headers, entry);
  if (headers[HOST] === undefined) headers[HOST] = '';
}

/**
 * How many hops a Via value lists: its `,`-separated entries counted as Java's `split(",")`
 * counts them (trailing empty entries dropped; an empty value is one entry).
 */
export function countViaEntries(value: string): number {
  if (value === '') return 1;
  let end = value.length;
  while (end > 0 && value.charCodeAt(end - 1) === 0x2c) end--; // trailing commas make no entries
  if (end === 0) return 0;
  let n = 1;
  for (let i = 0; i < end; i++) if (value.charCodeAt(i) === 0x2c) n++;
  return n;
}

/** Throws {@link MaxCallDepthExceededError} (a 400) when the request's Via lists more than `maxCallDepth` hops. */
export function checkCallDepth(headers: HeaderMap, maxCallDepth: number = DEFAULT_MAX_CALL_DEPTH): void {
  const via = joinedHeaderValue(headers, VIA);
  if (via !== undefined && countViaEntries(via) > maxCallDepth) throw new MaxCallDepthExceededError(maxCallDepth);
}
