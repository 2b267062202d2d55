/**
 * Header names, lower-cased as Node presents them. prx's own headers carry the vendor prefix
 * `prx-` where Linkerd 1 used `l5d-`; standard headers keep their names.
 */

/** Prefix of every header prx reads or writes on its own behalf. */
export const PRX_PREFIX = 'prx-';
/** Prefix of Linkerd 1's headers: a Linkerd peer's context, which `clearContext` strips as well. */
export const L5D_PREFIX = 'l5d-';
/** Prefix of the context headers applications must forward (`prx-ctx-*`). */
export const PRX_CTX_PREFIX = 'prx-ctx-';

/** Request, emitted: the logical name the request was identified as (`/svc/dog`). */
export const PRX_DST_SERVICE = 'prx-dst-service';
/** Request, emitted: the concrete bound id after delegation (`/$/inet/127.1/8080`). */
export const PRX_DST_CLIENT = 'prx-dst-client';
/** Request, emitted: the residual path after binding; omitted when empty. */
export const PRX_DST_RESIDUAL = 'prx-dst-residual';
/** Request, emitted: the root trace id, for correlating logs across hops. */
export const PRX_REQID = 'prx-reqid';
/** Request, context: Finagle's binary trace id, base64. */
export const PRX_CTX_TRACE = 'prx-ctx-trace';
/** Request, context: `<timestampNanos> <deadlineNanos>`. */
export const PRX_CTX_DEADLINE = 'prx-ctx-deadline';
/** Request, context: the local dtab as prx forwards it. */
export const PRX_CTX_DTAB = 'prx-ctx-dtab';
/** Request, client-set: a dtab override for this request; never forwarded as-is. */
export const PRX_DTAB = 'prx-dtab';
/** Request, client-set: the trace sample rate of this request. */
export const PRX_SAMPLE = 'prx-sample';
/** Response: marks a proxy-generated error; the value is the URL-encoded message. */
export const PRX_ERR = 'prx-err';
/** Response: `true` when the request is known to be safe to retry. */
export const PRX_RETRYABLE = 'prx-retryable';
/** Response: the classifier's fractional success (`1.0`/`0.0`). */
export const PRX_SUCCESS_CLASS = 'prx-success-class';
/** Request: with `TRACE` and `Max-Forwards`, asks for diagnostic router context. */
export const PRX_ADD_CONTEXT = 'prx-add-context';

export const VIA = 'via';
export const FORWARDED = 'forwarded';
export const X_FORWARDED_CLIENT_CERT = 'x-forwarded-client-cert';
/** Finagle's legacy dtab header: ignored by prx and passed through untouched. */
export const DTAB_LOCAL = 'dtab-local';
export const MAX_FORWARDS = 'max-forwards';
export const HOST = 'host';
export const CONNECTION = 'connection';
export const UPGRADE = 'upgrade';
export const CONTENT_TYPE = 'content-type';
export const CONTENT_LENGTH = 'content-length';
export const X_FORWARDED_PREFIX = 'x-forwarded-';

/**
 * Whether a lower-case request header name is one a proxy manages (sets, reads or strips on its
 * own behalf): `prx-*`, `l5d-*`, `Via`, `Forwarded`, `X-Forwarded-*`. A client's `X_Forwarded_For`
 * must not reach a backend that reads it as `X-Forwarded-For`.
 */
export function isManagedHeaderName(name: string): boolean {
  return name.startsWith(PRX_PREFIX) || name.startsWith(L5D_PREFIX) || name === VIA || name === FORWARDED || name.startsWith(X_FORWARDED_PREFIX);
}
