/**
 * `Via`: each prx hop appends itself to requests and responses (`1.1 prx (<token>)`; `h2 prx` on
 * the h2 router), and a request already carrying more than `maxCallDepth` entries is refused, which
 * breaks routing loops through other proxies. The token (a random comment made once per router)
 * lets a router see its own entry on a request that comes back to it: a loop through this very
 * router is refused on its first revisit instead of after `maxCallDepth` hops.
 */
import { HOST, VIA } from './names.js';
import { MaxCallDepthExceededError } from './proxy-errors.js';
import type { HeaderMap } from './types.js';
import { joinedHeaderValue } from './values.js';

/** Default `maxCallDepth` of a server. */
export const DEFAULT_MAX_CALL_DEPTH = 1000;

/** The h2 router's Via entry. */
export const VIA_H2 = 'h2 prx';

/**
 * A fresh loop token: 12 lower-case hex digits (48 random bits; a tchar sequence, valid in a
 * comment). It only has to tell routers apart, not resist guessing, so Math.random serves and
 * plain HTTP start-up keeps node:crypto unloaded.
 */
export function newViaToken(): string {
  const hi = Math.floor(Math.random() * 0x1000000);
  const lo = Math.floor(Math.random() * 0x1000000);
  return hi.toString(16).padStart(6, '0') + lo.toString(16).padStart(6, '0');
}

/**
 * One router's Via identity: the entry it appends, `<version> prx (<token>)` (RFC 9110 §7.6.3: a
 * received-by pseudonym and a comment), and the recognition of that entry on an inbound request.
 * Entries are made once, so the request path allocates nothing for them.
 */
export class ViaStamp {
  readonly token: string;
  /** The comment as it appears in an entry, `(<token>)`: what {@link seenIn} looks for. */
  readonly #mark: string;
  readonly #entry11: string;
  readonly #entry10: string;

  constructor(token: string = newViaToken()) {
    this.token = token;
    this.#mark = `(${token})`;
    this.#entry11 = `1.1 prx ${this.#mark}`;
    this.#entry10 = `1.0 prx ${this.#mark}`;
  }

  /** This hop's entry for a message of `httpVersion`. */
  entry(httpVersion: string): string {
    if (httpVersion === '1.1') return this.#entry11;
    if (httpVersion === '1.0') return this.#entry10;
    return `${httpVersion} prx ${this.#mark}`;
  }

  /** Whether a Via value already lists this hop (the request has been here before). */
  seenIn(via: string): boolean {
    return via.includes(this.#mark);
  }

  /** Whether the message's Via header (one value or several) already lists this hop. */
  seenInHeaders(headers: HeaderMap): boolean {
    const via = headers[VIA];
    if (via === undefined) return false;
    if (typeof via === 'string') return this.seenIn(via);
    return via.some((v) => this.seenIn(v));
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
