import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { errorCode, isSocketConnectFailure, isTlsFailure } from '../../service/connect-failures.js';
import { StatusCodeCounters, type StatsReceiver } from '../../service/stats/index.js';
import type { H2Classification } from './client-transport.js';
import { H2Transport, type H2EndpointOptions, type H2Exchange, type H2Request } from './client-transport.js';
import { H2Code, H2ConnectionError, StreamResetError } from './errors.js';
import { GrpcStatusCounters, ResetCounters } from './stats.js';

// A stream that never left: its session was closed or going away, or the TLS peer refused h2.
const NEVER_SENT: ReadonlySet<string> = new Set(['PRX_ERR_H2_SESSION_CLOSED', 'PRX_ERR_H2_ALPN', 'PRX_ERR_H2_CONNECT_TIMEOUT']);

/** Whether an attempt that failed with `err` certainly did not reach the peer's application. */
export function isUnsentFailure(err: unknown): boolean {
  if (err instanceof StreamResetError) return err.by === 'upstream' && err.h2Code === H2Code.REFUSED_STREAM;
  if (err instanceof H2ConnectionError) return err.beforeSettings;
  return isSocketConnectFailure(err) || isTlsFailure(err) || NEVER_SENT.has(errorCode(err)) || errorCode(err) === HANDSHAKE_ALERT;
}

// A TLS alert from the peer (no_application_protocol when it offers no h2, a rejected client
// certificate): a stream only sees the socket's raw error before the peer's SETTINGS, so with this
// code its handshake failed and nothing left.
const HANDSHAKE_ALERT = 'EPROTO';

/**
 * HTTP/2 as the router core's client protocol: a session per endpoint, requests replayable while
 * their body fits the retry buffer, refused streams and failed connections requeued, and responses
 * classified at their head or, for classifiers that need it (gRPC status), at their end.
 */
export class H2ClientProtocol {
  /** Client and service counters wait for the end of a streamed response (its gRPC status). */
  readonly classifiesAtEnd = true;

  transport(address: Address, opts: H2EndpointOptions): H2Transport {
    return new H2Transport(address, opts);
  }

  isReplayable(req: H2Request): boolean {
    return req.body === null || req.body.replayable;
  }

  isTlsFailure(err: unknown): boolean {
    return isTlsFailure(err);
  }

  /**
   * Whether a failure is the connection's (refused, reset, TLS, a session gone): one that
   * requeues could not place elsewhere is a failed connection. A refused stream is the peer's
   * answer: after the requeues it passes through as the reset it is.
   */
  isConnectFailure(err: unknown): boolean {
    return !(err instanceof StreamResetError) && isUnsentFailure(err);
  }

  isRequeueable(err: unknown, ex: H2Exchange | undefined): boolean {
    if (ex?.responded === true) return false;
    return isUnsentFailure(err);
  }

  classify(c: H2Classification, req: H2Request, ex: H2Exchange): ResponseClass {
    return c.classifier.classify({
      method: req.method,
      status: ex.status,
      ended: ex.ended,
      grpcStatus: ex.grpcStatus,
      retryableHeader: ex.headers['prx-retryable'] === 'true',
    });
  }

  classifyFailure(c: H2Classification, req: H2Request, error: Error): ResponseClass {
    return c.classifier.classify({ method: req.method, ended: false, error });
  }

  endClass(ex: H2Exchange): ResponseClass | undefined {
    return h2EndClass(ex);
  }

  responseStats(stats: StatsReceiver): H2ResponseStats {
    return new H2ResponseStats(stats);
  }
}

/** The class of an exchange once it has ended, for classifiers that need the end (gRPC); else undefined. */
export function h2EndClass(ex: H2Exchange): ResponseClass | undefined {
  const c = ex.req.classification;
  if (c === undefined || !c.classifier.needsEnd) return undefined;
  return c.classifier.classify({
    method: ex.req.method,
    status: ex.status,
    ended: ex.ended,
    grpcStatus: ex.grpcStatus,
    retryableHeader: ex.headers['prx-retryable'] === 'true',
    ...(ex.error === undefined ? {} : { error: ex.error }),
  });
}

/** A client's `status/<code>` at the head, `grpc/<code>` once known, `resets/<CODE>` of upstream resets. */
export class H2ResponseStats {
  readonly #status: StatusCodeCounters;
  readonly grpc: GrpcStatusCounters;
  readonly resets: ResetCounters;
  constructor(stats: StatsReceiver) {
    this.#status = new StatusCodeCounters(stats);
    this.grpc = new GrpcStatusCounters(stats);
    this.resets = new ResetCounters(stats);
  }

  record(ex: H2Exchange): void {
    this.#status.record(ex.status);
    // A response may be over before the core counts its head (it ended in the same read).
    if (ex.finished) this.ended(ex);
    else ex.endStats = this;
  }

  /** The exchange ended: its gRPC status and its reset, if any. */
  ended(ex: H2Exchange): void {
    const g = ex.grpcStatus;
    if (g !== undefined) this.grpc.record(g);
    if (ex.error instanceof StreamResetError && ex.error.by === 'upstream') this.resets.record(ex.error.h2Code);
  }
}
