/**
 * HTTP/1.1 `Upgrade: h2c` (RFC 7540 §3.2) for the plaintext h2 listener (plaintext-listener.ts):
 * which HTTP/1.1 requests may be upgraded, and the HTTP/2 frames that carry the upgraded request
 * as stream 1. Node's http2 cannot adopt an upgraded request, so the listener splices these frames
 * into the client's byte stream right after its connection preface and first SETTINGS frame, and
 * the h2 server sees an ordinary stream 1.
 */
import { STATUS_CODES } from 'node:http';
import { PrxError } from '../../core/errors.js';
import type { RequestHead } from '../http/h1/request-head.js';

/** The HTTP/2 client connection preface (RFC 9113 §3.4). */
export const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** The answer that switches the connection to h2c. */
export const SWITCHING_PROTOCOLS = Buffer.from('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n', 'latin1');

/** The frame size every peer accepts before its SETTINGS are known (SETTINGS_MAX_FRAME_SIZE's default). */
const DEFAULT_MAX_FRAME = 16384;
/**
 * The flow-control window a peer has before any WINDOW_UPDATE (RFC 9113 §6.9.2): the upgraded
 * request's body is sent as DATA before the server's SETTINGS are acknowledged, so it must fit.
 * Those DATA bytes count against the connection window on the server's side only, and the server
 * credits them back, so the client believes in up to that many more bytes of window than the
 * server grants. Node's http2 credits the connection window as data arrives (every half window,
 * whether or not the streams are read), so the server's unacknowledged bytes stay far below the
 * window and the difference is never reached (checked: 64 KiB sent along, then 128 KiB pushed at
 * paused streams, no FLOW_CONTROL_ERROR).
 */
export const INITIAL_WINDOW = 65535;
const FRAME_HEADER = 9;
const TYPE_DATA = 0x0;
const TYPE_HEADERS = 0x1;
const TYPE_SETTINGS = 0x4;
const TYPE_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;

/** The message prx answers HTTP/1.1 with, and the start of the reason a broken upgrade was refused. */
export const SPEAKS_H2 = 'this router speaks HTTP/2: use prior knowledge or Upgrade: h2c';

/** An HTTP/1.1 request the plaintext h2 listener answers itself (over HTTP/1.1, then closes). */
export class PlaintextH1RefusalError extends PrxError {
  readonly status: number;
  constructor(code: string, status: number, message: string) {
    super(code, message);
    this.status = status;
  }
}

/** A plain HTTP/1.1 request (no `Upgrade: h2c`) sent to an h2 server. */
export class Http1OnH2ServerError extends PlaintextH1RefusalError {
  constructor() {
    super('PRX_ERR_H2_HTTP1_REQUEST', 505, SPEAKS_H2);
  }
}

/** An `Upgrade: h2c` request RFC 7540 §3.2 does not allow upgrading (the reason says why). */
export class InvalidH2cUpgradeError extends PlaintextH1RefusalError {
  constructor(reason: string) {
    super('PRX_ERR_H2C_UPGRADE_INVALID', 505, `${SPEAKS_H2} (${reason})`);
  }
}

/** An upgrade request whose body is chunked: it cannot be checked against the limit before the switch. */
export class ChunkedH2cUpgradeError extends PlaintextH1RefusalError {
  constructor() {
    super('PRX_ERR_H2C_UPGRADE_CHUNKED', 400, 'an h2c upgrade request must send its body with Content-Length, not chunked (or use prior knowledge)');
  }
}

/** An upgrade request whose body exceeds what may ride along with the upgrade. */
export class H2cUpgradeBodyTooLargeError extends PlaintextH1RefusalError {
  constructor(size: number, limit: number) {
    super('PRX_ERR_H2C_UPGRADE_BODY_TOO_LARGE', 413, `an h2c upgrade request body of ${size} bytes exceeds ${limit} bytes (send it on a stream after the upgrade, or use prior knowledge)`);
  }
}

/** An HTTP/1.1 head longer than the listener's maxHeadBytes. */
export class PlaintextHeadTooLargeError extends PlaintextH1RefusalError {
  constructor(limit: number) {
    super('PRX_ERR_H2C_HEAD_TOO_LARGE', 431, `an HTTP/1.1 request head longer than ${limit} bytes`);
  }
}

/** Bytes that are neither the HTTP/2 preface nor an HTTP/1.1 request. */
export class NotHttpError extends PlaintextH1RefusalError {
  constructor(detail: string) {
    super('PRX_ERR_H2C_NOT_HTTP', 400, `neither the HTTP/2 preface nor an HTTP/1.1 request: ${detail}`);
  }
}

/** An HTTP/1.1 request head that stopped arriving. */
export class PlaintextHeadTimeoutError extends PlaintextH1RefusalError {
  constructor(ms: number) {
    super('PRX_ERR_H2C_HEAD_TIMEOUT', 408, `request head not received within ${ms} ms`);
  }
}

// Connection-specific headers (RFC 9113 §8.2.2), `host` (it becomes :authority) and those the upgrade consumes.
const DROPPED = new Set(['connection', 'upgrade', 'http2-settings', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'host', 'te', 'expect']);
const BASE64URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** What of the request the listener needs once it is known to be a valid upgrade. */
export interface H2cUpgrade {
  /** The request's header block as stream 1 would carry it, HPACK-encoded. */
  readonly headerBlock: Buffer;
  /** The body's length (Content-Length; 0 without one). */
  readonly bodyLength: number;
}

/**
 * Decides whether `head` is an h2c upgrade prx performs: returns it, or throws the
 * {@link PlaintextH1RefusalError} to answer over HTTP/1.1. `maxBodyBytes` caps the body sent along.
 */
export function checkH2cUpgrade(head: RequestHead, maxBodyBytes: number): H2cUpgrade {
  const h = head.headers as Record<string, string | string[] | undefined>;
  const upgrade = h['upgrade'];
  if (!head.upgrade || typeof upgrade !== 'string' || !hasToken(upgrade, 'h2c')) throw new Http1OnH2ServerError();
  if (head.httpVersion !== '1.1') throw new InvalidH2cUpgradeError(`h2c needs HTTP/1.1, not HTTP/${head.httpVersion}`);
  if (!hasToken(String(h['connection']), 'http2-settings')) throw new InvalidH2cUpgradeError('Connection must list HTTP2-Settings');
  checkSettingsHeader(h['http2-settings']);
  if (head.method === 'CONNECT') throw new InvalidH2cUpgradeError('CONNECT cannot be upgraded');
  if (head.chunked) throw new ChunkedH2cUpgradeError();
  const bodyLength = head.contentLength < 0 ? 0 : head.contentLength;
  const limit = Math.min(maxBodyBytes, INITIAL_WINDOW);
  if (bodyLength > limit) throw new H2cUpgradeBodyTooLargeError(bodyLength, limit);
  return { headerBlock: encodeHeaderBlock(requestFields(head)), bodyLength };
}

/** Throws unless `value` is one HTTP2-Settings header holding a valid base64url SETTINGS payload. */
function checkSettingsHeader(value: string | string[] | undefined): void {
  if (value === undefined) throw new InvalidH2cUpgradeError('no HTTP2-Settings header');
  // The head parser joins repeats with ", ", which base64url never holds.
  if (typeof value !== 'string' || value.includes(',')) throw new InvalidH2cUpgradeError('more than one HTTP2-Settings header');
  if (!BASE64URL.test(value) || value.length % 4 === 1) throw new InvalidH2cUpgradeError('HTTP2-Settings is not base64url');
  const payload = Buffer.from(value, 'base64url');
  if (payload.length % 6 !== 0) throw new InvalidH2cUpgradeError(`HTTP2-Settings holds ${payload.length} bytes, not a whole number of settings`);
  for (let i = 0; i < payload.length; i += 6) {
    const id = payload.readUInt16BE(i);
    const v = payload.readUInt32BE(i + 2);
    if (id === 0x2 && v > 1) throw new InvalidH2cUpgradeError(`HTTP2-Settings: ENABLE_PUSH ${v}`);
    if (id === 0x4 && v > 0x7fffffff) throw new InvalidH2cUpgradeError(`HTTP2-Settings: INITIAL_WINDOW_SIZE ${v}`);
    if (id === 0x5 && (v < DEFAULT_MAX_FRAME || v > 0xffffff)) throw new InvalidH2cUpgradeError(`HTTP2-Settings: MAX_FRAME_SIZE ${v}`);
  }
}

/** The request as HTTP/2 fields: pseudo-headers first, then the end-to-end headers, lower-cased. */
function requestFields(head: RequestHead): [string, string][] {
  const h = head.headers as Record<string, string | string[] | undefined>;
  let scheme = 'http';
  let authority = typeof h['host'] === 'string' ? h['host'] : undefined;
  let path = head.url;
  if (path.charCodeAt(0) !== 0x2f && path !== '*') {
    // Absolute-form: its authority wins over Host (RFC 9112 §3.2.2).
    const url = new URL(path);
    scheme = url.protocol.slice(0, -1);
    authority = url.host;
    path = `${url.pathname}${url.search}`;
  }
  if (authority === undefined || authority === '') throw new InvalidH2cUpgradeError('no Host header');
  const fields: [string, string][] = [[':method', head.method], [':scheme', scheme], [':authority', authority], [':path', path]];
  const connection = typeof h['connection'] === 'string' ? h['connection'].toLowerCase() : '';
  for (const name of Object.keys(h)) {
    const value = h[name];
    if (value === undefined || DROPPED.has(name) || hasToken(connection, name)) continue;
    if (typeof value === 'string') fields.push([name, value]);
    else for (const v of value) fields.push([name, v]);
  }
  // `te` is hop-by-hop in HTTP/1.1; HTTP/2 allows only `te: trailers` (RFC 9113 §8.2.2), which gRPC needs.
  const te = h['te'];
  if (typeof te === 'string' && hasToken(te.toLowerCase(), 'trailers')) fields.push(['te', 'trailers']);
  return fields;
}

/**
 * HPACK (RFC 7541 §6.2.3): every field a literal never indexed with a literal name, no Huffman, so
 * the server's dynamic table is left exactly as the client's encoder believes it is.
 */
export function encodeHeaderBlock(fields: readonly (readonly [string, string])[]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    const n = Buffer.from(name, 'latin1');
    const v = Buffer.from(value, 'latin1');
    parts.push(Buffer.from([0x10]), hpackLength(n.length), n, hpackLength(v.length), v);
  }
  return Buffer.concat(parts);
}

/** An HPACK string length: a 7-bit prefix integer, Huffman bit clear (RFC 7541 §5.1). */
function hpackLength(n: number): Buffer {
  if (n < 127) return Buffer.from([n]);
  const bytes = [127];
  let rest = n - 127;
  while (rest >= 128) {
    bytes.push((rest % 128) + 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

/** Stream 1 of the upgraded connection: HEADERS (+ CONTINUATION), then DATA carrying `body`. */
export function stream1Frames(headerBlock: Buffer, body: Buffer): Buffer {
  const frames: Buffer[] = [];
  const noBody = body.length === 0;
  for (let off = 0; off === 0 || off < headerBlock.length; off += DEFAULT_MAX_FRAME) {
    const end = Math.min(off + DEFAULT_MAX_FRAME, headerBlock.length);
    const last = end === headerBlock.length;
    const type = off === 0 ? TYPE_HEADERS : TYPE_CONTINUATION;
    // END_STREAM belongs on the HEADERS frame even when CONTINUATION frames follow (RFC 9113 §8.1).
    const flags = (last ? FLAG_END_HEADERS : 0) | (off === 0 && noBody ? FLAG_END_STREAM : 0);
    frames.push(frameHeader(end - off, type, flags, 1), headerBlock.subarray(off, end));
  }
  for (let off = 0; off < body.length; off += DEFAULT_MAX_FRAME) {
    const end = Math.min(off + DEFAULT_MAX_FRAME, body.length);
    frames.push(frameHeader(end - off, TYPE_DATA, end === body.length ? FLAG_END_STREAM : 0, 1), body.subarray(off, end));
  }
  return Buffer.concat(frames);
}

function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const b = Buffer.allocUnsafe(FRAME_HEADER);
  b.writeUIntBE(length, 0, 3);
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(streamId, 5);
  return b;
}

/**
 * How many bytes of `buf` (the client's first bytes after the 101) make up its connection preface
 * and first SETTINGS frame: 0 while more are needed, -1 when they are not that (the h2 server is
 * then left to refuse them).
 */
export function prefaceAndSettingsLength(buf: Buffer): number {
  const n = Math.min(buf.length, H2_PREFACE.length);
  if (buf.compare(H2_PREFACE, 0, n, 0, n) !== 0) return -1;
  const start = H2_PREFACE.length;
  if (buf.length < start + FRAME_HEADER) return 0;
  const length = buf.readUIntBE(start, 3);
  const isSettings = buf[start + 3] === TYPE_SETTINGS && (buf[start + 4]! & FLAG_ACK) === 0 && buf.readUInt32BE(start + 5) === 0;
  if (!isSettings || length % 6 !== 0 || length > DEFAULT_MAX_FRAME) return -1;
  const total = start + FRAME_HEADER + length;
  return buf.length < total ? 0 : total;
}

/** Whether the comma-separated `list` holds `token` (case-insensitive, as Connection and Upgrade are). */
function hasToken(list: string, token: string): boolean {
  for (const part of list.split(',')) if (part.trim().toLowerCase() === token) return true;
  return false;
}

// RFC 9110 tchar.
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~") TCHAR[c.charCodeAt(0)] = 1;
for (let c = 0x30; c <= 0x39; c++) TCHAR[c] = 1;
for (let c = 0x41; c <= 0x5a; c++) TCHAR[c] = 1;
for (let c = 0x61; c <= 0x7a; c++) TCHAR[c] = 1;

/** Whether byte `c` may appear in an HTTP token (a method, a header name). */
export function isTokenByte(c: number): boolean {
  return c < 128 && TCHAR[c] === 1;
}

/** The HTTP/1.1 answer to a refused request: text body, `prx-err`, and the connection closes. */
export function refusalResponse(err: PlaintextH1RefusalError): Buffer {
  const body = `${err.message}\n`;
  // A header value keeps to visible ASCII; the body has the message as it is.
  const header = err.message.replace(/[^\x20-\x7e]/g, '?');
  return Buffer.from(
    `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\n` +
      'content-type: text/plain; charset=utf-8\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      `prx-err: ${header}\r\n` +
      'connection: close\r\n\r\n' +
      body,
    'utf8',
  );
}
