/**
 * The router core's failures: protocol-free, one class and one code per failure, each with the
 * flags that decide what may happen next (Finagle's `FailureFlags`). Every protocol renders them in
 * its own terms: HTTP a status with `prx-err`, h2 a reset or `grpc-status`, thrift a
 * `TApplicationException`, mux an `Rerr`. Class names are stat names (`failures/<class>`): keep them.
 */
import { PrxError } from '../core/errors.js';
import { formatFinagleDuration } from '../core/duration.js';

/** What a failure says about the request (a bit set; Finagle's flags of the same names). */
export const FailureFlag = {
  /** Nothing reached the peer's application: the request may be sent again, to any endpoint. */
  Retryable: 1,
  /** This proxy turned the request away (full pool, admin target): not the endpoint's fault. */
  Rejected: 2,
  /** The caller went away or gave up: stop all work for it. */
  Interrupted: 4,
  /** Naming failed (no route, binding failure or timeout): the endpoint was never picked. */
  Naming: 8,
  /** A time limit of the request or of one attempt elapsed. */
  Timeout: 16,
} as const;

/** A failure of the router core, with its {@link FailureFlag}s. */
export abstract class RouterFailure extends PrxError {
  readonly flags: number;
  constructor(code: string, message: string, flags: number, options?: ErrorOptions) {
    super(code, message, options);
    this.flags = flags;
  }

  is(flag: number): boolean {
    return (this.flags & flag) !== 0;
  }
}

/** The name bound to no destination (Neg, Empty, or a client with no endpoints). */
export class NoBrokersAvailableError extends RouterFailure {
  readonly dst: string;
  constructor(dst: string, message = `No hosts are available for ${dst}`) {
    super('PRX_ERR_NO_BROKERS_AVAILABLE', message, FailureFlag.Naming);
    this.dst = dst;
  }
}

/** Binding did not finish within the router's `bindingTimeoutMs`. */
export class BindingTimeoutError extends RouterFailure {
  readonly timeoutMs: number;
  readonly dst: string;
  constructor(timeoutMs: number, dst: string) {
    super('PRX_ERR_BINDING_TIMEOUT', `Exceeded ${formatFinagleDuration(timeoutMs)} binding timeout while resolving name: ${dst}`, FailureFlag.Naming);
    this.timeoutMs = timeoutMs;
    this.dst = dst;
  }
}

/** Binding failed (a namer error, `!` in the dtab, a delegation over its budget). */
export class BindingFailedError extends RouterFailure {
  constructor(dst: string, cause: Error) {
    super('PRX_ERR_BINDING_FAILED', `failed to bind ${dst}: ${cause.message}`, FailureFlag.Naming, { cause });
  }
}

/**
 * Connecting to an endpoint failed before any response (refused, reset, unreachable, timed out,
 * TLS), and requeues could not place the request elsewhere: it never reached an application.
 */
export class ConnectionFailedError extends RouterFailure {
  readonly address: string;
  readonly clientId: string;
  readonly addresses: readonly string[];
  constructor(address: string, clientId: string, addresses: readonly string[], cause: Error) {
    super('PRX_ERR_CONNECTION_FAILED', `Unable to establish connection to ${address}.`, FailureFlag.Retryable, { cause });
    this.address = address;
    this.clientId = clientId;
    this.addresses = addresses;
  }
}

/**
 * An endpoint's transport is saturated (an h1 pool's connections and waiters; a session's
 * streams): Finagle's TooManyWaiters. Requeued on another endpoint; when none can take it the
 * request fails, known safe to send again (it never left).
 */
export class TooManyWaitersError extends RouterFailure {
  constructor(address: string) {
    super('PRX_ERR_TOO_MANY_WAITERS', `too many requests waiting for a connection to ${address}`, FailureFlag.Rejected | FailureFlag.Retryable);
  }
}

/**
 * Every endpoint the name bound to is this process's own admin listener: refused unless
 * `admin.allowProxiedAccess`, before any connection, so it never counts against an endpoint.
 */
export class AdminTargetRefusedError extends RouterFailure {
  constructor(service: string, endpoint: string) {
    super(
      'PRX_ERR_ADMIN_TARGET',
      `Refusing to route ${service} to ${endpoint}: it is this proxy's admin interface. ` +
        'Set admin.allowProxiedAccess: true to allow routing to it.',
      FailureFlag.Rejected,
    );
  }
}

/** How a timeout names what timed out. */
export interface TimeoutDetails {
  /** Finagle's service label; `unspecified` when the stack did not know it. */
  readonly serviceName?: string | undefined;
  /** Finagle's remote info; `Not Available` unless the client knows its peer. */
  readonly remoteInfo?: string | undefined;
  /** Known safe to send again (the request was never written). */
  readonly retryable?: boolean | undefined;
}

function timeoutFlags(details: TimeoutDetails | undefined): number {
  return details?.retryable === true ? FailureFlag.Timeout | FailureFlag.Retryable : FailureFlag.Timeout;
}

function timeoutMessage(timeoutMs: number, details: TimeoutDetails | undefined, explanation: string): string {
  return (
    `exceeded ${formatFinagleDuration(timeoutMs)} to ${details?.serviceName ?? 'unspecified'} while ${explanation}. ` +
    `Remote Info: ${details?.remoteInfo ?? 'Not Available'}`
  );
}

/** `service.totalTimeoutMs` elapsed (the whole request, retries included). */
export class TotalTimeoutError extends RouterFailure {
  readonly timeoutMs: number;
  constructor(timeoutMs: number, details?: TimeoutDetails) {
    super('PRX_ERR_TOTAL_TIMEOUT', timeoutMessage(timeoutMs, details, 'waiting for a response for the request, including retries (if applicable)'), timeoutFlags(details));
    this.timeoutMs = timeoutMs;
  }
}

/** `client.requestAttemptTimeoutMs` elapsed for one attempt. */
export class AttemptTimeoutError extends RouterFailure {
  readonly timeoutMs: number;
  constructor(timeoutMs: number, details?: TimeoutDetails) {
    super('PRX_ERR_ATTEMPT_TIMEOUT', timeoutMessage(timeoutMs, details, 'waiting for a response for an individual request, excluding retries'), timeoutFlags(details));
    this.timeoutMs = timeoutMs;
  }
}

/**
 * The caller went away (reset, or ended its side before any answer began) or stopped sending its
 * request while it was in flight: the upstream work is cancelled (Finagle's
 * CancelledRequestException). Counted under `failures/RequestCancelledError` in the client and
 * service stats, never against the endpoint: failure accrual and the balancer ignore it.
 */
export class RequestCancelledError extends RouterFailure {
  constructor() {
    super('PRX_ERR_REQUEST_CANCELLED', 'request cancelled: the client went away', FailureFlag.Interrupted);
  }
}
