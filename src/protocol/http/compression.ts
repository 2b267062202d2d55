import type { IncomingHttpHeaders } from 'node:http';
import type { Gzip, Deflate } from 'node:zlib';

/** Level Finagle uses when `compressionLevel` is -1 (its default). */
const DEFAULT_LEVEL = 6;
const TEXTUAL = /^(?:text\/|application\/(?:json|javascript|xml|x-javascript|[\w.+-]+\+(?:json|xml)))/i;

/**
 * The response compressor for `compressionLevel` (Finagle's TextualContentCompressor): textual
 * content types are compressed when the client accepts gzip or deflate and the upstream did not
 * encode the body already; 0 disables it, -1 means level 6. Mutates the response headers to
 * match (content-encoding, no content-length, `vary: accept-encoding`).
 */
export function compressorFor(
  level: number,
  reqHeaders: IncomingHttpHeaders,
  resHeaders: IncomingHttpHeaders,
  method: string,
  status: number,
): Gzip | Deflate | undefined {
  if (level === 0 || method === 'HEAD' || status === 204 || status === 304 || status < 200) return undefined;
  const accept = reqHeaders['accept-encoding'];
  if (accept === undefined || resHeaders['content-encoding'] !== undefined) return undefined;
  const type = resHeaders['content-type'];
  if (typeof type !== 'string' || !TEXTUAL.test(type)) return undefined;
  const encoding = /\bgzip\b/i.test(accept) ? 'gzip' : /\bdeflate\b/i.test(accept) ? 'deflate' : undefined;
  if (encoding === undefined) return undefined;
  const z = { level: level < 0 ? DEFAULT_LEVEL : level };
  resHeaders['content-encoding'] = encoding;
  delete resHeaders['content-length'];
  const vary = resHeaders['vary'];
  resHeaders['vary'] = vary === undefined ? 'accept-encoding' : `${String(vary)}, accept-encoding`;
  // node:zlib is loaded on the first compressed response, not at start-up.
  const zlib = process.getBuiltinModule('node:zlib');
  return encoding === 'gzip' ? zlib.createGzip(z) : zlib.createDeflate(z);
}
