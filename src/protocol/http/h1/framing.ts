/**
 * The strict HTTP/1.1 framing grammar both directions share: chunked bodies both ways are read
 * with it (chunked-decoder.ts), request heads (request-head.ts) and response heads
 * (client-connection.ts, response-head.ts) too, so a chunk size, a trailer line or a line ending
 * means the same on both sides. Strict where a lenient reader would see a different message boundary than another
 * parser in the chain (smuggling): every line ends in CRLF, a chunk size is hex digits only and
 * fits a safe integer, a trailer line is a well-formed field, a status is three digits. The checks
 * read bytes (or characters) in place and allocate nothing.
 */

/** A chunk-size line (size and extensions) longer than this is refused. */
export const CHUNK_LINE_BYTES = 1024;

/**
 * The size of the chunk-size line `buf[start, eol)` (without its CRLF), or -1 when it is not
 * `1*HEXDIG [BWS ";" chunk-ext]` with a size of at most 2^53-1: `zz`, `1g`, `-2`, `2 2`, a leading
 * space, an empty size, a control character in an extension and a size that overflows are all -1.
 */
export function parseChunkSize(buf: Buffer, start: number, eol: number): number {
  let size = 0;
  let at = start;
  for (; at < eol; at++) {
    const d = hexValue(buf[at] as number);
    if (d < 0) break;
    size = size * 16 + d;
    if (size > Number.MAX_SAFE_INTEGER) return -1;
  }
  if (at === start) return -1;
  while (at < eol && (buf[at] === 0x20 || buf[at] === 0x09)) at++;
  if (at === eol) return size;
  if (buf[at] !== 0x3b) return -1; // ';' starts the extensions
  // Extensions are ignored, but a control (a bare CR or LF above all) would end the line early for a lenient reader.
  for (at++; at < eol; at++) if (isControl(buf[at] as number)) return -1;
  return size;
}

/**
 * Whether `buf[start, eol)` (without its CRLF, non-empty) is a trailer field a strict reader
 * accepts: a token, a colon, and a value without controls (HTAB aside). Obsolete folding (a line
 * starting with whitespace) and whitespace before the colon are refused, as in a head.
 */
export function validFieldLine(buf: Buffer, start: number, eol: number): boolean {
  let at = start;
  while (at < eol && isTokenByte(buf[at] as number)) at++;
  if (at === start || at === eol || buf[at] !== 0x3a) return false;
  for (at++; at < eol; at++) if (isControl(buf[at] as number)) return false;
  return true;
}

/**
 * The position of the first line break in `buf[start, end)` that is not a CRLF (a LF without a CR
 * before it, or a CR followed by anything but LF), or -1. A CR as the last byte may still be
 * followed by its LF, so it is not counted. Uses the native byte search: one pass per line.
 */
export function bareLineBreak(buf: Buffer, start: number, end: number): number {
  for (let at = buf.indexOf(0x0a, start); at >= 0 && at < end; at = buf.indexOf(0x0a, at + 1)) {
    if (at === start || buf[at - 1] !== 0x0d) return at;
  }
  for (let at = buf.indexOf(0x0d, start); at >= 0 && at < end - 1; at = buf.indexOf(0x0d, at + 1)) {
    if (buf[at + 1] !== 0x0a) return at;
  }
  return -1;
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  if (lower >= 0x61 && lower <= 0x66) return lower - 0x61 + 10;
  return -1;
}

/** The three decimal digits of a status code at `text[at]`, or -1 (`2e2`, `+20`, ` 20` are not a status). */
export function statusDigits(text: string, at: number): number {
  let n = 0;
  for (let i = at; i < at + 3; i++) {
    const d = text.charCodeAt(i) - 0x30;
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

/** A control character other than HTAB (what a field value, a reason phrase or an extension may not hold). */
export function isControl(c: number): boolean {
  return (c < 0x20 && c !== 0x09) || c === 0x7f;
}

// RFC 9110 tchar: ALPHA DIGIT and !#$%&'*+-.^_`|~
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;

function isTokenByte(c: number): boolean {
  return c < 128 && TCHAR[c] === 1;
}
