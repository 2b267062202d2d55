// The HTTP/1.1 wire details the lean client's connection reads and writes.
import type { Socket } from 'node:net';

export const CRLF2 = Buffer.from('\r\n\r\n');
export const CHUNK_END = Buffer.from('\r\n');
export const LAST_CHUNK = Buffer.from('0\r\n\r\n');

/** Responses that never carry a body, whatever their headers say. */
export function bodyless(method: string, status: number): boolean {
  return method === 'HEAD' || status === 204 || status === 304 || (status >= 100 && status < 200);
}

/**
 * Stop reusing a connection this long before the upstream's announced idle timeout, so a request
 * never races the upstream closing it (undici's keepAliveTimeoutThreshold).
 */
export const KEEP_ALIVE_MARGIN_MS = 2000;

// RFC 9110 token characters: a header name; CONTROL: what a header value may not hold (node refuses to write it).
export const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// eslint-disable-next-line no-control-regex
export const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** `text[start, end)` without leading and trailing spaces and tabs (HTTP's optional whitespace). */
export function trimOws(text: string, start: number, end: number): string {
  while (start < end && (text.charCodeAt(start) === 0x20 || text.charCodeAt(start) === 0x09)) start++;
  while (end > start && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
  return text.slice(start, end);
}

/** One chunk of a chunked request body, in one corked write; false when the socket wants a drain. */
export function writeChunk(socket: Socket, chunk: Buffer): boolean {
  socket.cork();
  socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
  socket.write(chunk);
  const ok = socket.write(CHUNK_END);
  socket.uncork();
  return ok;
}
