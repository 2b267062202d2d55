/**
 * The one builder of proxy-generated error responses (Linkerd's `Err.respond` + ErrorResponder):
 * status, `prx-err: <URL-encoded message>`, `content-type: text/plain`, `content-length`, body =
 * the raw message, and `prx-retryable: true` when a retry is known safe. An error response without
 * `prx-err` is the application's.
 */
import { CONTENT_LENGTH, CONTENT_TYPE, PRX_ERR, PRX_PREFIX, PRX_RETRYABLE } from './names.js';
import { ProxyError, describe } from './proxy-errors.js';
import { FailureFlag, RouterFailure, AdminTargetRefusedError } from '../../../service/failures.js';
import type { HeaderMap } from './types.js';

/** Default `maxHeadersKB` of an http router: the cap on the `prx-err` value. */
export const DEFAULT_MAX_HEADERS_KB = 8;
/** Default cap on an error body, in KB (Linkerd's `maxErrResponseKB`). */
export const DEFAULT_MAX_ERR_RESPONSE_KB = 5120;

/** What the proxy answers for a failure: status, message, and whether a retry is known safe. */
export class ProxyErrorResponse {
  readonly status: number;
  readonly message: string;
  readonly retryable: boolean;

  constructor(status: number, message: string, retryable = false) {
    this.status = status;
    this.message = message;
    this.retryable = retryable;
  }

  /**
   * Classifies any thrown value: a {@link ProxyError} answers with its own status; anything else
   * is a generic 502 carrying the error's message (its class name when it has none).
   */
  static from(err: unknown): ProxyErrorResponse {
    if (err instanceof ProxyError) return new ProxyErrorResponse(err.status, err.message, err.retryable);
    if (err instanceof RouterFailure) return new ProxyErrorResponse(failureStatus(err), err.message, err.is(FailureFlag.Retryable));
    return new ProxyErrorResponse(502, describe(err), false);
  }
}

/**
 * The HTTP status of a router-core failure, as Linkerd answered it: timeouts are 503, a refused
 * admin target 403, everything else (no route, binding, connection, a full pool) 502.
 */
export function failureStatus(f: RouterFailure): number {
  if (f.is(FailureFlag.Timeout)) return 503;
  if (f instanceof AdminTargetRefusedError) return 403;
  return 502;
}

// Java's URLEncoder keeps these bytes as they are; a space becomes `+`; every other byte of the
// UTF-8 encoding becomes `%XX` (upper-case hex). One table lookup per byte.
const ENCODED_BYTE: readonly string[] = Array.from({ length: 256 }, (_, b) => {
  const c = String.fromCharCode(b);
  if (/[A-Za-z0-9.\-*_]/.test(c)) return c;
  if (b === 0x20) return '+';
  return '%' + b.toString(16).toUpperCase().padStart(2, '0');
});

/**
 * The `prx-err` value: `message` URL-encoded as Java's `URLEncoder` does (spaces as `+`, `\n` as
 * `%0A`, `A-Za-z0-9.-*_` kept, other bytes of the UTF-8 encoding as `%XX`), cut to at most
 * `maxBytes` without splitting an escape or a character.
 */
export function errorHeaderValue(message: string, maxBytes: number): string {
  const bytes = Buffer.from(message, 'utf8');
  let out = '';
  let charStart = 0; // length of `out` before the current character's first byte
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    const continuation = (b & 0xc0) === 0x80;
    if (!continuation) charStart = out.length;
    const piece = ENCODED_BYTE[b] as string;
    if (out.length + piece.length > maxBytes) return continuation ? out.slice(0, charStart) : out;
    out += piece;
  }
  return out;
}

/** `text` as UTF-8, cut to at most `maxBytes` without splitting a character. */
function truncatedUtf8(text: string, maxBytes: number): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return bytes;
  let end = maxBytes;
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--; // back off continuation bytes
  return bytes.subarray(0, end);
}

/** Options of {@link renderError}. */
export interface RenderErrorOptions {
  /** Cap on the `prx-err` value, in KB (the router's `maxHeadersKB`). */
  readonly maxHeadersKB?: number;
  /** Cap on the body, in KB. */
  readonly maxErrResponseKB?: number;
  /** The server's `clearContext`: no body and no `prx-*` headers (the status is kept). */
  readonly clearContext?: boolean;
}

/** A rendered error response, ready to write. */
export interface RenderedError {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

const EMPTY_BODY = Buffer.alloc(0);

/** Renders a failure (any thrown value, or a {@link ProxyErrorResponse}) as an HTTP response. */
export function renderError(err: unknown, opts?: RenderErrorOptions): RenderedError {
  const rsp = err instanceof ProxyErrorResponse ? err : ProxyErrorResponse.from(err);
  if (opts?.clearContext === true) return { status: rsp.status, headers: { [CONTENT_LENGTH]: '0' }, body: EMPTY_BODY };
  const maxHeaderBytes = (opts?.maxHeadersKB ?? DEFAULT_MAX_HEADERS_KB) * 1024;
  const body = truncatedUtf8(rsp.message, (opts?.maxErrResponseKB ?? DEFAULT_MAX_ERR_RESPONSE_KB) * 1024);
  const headers: Record<string, string> = {
    [PRX_ERR]: errorHeaderValue(rsp.message, maxHeaderBytes),
    [CONTENT_TYPE]: 'text/plain',
    [CONTENT_LENGTH]: String(body.length),
  };
  if (rsp.retryable) headers[PRX_RETRYABLE] = 'true';
  return { status: rsp.status, headers, body };
}

/**
 * `clearContext` on a response passing back through the server: removes every `prx-*` header and
 * returns true when the body must be dropped (the response carried `prx-err`, so its body is a
 * proxy's error text). The caller keeps the status and sends an empty body.
 */
export function clearResponseContext(headers: HeaderMap): boolean {
  const hadError = headers[PRX_ERR] !== undefined;
  for (const name in headers) if (name.startsWith(PRX_PREFIX)) delete headers[name];
  if (hadError) {
    delete headers[CONTENT_TYPE];
    headers[CONTENT_LENGTH] = '0';
  }
  return hadError;
}
