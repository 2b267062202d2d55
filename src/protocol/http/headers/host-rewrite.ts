import type { IncomingHttpHeaders } from 'node:http';

/**
 * Linkerd's `RewriteHostHeader`: a bound address set whose metadata carries an `authority` (the
 * `io.prx.kvstore` namer's `setHost`) has each attempt sent with that Host, and the response's
 * `Location` and `Refresh` headers, which hold absolute URLs a backend builds from the Host it
 * saw, are given the client's Host back (as nginx and Apache do).
 */

/** The address-set metadata key naming the Host to send (Linkerd's `Metadata.authority`). */
export const AUTHORITY_META_KEY = 'authority';

/** What a request needs to have its Host rewritten per attempt and restored in the response. */
export interface HostRewritable {
  headers: IncomingHttpHeaders;
  /** The client's Host while an attempt carries another (null: it sent none); undefined when not rewritten. */
  hostBeforeRewrite: string | null | undefined;
}

/** Sets the Host of an attempt to the address set's authority, or restores the client's when it has none. */
export function rewriteHostForAttempt(out: HostRewritable, meta: Readonly<Record<string, unknown>>): void {
  const authority = meta[AUTHORITY_META_KEY];
  if (typeof authority === 'string' && authority !== '') {
    if (out.hostBeforeRewrite === undefined) out.hostBeforeRewrite = out.headers.host ?? null;
    out.headers.host = authority;
    return;
  }
  const before = out.hostBeforeRewrite;
  if (before === undefined) return;
  // An earlier attempt went to a rewriting destination; this one goes as the client sent it.
  if (before === null) delete out.headers.host;
  else out.headers.host = before;
  out.hostBeforeRewrite = undefined;
}

const ABSOLUTE_URL_HEADERS = ['location', 'refresh'] as const;

/** Puts the client's Host back into the response's `Location` and `Refresh` after a rewritten attempt. */
export function restoreHostInResponse(out: HostRewritable, response: IncomingHttpHeaders): void {
  const before = out.hostBeforeRewrite;
  const sent = out.headers.host;
  if (before === undefined || before === null || sent === undefined || sent === before) return;
  for (const name of ABSOLUTE_URL_HEADERS) {
    const value = response[name];
    if (typeof value === 'string' && value.includes(sent)) response[name] = value.split(sent).join(before);
  }
}
