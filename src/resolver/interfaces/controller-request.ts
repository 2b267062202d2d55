import type { IncomingMessage } from 'node:http';
import { PrxError, errorMessage } from '../../core/errors.js';
import { Dtab, type Path, readDtab, readPath } from '../../naming/index.js';
import { DTAB_MEDIA_TYPES, codecForContentType } from './dtab-codec.js';
import { type IfMatch, parseIfMatch } from './if-match.js';

// What the HTTP controller reads from a request: its parameters, its body as a dtab, its
// preconditions. Each malformed input is a BadRequest (400) or a BodyTooLarge (413).

/** Largest request body (a dtab) accepted; larger ones get 413. */
export const MAX_DTAB_BODY_BYTES = 1024 * 1024;

/** A malformed request: answered 400 with the message. */
export class BadRequest extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_BAD_REQUEST', message);
  }
}

/** A body past {@link MAX_DTAB_BODY_BYTES}: answered 413. */
export class BodyTooLarge extends PrxError {
  constructor() {
    super('PRX_ERR_BODY_TOO_LARGE', `request body larger than ${MAX_DTAB_BODY_BYTES} bytes`);
  }
}

/** `watch=true` or `watch=1` (any case). */
export function isWatch(params: URLSearchParams): boolean {
  const value = params.get('watch')?.toLowerCase();
  return value === 'true' || value === '1';
}

/**
 * The namespace segment of a URL path, percent-decoded; null when it is not one path segment
 * (`/api/1/dtabs/a/b`) or not valid percent-encoding.
 */
export function decodeNamespace(segment: string): string | null {
  if (segment.includes('/')) return null;
  try {
    const ns = decodeURIComponent(segment);
    return ns.includes('/') ? null : ns;
  } catch {
    return null;
  }
}

/** The `path` parameter; 400 `Invalid path: <p> / <reason>` when it does not parse. */
export function readPathParam(params: URLSearchParams): Path {
  const raw = params.get('path') ?? '';
  try {
    return readPath(raw);
  } catch (e) {
    throw new BadRequest(`Invalid path: ${raw} / ${errorMessage(e)}`);
  }
}

/** The `dtab` parameter (entries appended to the namespace's dtab); empty when absent. */
export function readDtabParam(params: URLSearchParams): Dtab {
  const raw = params.get('dtab');
  if (raw === null) return Dtab.empty;
  try {
    return readDtab(raw, { located: true });
  } catch (e) {
    throw new BadRequest(`Invalid dtab: ${errorMessage(e)}`);
  }
}

/** A request body as a dtab in the format its `Content-Type` names. */
export async function readDtabBody(req: IncomingMessage): Promise<Dtab> {
  const contentType = req.headers['content-type'];
  const codec = codecForContentType(contentType);
  if (!codec) {
    req.resume();
    throw new BadRequest(`Invalid Content-Type "${contentType ?? ''}". Valid content types are: ${DTAB_MEDIA_TYPES.join(', ')}`);
  }
  const body = await readBody(req);
  try {
    return codec.read(body);
  } catch (e) {
    throw new BadRequest(errorMessage(e));
  }
}

/** The body as text, refused past {@link MAX_DTAB_BODY_BYTES}. */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > MAX_DTAB_BODY_BYTES) {
      req.resume();
      reject(new BodyTooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.byteLength;
      if (size <= MAX_DTAB_BODY_BYTES) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.resume();
      reject(new BodyTooLarge());
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', reject);
  });
}

/** The request's `If-Match`, parsed; undefined without one. */
export function readIfMatch(req: IncomingMessage): IfMatch | undefined {
  const value = req.headers['if-match'];
  return value === undefined ? undefined : parseIfMatch(value);
}
