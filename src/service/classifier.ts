// Response classification (Finagle's ResponseClassifier, protocol-neutral): what counts as a
// success for stats and failure accrual, and which failures the retry filter may retry.

/** Finagle's ResponseClass without the fractional success: success, or a (retryable) failure. */
export type ResponseClass = 'success' | 'retryableFailure' | 'failure';

/** One finished request attempt, as classifiers see it. */
export interface ClassifiedResult {
  readonly method: string;
  /** The response status; absent when the attempt failed before a response (then `error` is set). */
  readonly status?: number;
  /** Set when the attempt failed; it then classifies as an exception whatever `status` says. */
  readonly error?: Error;
  /** response header prx-retryable: true */
  readonly retryableHeader?: boolean;
  /** request body was chunked (streamed) */
  readonly chunked?: boolean;
}

export interface ResponseClassifier {
  classify(r: ClassifiedResult): ResponseClass;
}

/**
 * Linkerd's wrappers around every configured HTTP classifier, applied in this order:
 * 1. a `failure` whose *response* carried `prx-retryable: true` becomes `retryableFailure` (the
 *    next proxy knows the request never reached the service, so retrying is safe);
 * 2. a chunked (streamed) request is never `retryableFailure` (it becomes `failure`): its body is
 *    gone once sent and cannot be replayed.
 */
export function withRetryableRules(c: ResponseClassifier): ResponseClassifier {
  return new RetryableRules(c);
}

class RetryableRules implements ResponseClassifier {
  readonly #inner: ResponseClassifier;
  constructor(inner: ResponseClassifier) {
    this.#inner = inner;
  }

  classify(r: ClassifiedResult): ResponseClass {
    let rc = this.#inner.classify(r);
    if (rc === 'failure' && r.error === undefined && r.retryableHeader === true) rc = 'retryableFailure';
    if (rc === 'retryableFailure' && r.chunked === true) rc = 'failure';
    return rc;
  }
}

/**
 * Error codes of failures Linkerd's retryable classifiers may retry (Finagle's timeout, write,
 * channel-closed and framing exceptions); prx's own codes are those of the proxy errors in
 * `protocol/http/headers/proxy-errors.ts`. Deliberately absent: `PRX_ERR_BINDING_TIMEOUT` (a binding
 * timeout is not a request timeout and retrying would wait again), `PRX_ERR_NO_BROKERS_AVAILABLE`
 * (nothing to retry on), aborts (`UND_ERR_ABORTED`: the caller gave up, Finagle's "interrupted"),
 * `UND_ERR_DESTROYED` (the client is shutting down), and size limits, which a retry would hit again.
 */
export const RETRYABLE_ERROR_CODES: ReadonlySet<string> = new Set([
  // Timeouts (Finagle TimeoutException): of one attempt, or of the whole request.
  'PRX_ERR_ATTEMPT_TIMEOUT',
  'PRX_ERR_TOTAL_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'PRX_ERR_UPSTREAM_CONNECT_TIMEOUT',
  'PRX_ERR_UPSTREAM_IDLE_TIMEOUT',
  'ETIMEDOUT',
  // Write failures (Finagle WriteException and failures flagged Retryable): the connection could
  // not be made or the request waited for none, so it was never written.
  'PRX_ERR_WRITE_FAILED',
  'PRX_ERR_CONNECTION_FAILED',
  'PRX_ERR_MAX_CONCURRENT_REQUESTS',
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  // Connection closed under the request (Finagle ChannelClosedException).
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'PRX_ERR_UPSTREAM_CLOSED',
  'PRX_ERR_UPSTREAM_RESET',
  // Malformed responses (Linkerd's FramingException): undici's content-length check, parse
  // errors (`HPE_…`, matched by prefix below; see also isRetryableError) and prx's own check.
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'PRX_ERR_CONFLICTING_CONTENT_LENGTH',
  'PRX_ERR_UPSTREAM_PROTOCOL',
  'PRX_ERR_UPSTREAM_CONTENT_LENGTH',
]);

// How far to follow `cause`: wrappers (fetch's TypeError, Finagle-style Failure) nest shallowly.
const MAX_CAUSE_DEPTH = 4;

/**
 * True when `err` (or an error in its `cause` chain) is a timeout, write, connection-closed or
 * framing failure: see {@link RETRYABLE_ERROR_CODES}. Decided on the `code` property, with one
 * exception: undici's HTTPParserError (a malformed response) usually has no code, because undici
 * looks llhttp's error number up in a name-to-number table, so it is recognised by its `name`.
 */
export function isRetryableError(err: unknown): boolean {
  let e = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && typeof e === 'object' && e !== null; depth++) {
    const { code, name } = e as { code?: unknown; name?: unknown };
    if (typeof code === 'string' && (RETRYABLE_ERROR_CODES.has(code) || code.startsWith('HPE_'))) return true;
    if (name === 'HTTPParserError') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
