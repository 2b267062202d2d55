/**
 * The failures the proxy answers itself, each with the HTTP status and the message text Linkerd 1
 * produced for it (operators' scripts match these texts, so they are kept byte for byte). The
 * router throws them; `renderError` (error-response.ts) turns any of them into a response.
 */
import { PrxError } from '../../../core/errors.js';
import { formatFinagleDuration } from '../../../core/duration.js';
import { Dtab, showPathTree } from '../../../naming/index.js';
import { BindingTimeoutError, ConnectionFailedError, NoBrokersAvailableError } from '../../../service/failures.js';

/** A failure prx turns into its own HTTP response: `status`, and whether a retry is known safe. */
export class ProxyError extends PrxError {
  readonly status: number;
  /** The request was never delivered, so retrying it is safe (`prx-retryable: true`). */
  readonly retryable: boolean;
  constructor(code: string, message: string, status: number, retryable: boolean, options?: ErrorOptions) {
    super(code, message, options);
    this.status = status;
    this.retryable = retryable;
  }
}

// ---------------------------------------------------------------------------------------------
// Finagle renderings that appear inside the messages.

export { formatFinagleDuration };

/** What an error message shows of a request. */
export interface RequestSummary {
  readonly method: string;
  /** The request target as received (`/path?query`). */
  readonly uri: string;
  /** The client's address; absent when unknown. */
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/**
 * Finagle's `Request.toString`: `Request("GET /path", from /127.0.0.1:1234)`. The address is a
 * Java `InetSocketAddress` rendering, hence the leading `/`; an unknown peer shows as Finagle's
 * default `0.0.0.0/0.0.0.0:0`.
 */
export function formatFinagleRequest(req: RequestSummary): string {
  const from =
    req.remoteAddress === undefined ? '0.0.0.0/0.0.0.0:0' : `/${req.remoteAddress}:${req.remotePort ?? 0}`;
  return `Request("${req.method.toUpperCase()} ${req.uri}", from ${from})`;
}

// ---------------------------------------------------------------------------------------------
// 400: the request itself is at fault.

/** No identifier could name the request (e.g. no Host header). */
export class UnknownDestinationError extends ProxyError {
  readonly reason: string;
  constructor(request: RequestSummary, reason: string) {
    super('PRX_ERR_UNKNOWN_DESTINATION', `Unknown destination: ${formatFinagleRequest(request)} / ${reason}`, 400, false);
    this.reason = reason;
  }
}

/** A `prx-dtab` or `prx-ctx-dtab` header is not a valid dtab; the message is the parser's. */
export class InvalidDtabHeaderError extends ProxyError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_INVALID_DTAB_HEADER', message, 400, false, options);
  }
}

/** The `Via` header lists more hops than `maxCallDepth`: most likely a routing loop. */
export class MaxCallDepthExceededError extends ProxyError {
  readonly maxCalls: number;
  constructor(maxCalls: number) {
    super(
      'PRX_ERR_MAX_CALL_DEPTH',
      `Maximum number of calls (${maxCalls}) has been exceeded. Please check for proxy loops.`,
      400,
      false,
    );
    this.maxCalls = maxCalls;
  }
}

/**
 * The request came back to the router that already forwarded it (its `Via` lists this router's
 * token): a routing loop through this very proxy, refused on the first revisit. 508 (RFC 5842
 * "Loop Detected"): the routing is at fault, not the request, so it counts as a failure.
 */
export class RoutingLoopError extends ProxyError {
  constructor(service: string, router: string, token: string) {
    super(
      'PRX_ERR_ROUTING_LOOP',
      `Routing loop detected: the request for ${service} came back to router ${router} (Via token ${token}). ` +
        'Please check for proxy loops: a dtab routes this proxy to itself.',
      508,
      false,
    );
  }
}

/** A request body larger than the router's `maxRequestKB` (known from Content-Length, or found while reading it). */
export class PayloadTooLargeError extends ProxyError {
  readonly size: number;
  readonly limit: number;
  constructor(size: number, limit: number) {
    super('PRX_ERR_PAYLOAD_TOO_LARGE', `request payload of ${size} bytes exceeds maxRequestKB (${limit} bytes)`, 413, false);
    this.size = size;
    this.limit = limit;
  }
}

/** `Max-Forwards` on a diagnostic TRACE is not an integer. */
export class InvalidMaxForwardsError extends ProxyError {
  constructor() {
    super('PRX_ERR_INVALID_MAX_FORWARDS', 'Invalid value for Max-Forwards header', 400, false);
  }
}

/**
 * A message carries `Content-Length` headers that disagree. A request is refused with 400; a
 * malformed response from the service becomes a 502.
 */
export class ConflictingContentLengthError extends ProxyError {
  constructor(origin: 'request' | 'response') {
    super('PRX_ERR_CONFLICTING_CONTENT_LENGTH', 'conflicting `Content-Length` headers', origin === 'request' ? 400 : 502, false);
  }
}

// ---------------------------------------------------------------------------------------------
// 502: routing or the service failed.

/** One `  <prefix> => <dst>` line per dentry, as Linkerd's "Unable to route request!" prints them. */
function formatDtabLines(dtab: Dtab | undefined): string {
  if (dtab === undefined) return '';
  return dtab.dentries.map((d) => `  ${d.prefix.show} => ${showPathTree(d.dst)}`).join('\n');
}

/** What {@link RichNoBrokersAvailableError} reports. */
export interface NoRouteDetails {
  /** The logical name (`/svc/dog`). */
  readonly service: string;
  /** The interpreter's own dtab (a resolver namespace's); empty for the default interpreter. */
  readonly dtab?: Dtab | undefined;
  /** The router's configured dtab. */
  readonly baseDtab: Dtab;
  /** The request's dtab override (from `prx-ctx-dtab` and `prx-dtab`). */
  readonly overrideDtab: Dtab;
}

/** The name bound to nothing (Neg, or no endpoints): Linkerd's "Unable to route request!". */
export class RichNoBrokersAvailableError extends ProxyError {
  readonly service: string;
  constructor(details: NoRouteDetails) {
    super(
      'PRX_ERR_NO_BROKERS_AVAILABLE',
      `Unable to route request!\n\nservice name: ${details.service}\ndtab:\n${formatDtabLines(details.dtab)}\n` +
        `base dtab:\n${formatDtabLines(details.baseDtab)}\noverride dtab:\n${formatDtabLines(details.overrideDtab)}\n`,
      502,
      false,
    );
    this.service = details.service;
  }
}

/** What {@link RichConnectionFailedError} reports. */
export interface ConnectionFailureDetails {
  /** The endpoint that refused, `ip:port`. */
  readonly remote: string;
  /** The logical name (`/svc/dog`). */
  readonly service: string;
  /** The bound id (`/$/inet/127.1/8080`), or `unknown`. */
  readonly client: string;
  /** Every endpoint of the client, `ip:port`. */
  readonly addresses: readonly string[];
  /**
   * Optional `dtab resolution:` lines (see `dtabResolutionLines` in diagnostic.ts); Linkerd
   * 1.7's message has none, later versions append them.
   */
  readonly resolution?: readonly string[] | undefined;
}

/** A connection to the selected endpoint could not be established. */
export class RichConnectionFailedError extends ProxyError {
  readonly remote: string;
  constructor(details: ConnectionFailureDetails, options?: ErrorOptions) {
    let message =
      `Unable to establish connection to ${details.remote}.\n\nservice name: ${details.service}\n` +
      `client name: ${details.client}\naddresses: [${details.addresses.join(', ')}]\n` +
      `selected address: ${details.remote}\n`;
    if (details.resolution !== undefined) message += `dtab resolution:\n${details.resolution.join('\n')}\n`;
    super('PRX_ERR_CONNECTION_FAILED', message, 502, false, options);
    this.remote = details.remote;
  }
}

/**
 * Binding did not finish within `bindingTimeoutMs` (Linkerd's DynBoundTimeoutException, a 502 and
 * not a timeout 503). With `connectingTo`, the name was bound but no endpoint became available.
 */
export class DynBoundTimeoutError extends ProxyError {
  constructor(timeoutMs: number, path: string, connectingTo?: string) {
    const what = connectingTo === undefined ? `resolving name: ${path}` : `connecting to ${connectingTo} for name: ${path}`;
    super('PRX_ERR_BINDING_TIMEOUT', `Exceeded ${formatFinagleDuration(timeoutMs)} binding timeout while ${what}`, 502, false);
  }
}

/** `server.maxConcurrentRequests` reached: Finagle's rejected Failure, known safe to retry. */
export class MaxConcurrentRequestsError extends ProxyError {
  constructor() {
    super('PRX_ERR_MAX_CONCURRENT_REQUESTS', 'Max waiters exceeded', 502, true);
  }
}

/** Writing the request to the service failed before any of it was delivered (Finagle's WriteException). */
export class WriteFailedError extends ProxyError {
  constructor(cause: unknown) {
    super('PRX_ERR_WRITE_FAILED', describe(cause), 502, true, { cause });
  }
}

/** Any other failure talking to the service (reset connection, malformed response…). */
export class UpstreamFailureError extends ProxyError {
  constructor(cause: unknown) {
    super('PRX_ERR_UPSTREAM_FAILURE', describe(cause), 502, false, { cause });
  }
}

/** A thrown value's message, or its class name when it has none (as Linkerd falls back to). */
export function describe(e: unknown): string {
  if (e instanceof Error) return e.message === '' ? e.name : e.message;
  return String(e);
}

/**
 * Linkerd's rich answer to a router-core failure that names where routing went: no brokers (with
 * the dtabs), a failed connection (with the addresses), a binding timeout; undefined for any other
 * failure. Shared by every router that answers in HTTP terms (http, h2).
 */
export function richRoutingFailure(err: unknown, r: { readonly service: string; readonly baseDtab: Dtab; readonly localDtab: Dtab | undefined }): ProxyError | undefined {
  if (err instanceof NoBrokersAvailableError) return new RichNoBrokersAvailableError({ service: r.service, baseDtab: r.baseDtab, overrideDtab: r.localDtab ?? Dtab.empty });
  if (err instanceof ConnectionFailedError) {
    return new RichConnectionFailedError({ remote: err.address, service: r.service, client: err.clientId, addresses: err.addresses }, { cause: err });
  }
  if (err instanceof BindingTimeoutError) return new DynBoundTimeoutError(err.timeoutMs, err.dst);
  return undefined;
}
