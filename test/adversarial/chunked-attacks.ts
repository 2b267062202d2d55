// Chunked bodies, good and bad, for both directions of an HTTP/1.1 proxy: the same table is fed to
// prx's chunked decoder directly, sent as a request body by a raw client, and answered as a
// response body by a raw upstream, so a test can check that both directions read every input as
// the decoder does (request smuggling hides in a place where two readers disagree). The senders
// take only a proxy port, so a future router can be run through them as well.
import { readUntilClosed } from './raw-peers.js';
import { decodeChunked } from '../router/support.js';

export interface ChunkedCase {
  readonly what: string;
  /** The chunked body as it goes on the wire (after the head). */
  readonly wire: string;
  /** The body it decodes to, or undefined when it is refused. */
  readonly body?: string;
  /** Why it is refused: the decoder's reason. */
  readonly reason?: string;
}

const LINE_TOO_LONG = 'chunk size line too long';
const INVALID_SIZE = 'invalid chunk size';
const MISSING_CRLF = 'missing CRLF after a chunk';
const MALFORMED_TRAILER = 'malformed trailer line';
const TRAILERS_TOO_LARGE = 'trailers too large';

/** A trailer section over both directions' limits (8 KB of fields, 12 KB of response head by default). */
const BIG_TRAILER = `x-big: ${'a'.repeat(64 * 1024)}\r\n`;

export const CHUNKED_CASES: readonly ChunkedCase[] = [
  // Valid.
  { what: 'one chunk', wire: '5\r\nhello\r\n0\r\n\r\n', body: 'hello' },
  { what: 'hex sizes in both cases', wire: 'a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n', body: '0123456789abcdefghij' },
  { what: 'a size with leading zeros', wire: '0005\r\nhello\r\n000\r\n\r\n', body: 'hello' },
  { what: 'chunk extensions', wire: '5;name=value\r\nhello\r\n3 ; q="a b"\r\nabc\r\n0;last\r\n\r\n', body: 'helloabc' },
  { what: 'trailer fields', wire: '5\r\nhello\r\n0\r\nx-sum: abc\r\nx-other:\tv w\r\n\r\n', body: 'hello' },
  { what: 'extensions and trailers together', wire: '5;a=1\r\nhello\r\n3\r\nabc\r\n0;z\r\nx-t: 1\r\n\r\n', body: 'helloabc' },
  { what: 'CRLFs inside chunk data', wire: '4\r\n\r\n\r\n\r\n0\r\n\r\n', body: '\r\n\r\n' },
  { what: 'only the zero-size last chunk', wire: '0\r\n\r\n', body: '' },
  // Invalid chunk sizes.
  { what: 'size 1g', wire: '1g\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'size zz', wire: 'zz\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'size -2', wire: '-2\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'size 2 2', wire: '2 2\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'size 0x2', wire: '0x2\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'a space before the size', wire: ' 2\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'an empty size line', wire: '\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'a size line ending in a bare LF', wire: '2\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'a bare CR in the size line', wire: '2\rab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'a last-chunk line ending in a bare LF', wire: '2\r\nab\r\n0\n\r\n', reason: INVALID_SIZE },
  { what: 'a control byte in an extension', wire: '2;a\x01b\r\nab\r\n0\r\n\r\n', reason: INVALID_SIZE },
  { what: 'a size past 2^53-1 (an oversize chunk)', wire: `${'f'.repeat(17)}\r\nab\r\n0\r\n\r\n`, reason: INVALID_SIZE },
  { what: 'an over-long size line', wire: `1;${'x'.repeat(1100)}\r\na\r\n0\r\n\r\n`, reason: LINE_TOO_LONG },
  { what: 'an over-long size line still arriving', wire: `1;${'x'.repeat(1100)}`, reason: LINE_TOO_LONG },
  // The end of chunk data.
  { what: 'more data than the chunk size', wire: '2\r\nabc\r\n0\r\n\r\n', reason: MISSING_CRLF },
  { what: 'chunk data ending in a bare LF', wire: '2\r\nab\n0\r\n\r\n', reason: MISSING_CRLF },
  { what: 'chunk data ending in a bare CR', wire: '2\r\nab\r0\r\n\r\n', reason: MISSING_CRLF },
  { what: 'a wrong byte after chunk data with nothing after it', wire: '2\r\nabX', reason: MISSING_CRLF },
  // Trailers.
  { what: 'a trailer line that is not a field', wire: '0\r\nnot a field\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'a folded trailer line', wire: '0\r\nx-t: 1\r\n 2\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'a space before a trailer colon', wire: '0\r\nx-t : 1\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'a trailer line ending in a bare LF', wire: '0\r\nx-t: 1\nx-u: 2\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'a control byte in a trailer value', wire: '0\r\nx-t: a\x01b\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'trailers ending in a bare LF', wire: '2\r\nab\r\n0\r\n\n', reason: MALFORMED_TRAILER },
  { what: 'a malformed trailer after data', wire: '2\r\nab\r\n0\r\nnot a field\r\n\r\n', reason: MALFORMED_TRAILER },
  { what: 'trailers over the head limit', wire: `0\r\n${BIG_TRAILER}\r\n`, reason: TRAILERS_TOO_LARGE },
];

/** How a proxy answered one chunked body. */
export type ProxyOutcome =
  | { readonly kind: 'ok'; readonly status: number; readonly body: string }
  | { readonly kind: 'refused'; readonly status: number; readonly err: string }
  /** The response head went out and the connection closed without the body's end. */
  | { readonly kind: 'cut'; readonly status: number };

const REQUEST_HEAD = (host: string): string => `POST /chunked HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n`;

/**
 * Sends `wire` as the chunked body of a request for `host` to the proxy at `port` (in `pieces`
 * when given: the wire is cut before each of those offsets) and reads the answer until the proxy
 * closes. The upstream is expected to echo a complete body.
 */
export async function sendChunkedRequest(port: number, host: string, wire: string, cuts: readonly number[] = []): Promise<ProxyOutcome> {
  const head = REQUEST_HEAD(host);
  return outcomeOf(await readUntilClosed(port, cuts.length === 0 ? head + wire : [head, ...cutAt(wire, cuts)]));
}

/** Asks the proxy at `port` for `path` of `host` (whose upstream answers with a chunked body) and reads the answer until it closes. */
export async function fetchChunkedResponse(port: number, host: string, path: string): Promise<ProxyOutcome> {
  return outcomeOf(await readUntilClosed(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`));
}

/** The head a raw upstream writes before a chunked case's wire. */
export const CHUNKED_RESPONSE_HEAD = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n';

/** `text` cut before each offset in `cuts` (ascending, inside the text). */
export function cutAt(text: string, cuts: readonly number[]): string[] {
  const out: string[] = [];
  let from = 0;
  for (const c of cuts) {
    out.push(text.slice(from, c));
    from = c;
  }
  out.push(text.slice(from));
  return out;
}

/** Reads a whole answer (the proxy closed after it): its status, and its body or `prx-err`. */
function outcomeOf(text: string): ProxyOutcome {
  const split = text.indexOf('\r\n\r\n');
  if (split < 0) throw new Error(`no response head: ${JSON.stringify(text.slice(0, 200))}`);
  const lines = text.slice(0, split).split('\r\n');
  const status = Number((lines[0] ?? '').split(' ')[1]);
  const headers = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const c = l.indexOf(':');
    headers.set(l.slice(0, c).trim().toLowerCase(), l.slice(c + 1).trim());
  }
  const rest = text.slice(split + 4);
  const err = headers.get('prx-err');
  if (err !== undefined) return { kind: 'refused', status, err: decodeURIComponent(err.replaceAll('+', ' ')) };
  let body: string | undefined;
  if (headers.get('transfer-encoding') === 'chunked') body = decodeChunked(rest, true);
  else {
    const length = Number(headers.get('content-length'));
    body = Buffer.byteLength(rest, 'latin1') === length ? rest : undefined;
  }
  return body === undefined ? { kind: 'cut', status } : { kind: 'ok', status, body };
}

