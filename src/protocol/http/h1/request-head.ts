/**
 * Parsing of an inbound HTTP/1.1 request head for the router's own server (server.ts): the
 * request line, the header fields into Node's `IncomingHttpHeaders` shape, and the framing and
 * connection facts the server acts on. Strict where leniency lets a request be read two ways
 * (request smuggling): conflicting lengths, length with chunked, obsolete line folding, bare CR or
 * LF, whitespace before a colon are all refused.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { PrxError } from '../../../core/errors.js';
import { CONTROL, TOKEN, trimOws } from './wire.js';
import { bareLineBreak } from './framing.js';
import { isManagedHeaderName } from '../headers/names.js';

/**
 * A request the server refuses before it is routed (its head, or a body that stopped coming);
 * `status` is what the client is answered with, and the connection then closes.
 */
export class RefusedRequestError extends PrxError {
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(code, message);
    this.status = status;
  }
}

/** A request head the server refuses. */
export class RequestHeadError extends RefusedRequestError {}

export class MalformedRequestError extends RequestHeadError {
  constructor(detail: string) {
    super('PRX_ERR_MALFORMED_REQUEST', 400, `malformed request: ${detail}`);
  }
}

/**
 * A request target in none of the forms a proxy serves (RFC 9112 §3.2): origin-form `/…`,
 * absolute-form `http(s)://authority…`, `*` for OPTIONS, authority-form `host:port` for CONNECT.
 * Refused by prx itself, so a backend is never sent (and never blamed for) such a request.
 */
export class InvalidRequestTargetError extends RequestHeadError {
  constructor(method: string, target: string) {
    const shown = target.length > 64 ? `${target.slice(0, 64)}…` : target;
    super('PRX_ERR_INVALID_REQUEST_TARGET', 400, `invalid request target for ${method}: ${JSON.stringify(shown)} (expected /path, http://host/path${method === 'OPTIONS' ? ' or *' : ''}${method === 'CONNECT' ? ' or host:port' : ''})`);
  }
}

/**
 * A header name with `_` that reads, with `_` as `-`, as a header prx manages (`prx-*`, `l5d-*`,
 * `Via`, `Forwarded`, `X-Forwarded-*`): a backend that maps both to one name (CGI's `HTTP_*`
 * variables) would take the client's value for prx's.
 */
export class ShadowedHeaderNameError extends RequestHeadError {
  constructor(name: string) {
    super('PRX_ERR_SHADOWED_HEADER_NAME', 400, `header ${JSON.stringify(name)} reads as ${JSON.stringify(name.replaceAll('_', '-').toLowerCase())}, a header prx manages, to a backend that maps _ to -`);
  }
}

export class InitialLineTooLongError extends RequestHeadError {
  constructor(size: number, limit: number) {
    super('PRX_ERR_INITIAL_LINE_TOO_LONG', 414, `request line of ${size} bytes exceeds maxInitialLineKB (${limit} bytes)`);
  }
}

export class HeadersTooLargeError extends RequestHeadError {
  constructor(size: number, limit: number) {
    super('PRX_ERR_HEADERS_TOO_LARGE', 431, `request headers of ${size} bytes exceed maxHeadersKB (${limit} bytes)`);
  }
}

export class VersionNotSupportedError extends RequestHeadError {
  constructor(version: string) {
    super('PRX_ERR_HTTP_VERSION', 505, `HTTP version ${version} is not supported`);
  }
}

export class HeadersTimeoutError extends RequestHeadError {
  constructor(ms: number) {
    super('PRX_ERR_HEADERS_TIMEOUT', 408, `request head not received within ${ms} ms`);
  }
}

export class ExpectationFailedError extends RequestHeadError {
  constructor(value: string) {
    super('PRX_ERR_EXPECTATION_FAILED', 417, `unsupported expectation: ${value}`);
  }
}

/** The size limits a head is held to (the router's maxInitialLineKB and maxHeadersKB). */
export interface HeadLimits {
  readonly maxInitialLineBytes: number;
  readonly maxHeaderBytes: number;
}

/** A parsed request head. `contentLength` is -1 without a Content-Length. */
export interface RequestHead {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: string;
  readonly headers: IncomingHttpHeaders;
  readonly contentLength: number;
  readonly chunked: boolean;
  readonly keepAlive: boolean;
  /** `Connection: upgrade` with an `Upgrade` header: the connection is handed over if the answer is a 101. */
  readonly upgrade: boolean;
  readonly expectContinue: boolean;
}

// Repeats of these are dropped, the first value kept (as Node's IncomingMessage does).
const SINGLE_VALUED = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since',
  'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after',
  'server', 'user-agent',
]);
// Context headers whose repeats must stay apart: two deadlines or two dtabs joined by ", " would be one malformed value.
const KEPT_APART = new Set(['set-cookie', 'prx-ctx-deadline', 'prx-ctx-dtab', 'prx-dtab']);
const DIGITS = /^\d+$/;
const VERSION = /^HTTP\/\d\.\d$/;

/**
 * Checks a head still arriving (no blank line yet, `size` bytes so far) against the limits:
 * a request line or header block that can no longer fit is refused before it is complete.
 */
export function checkPartialHead(buf: Buffer, start: number, limits: HeadLimits): void {
  // Without its blank line yet, a head whose lines end in a bare LF (or CR) would wait for a CRLF CRLF that never comes.
  if (bareLineBreak(buf, start, buf.length) >= 0) throw new MalformedRequestError('bare LF or CR in the request head');
  const size = buf.length - start;
  const eol = buf.indexOf(0x0a, start);
  if (eol < 0) {
    // A CR last may begin the line's CRLF, which the limit does not count.
    const line = buf[buf.length - 1] === 0x0d ? size - 1 : size;
    if (line > limits.maxInitialLineBytes) throw new InitialLineTooLongError(line, limits.maxInitialLineBytes);
    return;
  }
  if (eol - start > limits.maxInitialLineBytes + 1) throw new InitialLineTooLongError(eol - start - 1, limits.maxInitialLineBytes);
  const headerBytes = buf.length - eol - 1;
  if (headerBytes > limits.maxHeaderBytes) throw new HeadersTooLargeError(headerBytes, limits.maxHeaderBytes);
}

/** Parses `text`: a whole request head without its final CRLF CRLF. */
export function parseRequestHead(text: string, limits: HeadLimits): RequestHead {
  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = text.length;
  if (eol > limits.maxInitialLineBytes) throw new InitialLineTooLongError(eol, limits.maxInitialLineBytes);
  const headerBytes = text.length - eol;
  if (headerBytes > limits.maxHeaderBytes) throw new HeadersTooLargeError(headerBytes, limits.maxHeaderBytes);
  const sp1 = text.indexOf(' ');
  const sp2 = sp1 < 0 ? -1 : text.indexOf(' ', sp1 + 1);
  if (sp1 <= 0 || sp2 < 0 || sp2 >= eol) throw new MalformedRequestError('invalid request line');
  const method = text.slice(0, sp1);
  if (!TOKEN.test(method)) throw new MalformedRequestError('invalid method');
  const url = text.slice(sp1 + 1, sp2);
  if (url.length === 0 || !validTarget(url)) throw new MalformedRequestError('invalid request target');
  checkTargetForm(method, url);
  let httpVersion: string;
  if (eol - sp2 === 9 && text.startsWith('HTTP/1.1', sp2 + 1)) httpVersion = '1.1';
  else if (eol - sp2 === 9 && text.startsWith('HTTP/1.0', sp2 + 1)) httpVersion = '1.0';
  else {
    const v = text.slice(sp2 + 1, eol);
    if (!VERSION.test(v)) throw new MalformedRequestError('invalid HTTP version');
    // A later 1.x minor is read as the highest this server speaks (RFC 9112 §2.5); another major is refused.
    if (!v.startsWith('HTTP/1.')) throw new VersionNotSupportedError(v.slice(5));
    httpVersion = '1.1';
  }

  const headers: IncomingHttpHeaders = {};
  const h = headers as Record<string, string | string[]>;
  let contentLength = -1;
  let transferEncoding: string | undefined;
  let connection: string | undefined;
  let pos = eol + 2;
  while (pos < text.length) {
    let end = text.indexOf('\r\n', pos);
    if (end < 0) end = text.length;
    const first = text.charCodeAt(pos);
    if (first === 0x20 || first === 0x09) throw new MalformedRequestError('obsolete line folding');
    const colon = text.indexOf(':', pos);
    if (colon <= pos || colon > end) throw new MalformedRequestError('invalid header line');
    const rawName = text.slice(pos, colon);
    if (!TOKEN.test(rawName)) throw new MalformedRequestError(`invalid header name ${JSON.stringify(rawName)}`);
    const name = rawName.toLowerCase();
    if (name.indexOf('_') >= 0 && isManagedHeaderName(name.replaceAll('_', '-'))) throw new ShadowedHeaderNameError(rawName);
    const value = trimOws(text, colon + 1, end);
    if (CONTROL.test(value) || value.includes('\r')) throw new MalformedRequestError(`invalid character in header ${name}`);
    pos = end + 2;
    switch (name) {
      case 'content-length': {
        if (!DIGITS.test(value)) throw new MalformedRequestError('invalid content-length');
        const n = Number(value);
        if (contentLength >= 0 && n !== contentLength) throw new MalformedRequestError('conflicting content-length');
        contentLength = n;
        break;
      }
      case 'transfer-encoding':
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding}, ${value}`;
        break;
      case 'connection':
        connection = connection === undefined ? value : `${connection}, ${value}`;
        break;
      case 'host':
        // Two hosts could route one way and be served another (RFC 9112 §3.2: a 400).
        if (h['host'] !== undefined) throw new MalformedRequestError('more than one host header');
        break;
    }
    // A name like `constructor` finds the prototype's function: that is no earlier value.
    const prev = h[name] as unknown;
    if (typeof prev === 'string' || Array.isArray(prev)) addRepeat(h, name, prev as string | string[], value);
    else h[name] = name === 'set-cookie' ? [value] : value;
  }

  let chunked = false;
  if (transferEncoding !== undefined) {
    if (contentLength >= 0) throw new MalformedRequestError('both content-length and transfer-encoding');
    // The final coding must be chunked, or the body's end could not be found (RFC 9112 §6.3).
    if (!/(?:^|,)[ \t]*chunked[ \t]*$/i.test(transferEncoding)) throw new MalformedRequestError('transfer-encoding without final chunked');
    chunked = true;
  }
  let keepAlive = httpVersion === '1.1';
  let upgrade = false;
  if (connection !== undefined) {
    const tokens = connection.toLowerCase();
    if (hasToken(tokens, 'close')) keepAlive = false;
    else if (httpVersion === '1.0' && hasToken(tokens, 'keep-alive')) keepAlive = true;
    upgrade = h['upgrade'] !== undefined && hasToken(tokens, 'upgrade');
  }
  const expect = h['expect'];
  let expectContinue = false;
  if (typeof expect === 'string') {
    if (expect.toLowerCase() !== '100-continue') throw new ExpectationFailedError(expect);
    expectContinue = httpVersion === '1.1';
  }
  return { method, url, httpVersion, headers, contentLength, chunked, keepAlive, upgrade, expectContinue };
}

function addRepeat(h: Record<string, string | string[]>, name: string, prev: string | string[], value: string): void {
  if (SINGLE_VALUED.has(name)) return;
  if (KEPT_APART.has(name)) h[name] = typeof prev === 'string' ? [prev, value] : [...prev, value];
  else if (name === 'cookie') h[name] = `${prev as string}; ${value}`;
  else h[name] = `${prev as string}, ${value}`;
}

function hasToken(list: string, token: string): boolean {
  for (const part of list.split(',')) if (part.trim() === token) return true;
  return false;
}

// Absolute-form: an http(s) scheme and a non-empty authority (the rest is checked by URL parsing).
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]/i;
// Authority-form (CONNECT only): host or [IPv6] and a port.
const AUTHORITY_FORM = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~%!$&'()*+,;=]+):\d{1,5}$/;

/** Throws {@link InvalidRequestTargetError} unless `url` is in a form `method` may use. */
function checkTargetForm(method: string, url: string): void {
  if (method === 'CONNECT') {
    if (!AUTHORITY_FORM.test(url)) throw new InvalidRequestTargetError(method, url);
    return;
  }
  if (url.charCodeAt(0) === 0x2f) return; // origin-form: the common case, decided on one character
  if (url === '*' ? method === 'OPTIONS' : ABSOLUTE_FORM.test(url) && URL.canParse(url)) return;
  throw new InvalidRequestTargetError(method, url);
}

/** A request target holds no spaces or control characters. */
function validTarget(url: string): boolean {
  for (let i = 0; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return false;
  }
  return true;
}
