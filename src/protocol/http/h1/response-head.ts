/**
 * The response head of the lean HTTP/1.1 client (client-connection.ts), read strictly: a status line
 * `HTTP/1.x SSS[ reason]` and field lines, refusing anything two parsers could read two ways
 * (bad tokens or bytes, conflicting Content-Lengths, Transfer-Encoding with Content-Length).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { UpstreamContentLengthError, UpstreamProtocolError } from './client-exchange.js';
import { CONTROL, TOKEN, trimOws } from './wire.js';
import { isControl, statusDigits } from './framing.js';

const DIGITS = /^\d+$/;

/**
 * One response head, as read. A connection keeps one and reads every head into it, so reading
 * allocates only the header map the exchange receives.
 */
export class ResponseHead {
  minor = 1;
  status = 0;
  headers: IncomingHttpHeaders = {};
  /** -1 without a Content-Length. */
  contentLength = -1;
  /** The final transfer coding is chunked. */
  chunked = false;
  /** The `Connection` values, joined. */
  connection: string | undefined = undefined;
  /** The `Keep-Alive` value. */
  keepAliveHint: string | undefined = undefined;
}

/** Reads a response head (without its final CRLF CRLF) into `head`; throws on a malformed one. */
export function readResponseHead(text: string, head: ResponseHead): void {
  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = text.length;
  // HTTP/1.x SSS[ reason]
  const minor = text.charCodeAt(7) - 0x30;
  if (eol < 12 || !text.startsWith('HTTP/1.') || !(minor >= 0 && minor <= 9) || text.charCodeAt(8) !== 0x20) throw new UpstreamProtocolError('Expected HTTP/');
  const status = statusDigits(text, 9);
  if (status < 100 || (eol > 12 && text.charCodeAt(12) !== 0x20)) throw new UpstreamProtocolError('Invalid status code');
  // A bare LF in the reason phrase would hide the fields after it in the status line.
  for (let i = 13; i < eol; i++) if (isControl(text.charCodeAt(i))) throw new UpstreamProtocolError('Invalid character in the reason phrase');
  const headers: IncomingHttpHeaders = {};
  const h = headers as Record<string, string | string[]>;
  let contentLength = -1;
  let chunked = false;
  let transferEncoding = false;
  let connection: string | undefined;
  let keepAliveHint: string | undefined;
  let pos = eol + 2;
  while (pos < text.length) {
    let end = text.indexOf('\r\n', pos);
    if (end < 0) end = text.length;
    const colon = text.indexOf(':', pos);
    if (colon <= pos || colon > end) throw new UpstreamProtocolError('Invalid header token');
    const rawName = text.slice(pos, colon);
    if (!TOKEN.test(rawName)) throw new UpstreamProtocolError('Invalid header token');
    const name = rawName.toLowerCase();
    const value = trimOws(text, colon + 1, end);
    if (CONTROL.test(value)) throw new UpstreamProtocolError('Invalid header value char');
    pos = end + 2;
    if (name === 'content-length') {
      if (!DIGITS.test(value)) throw new UpstreamContentLengthError();
      const n = Number(value);
      // A repeat of the same length is one length (RFC 9110 §8.6, as Finagle reads it); another is a conflict.
      if (contentLength >= 0) {
        if (n !== contentLength) throw new UpstreamContentLengthError();
        continue;
      }
      contentLength = n;
    }
    const prev = h[name];
    if (prev === undefined) h[name] = value;
    else if (typeof prev === 'string') h[name] = [prev, value];
    else prev.push(value);
    switch (name) {
      case 'transfer-encoding':
        transferEncoding = true;
        chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
        break;
      case 'connection':
        connection = connection === undefined ? value : `${connection}, ${value}`;
        break;
      case 'keep-alive':
        keepAliveHint = value;
        break;
    }
  }
  // Any Transfer-Encoding with a Content-Length is two framings of one body (RFC 9112 §6.3: an error).
  if (transferEncoding && contentLength >= 0) throw new UpstreamContentLengthError();
  head.minor = minor;
  head.status = status;
  head.headers = headers;
  head.contentLength = contentLength;
  head.chunked = chunked;
  head.connection = connection;
  head.keepAliveHint = keepAliveHint;
}
