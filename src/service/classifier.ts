// Response classification (Finagle's ResponseClass and retryable failures), protocol-free: what
// counts as a success for stats and failure accrual, and which failures a retry may follow. Each
// protocol's classifier family (HTTP's status classifiers, thrift's exceptions) builds on these.
import { FailureFlag, RouterFailure } from './failures.js';

/** Finagle's ResponseClass without the fractional success: success, or a (retryable) failure. */
export type ResponseClass = 'success' | 'retryableFailure' | 'failure';

/**
 * Node's codes of socket failures a retry may follow (Finagle's write and channel-closed
 * exceptions, and a connect that timed out): the request was not acted on, or the connection
 * under it broke. Size limits and aborts are absent: a retry would hit the first again, and the
 * caller gave up on the second.
 */
const SOCKET_RETRYABLE_CODES: ReadonlySet<string> = new Set(['ETIMEDOUT', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ECONNRESET', 'EPIPE']);

// How far to follow `cause`: wrappers (fetch's TypeError, Finagle-style Failure) nest shallowly.
const MAX_CAUSE_DEPTH = 4;

/**
 * True when `err` or an error in its `cause` chain is a failure a retryable classifier may retry:
 * a router failure flagged Retryable or Timeout (a connection that failed, a full pool, an attempt
 * or total timeout; not a binding timeout, which a retry would wait for again), a socket failure,
 * or one `protocolRetryable` recognises (the protocol's own transport codes).
 */
export function isRetryableFailure(err: unknown, protocolRetryable?: (e: object) => boolean): boolean {
  let e = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && typeof e === 'object' && e !== null; depth++) {
    // A router failure says by its flags; its causes were judged when it was made.
    if (e instanceof RouterFailure) return e.is(FailureFlag.Retryable | FailureFlag.Timeout);
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SOCKET_RETRYABLE_CODES.has(code)) return true;
    if (protocolRetryable?.(e) === true) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
