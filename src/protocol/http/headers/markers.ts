/**
 * Informational headers the router stamps on messages: where a request was routed
 * (`prx-dst-*`), whether a response may be retried (`prx-retryable`) and how it was classified
 * (`prx-success-class`). Applications need not forward them.
 */
import type { Path } from '../../../naming/index.js';
import { PRX_DST_CLIENT, PRX_DST_RESIDUAL, PRX_DST_SERVICE, PRX_RETRYABLE, PRX_SUCCESS_CLASS } from './names.js';
import type { HeaderMap } from './types.js';
import { firstHeaderValue } from './values.js';

/** Sets `prx-dst-service` to the logical name (`/svc/dog`), replacing any value. */
export function writeDstServiceHeader(headers: HeaderMap, service: string): void {
  headers[PRX_DST_SERVICE] = service;
}

/**
 * The `prx-dst-residual` value of a residual path, or undefined when the residual is empty and
 * the header is omitted. Compute it once per bound destination, not per request.
 */
export function residualHeaderValue(residual: Path): string | undefined {
  return residual.isEmpty ? undefined : residual.show;
}

/**
 * Sets `prx-dst-client` to the bound id (`/$/inet/127.1/8080`) and `prx-dst-residual` to the
 * residual, or removes the residual header when there is none.
 */
export function writeDstBoundHeaders(headers: HeaderMap, client: string, residual: string | undefined): void {
  headers[PRX_DST_CLIENT] = client;
  if (residual !== undefined) headers[PRX_DST_RESIDUAL] = residual;
  else if (headers[PRX_DST_RESIDUAL] !== undefined) delete headers[PRX_DST_RESIDUAL];
}

/**
 * Whether a response says its request is safe to retry: `prx-retryable` is `true` (any case), as
 * Scala's `toBoolean` reads it; anything else, or no header, is false.
 */
export function isRetryableResponse(headers: HeaderMap): boolean {
  const v = firstHeaderValue(headers, PRX_RETRYABLE);
  return v !== undefined && v.length === 4 && v.toLowerCase() === 'true';
}

/** Java's `Double.toString` for a success fraction: `1.0`, `0.0`, `0.5`. */
function javaDouble(x: number): string {
  return Number.isInteger(x) ? x.toFixed(1) : String(x);
}

/** Sets `prx-success-class` on a response to the classifier's fractional success. */
export function writeSuccessClassHeader(headers: HeaderMap, success: number): void {
  headers[PRX_SUCCESS_CLASS] = javaDouble(success);
}

/**
 * A downstream proxy's `prx-success-class` as a number (> 0 means success), or undefined when
 * absent or not a number.
 */
export function readSuccessClassHeader(headers: HeaderMap): number | undefined {
  const v = firstHeaderValue(headers, PRX_SUCCESS_CLASS);
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v.trim());
  return Number.isNaN(n) ? undefined : n;
}
