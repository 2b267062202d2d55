/**
 * Header fields between node:http2's header objects and HPACK's field lists: a request head
 * flattened for the encoder (pseudo-headers first, connection-specific fields dropped), and a
 * decoded response head checked as RFC 9113 §8.2–8.3 requires and shaped as node:http2 shapes it.
 */
import type { OutgoingHttpHeaders } from 'node:http2';
import type { H2Fields } from './client-stream.js';

/** Fields HTTP/2 forbids (RFC 9113 §8.2.2): they describe one HTTP/1.1 connection. */
const CONNECTION_SPECIFIC: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** A field name HTTP/2 accepts: a lowercase token (RFC 9110 §5.1). */
const VALID_NAME = /^[a-z0-9!#$%&'*+\-.^_`|~]+$/;
/** A field value without NUL, CR or LF, and without leading or trailing whitespace (RFC 9113 §8.2.1). */
const INVALID_VALUE = /[\0\r\n]|^[ \t]|[ \t]$/;

/** Node's header object as alternating names and values: pseudo-headers first, each array value a field per item. */
export function requestFields(headers: OutgoingHttpHeaders): string[] {
  const out: string[] = [];
  for (const name in headers) {
    if (name.charCodeAt(0) !== 58 /* : */) continue;
    const v = headers[name];
    if (v !== undefined) out.push(name, String(v));
  }
  for (const name in headers) {
    if (name.charCodeAt(0) === 58 || CONNECTION_SPECIFIC.has(name)) continue;
    const v = headers[name];
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) out.push(name, String(item));
    else out.push(name, String(v));
  }
  return out;
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
