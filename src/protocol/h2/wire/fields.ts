/**
 * Header fields between node:http2's header objects and HPACK's field lists: a request head
 * flattened for the encoder (pseudo-headers first, connection-specific fields dropped), and a
 * decoded response head checked as RFC 9113 §8.2–8.3 requires and shaped as node:http2 shapes it;
 * on the server side, a decoded request head and trailers checked the same way, and response trailers.
 */
import type { OutgoingHttpHeaders } from 'node:http2';
import type { H2Fields } from './client-stream.js';

/** Fields HTTP/2 forbids (RFC 9113 §8.2.2): they describe one HTTP/1.1 connection. */
const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** A field name HTTP/2 accepts: a lowercase token (RFC 9110 §5.1). */
const VALID_NAME = /^[a-z0-9!#$%&'*+\-.^_`|~]+$/;
/** A field value without NUL, CR or LF, and without leading or trailing whitespace (RFC 9113 §8.2.1). */
const INVALID_VALUE = /[\0\r\n]|^[ \t]|[ \t]$/;

/**
 * Fields of the call in progress, pseudo-headers and regular ones apart (reused; their length is
 * never cut, since cutting an array to 0 drops its backing store and the next call regrows it).
 */
const pseudoScratch: string[] = [];
const regularScratch: string[] = [];

/**
 * Node's header object as alternating names and values: pseudo-headers first, each array value a
 * field per item. One walk over the object: header objects have a null prototype, which V8 keeps
 * as a dictionary, and each `for…in` over one builds its key list anew. The result is allocated
 * once, at its size.
 */
export function requestFields(headers: OutgoingHttpHeaders): string[] {
  const pseudo = pseudoScratch;
  const regular = regularScratch;
  let p = 0;
  let r = 0;
  for (const name in headers) {
    const v = headers[name];
    if (v === undefined) continue;
    if (name.charCodeAt(0) === 58 /* : */) {
      pseudo[p++] = name;
      pseudo[p++] = String(v);
    } else if (!CONNECTION_SPECIFIC.has(name)) {
      if (Array.isArray(v)) {
        for (const item of v) {
          regular[r++] = name;
          regular[r++] = String(item);
        }
      } else {
        regular[r++] = name;
        regular[r++] = typeof v === 'string' ? v : String(v);
      }
    }
  }
  const out = new Array<string>(p + r);
  for (let i = 0; i < p; i++) {
    out[i] = pseudo[i] as string;
    pseudo[i] = '';
  }
  for (let i = 0; i < r; i++) {
    out[p + i] = regular[i] as string;
    regular[i] = '';
  }
  return out;
}

/** Appends the regular fields (no pseudo-headers, no connection-specific ones), an array as one field per item. */
function pushRegular(headers: OutgoingHttpHeaders, out: string[]): void {
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 || CONNECTION_SPECIFIC.has(name)) continue;
    const v = headers[name];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) out.push(name, String(item));
    else out.push(name, String(v));
  }
}

/** A decoded response head or trailers, or why it is malformed. */
export interface ParsedFields {
  readonly status: number;
  readonly fields: H2Fields;
}

/**
 * Checks and shapes a decoded field list. A head needs one valid `:status` first and no other
 * pseudo-header; trailers carry none. Returns a string naming the defect of a malformed one
 * (the stream is then reset with PROTOCOL_ERROR).
 */
export function responseFields(list: readonly string[], trailers: boolean): ParsedFields | string {
  const fields: H2Fields = Object.create(null) as H2Fields;
  let status = 0;
  let regular = false;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    if (name.charCodeAt(0) === 58) {
      if (trailers || regular || name !== ':status' || status !== 0) return `pseudo-header ${name} where it is not allowed`;
      if (value.length !== 3 || !/^[1-9][0-9][0-9]$/.test(value)) return `an invalid :status ${JSON.stringify(value)}`;
      status = Number(value);
      fields[':status'] = value;
      continue;
    }
    regular = true;
    if (!VALID_NAME.test(name)) return `an invalid field name ${JSON.stringify(name)}`;
    if (CONNECTION_SPECIFIC.has(name) || (name === 'te' && value !== 'trailers')) return `the connection-specific field ${name}`;
    if (INVALID_VALUE.test(value)) return `an invalid value of ${name}`;
    add(fields, name, value);
  }
  if (!trailers && status === 0) return 'a response without :status';
  return { status, fields };
}

/** Repeated fields as node:http2 gives them: set-cookie as an array, cookie joined by `; `, others by `, `. */
function add(fields: H2Fields, name: string, value: string): void {
  const prev = fields[name];
  if (prev === undefined) fields[name] = name === 'set-cookie' ? [value] : value;
  else if (Array.isArray(prev)) prev.push(value);
  else fields[name] = `${prev}${name === 'cookie' ? '; ' : ', '}${value}`;
}

/** Trailers from node's header object: pseudo-headers and connection-specific fields dropped, arrays a field per item. */
export function trailerFields(headers: OutgoingHttpHeaders): string[] {
  const out: string[] = [];
  pushRegular(headers, out);
  return out;
}

/** A method, a token (RFC 9110 §9.1). */
const TOKEN = /^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$/;

/**
 * Checks and shapes a decoded request head as RFC 9113 §8.3.1 requires: `:method`, and `:scheme`
 * with a non-empty `:path` except for CONNECT (which needs `:authority` and neither of the two);
 * no other pseudo-header (`:status`, `:protocol`...), each at most once and before every regular
 * field; regular fields as in {@link responseFields}. Returns node's header object, or a string
 * naming the defect (the stream is then reset with PROTOCOL_ERROR).
 */
export function requestHead(list: readonly string[]): H2Fields | string {
  const fields: H2Fields = Object.create(null) as H2Fields;
  let method: string | undefined;
  let scheme: string | undefined;
  let path: string | undefined;
  let authority = false;
  let regular = false;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    if (name.charCodeAt(0) === 58) {
      if (regular) return `pseudo-header ${name} after a regular field`;
      if (INVALID_VALUE.test(value)) return `an invalid value of ${name}`;
      switch (name) {
        case ':method':
          if (method !== undefined || !TOKEN.test(value)) return 'a repeated or invalid :method';
          method = value;
          break;
        case ':scheme':
          if (scheme !== undefined || value.length === 0) return 'a repeated or empty :scheme';
          scheme = value;
          break;
        case ':path':
          if (path !== undefined || value.length === 0) return 'a repeated or empty :path';
          path = value;
          break;
        case ':authority':
          if (authority) return 'a repeated :authority';
          authority = true;
          break;
        default:
          return `pseudo-header ${name} in a request`;
      }
      fields[name] = value;
      continue;
    }
    regular = true;
    const defect = fieldDefect(name, value);
    if (defect !== undefined) return defect;
    add(fields, name, value);
  }
  if (method === undefined) return 'a request without :method';
  if (method === 'CONNECT') {
    if (scheme !== undefined || path !== undefined || !authority) return 'a CONNECT request with :scheme or :path, or without :authority';
    return fields;
  }
  if (scheme === undefined || path === undefined) return 'a request without :scheme or :path';
  // http and https URIs: an origin-form path, or `*` for OPTIONS (RFC 9113 §8.3.1).
  if ((scheme === 'http' || scheme === 'https') && path.charCodeAt(0) !== 47 && !(path === '*' && method === 'OPTIONS')) return `an invalid :path ${JSON.stringify(path)}`;
  return fields;
}

/** Checks and shapes request trailers: regular fields only. */
export function requestTrailers(list: readonly string[]): H2Fields | string {
  const fields: H2Fields = Object.create(null) as H2Fields;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i] as string;
    const value = list[i + 1] as string;
    if (name.charCodeAt(0) === 58) return `pseudo-header ${name} in trailers`;
    const defect = fieldDefect(name, value);
    if (defect !== undefined) return defect;
    add(fields, name, value);
  }
  return fields;
}

/** What is wrong with a regular field, if anything. */
function fieldDefect(name: string, value: string): string | undefined {
  if (!VALID_NAME.test(name)) return `an invalid field name ${JSON.stringify(name)}`;
  if (CONNECTION_SPECIFIC.has(name) || (name === 'te' && value !== 'trailers')) return `the connection-specific field ${name}`;
  if (INVALID_VALUE.test(value)) return `an invalid value of ${name}`;
  return undefined;
}
