/**
 * The seam between the router core and a protocol's client side: what the core needs of one
 * attempt in flight (an {@link Exchange}), of an endpoint's connections (a {@link Transport}) and of
 * the protocol's requests (a {@link ClientProtocol}). One strategy object per router, methods not
 * per-request closures, so the hot path stays monomorphic.
 */
import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import type { StatsReceiver } from '../../service/stats/index.js';

/** One attempt in flight on a transport (an HTTP/1.1 exchange, an h2 stream, a mux tag). */
export interface Exchange {
  /** Settles with the response head (the attempt's answer), or rejects with its failure. */
  readonly head: Promise<unknown>;
  /** The failure that ended the exchange, if one did. */
  readonly error: Error | undefined;
  /** The whole response has been received (or the exchange failed). */
  readonly finished: boolean;
  /**
   * Set by the core when the response's outcome is only settled at its end (a streaming body
   * counted a success at its head; a class known only from trailers): the endpoint hears of it
   * when the exchange ends.
   */
  outcomePending: boolean;
  /** The class decided at the head; the end-of-stream class may override it. */
  headClass: ResponseClass | undefined;
  /**
   * With a protocol that {@link ClientProtocol.classifiesAtEnd}: the logical name whose client
   * counters wait for the exchange's end (set by the core).
   */
  pendingService?: string | undefined;
  /** Stops the exchange (timeout, the caller left): frees its connection or stream. */
  abort(err: Error): void;
  /** Releases a response about to be retried (its body is drained or dropped). */
  discard(): void;
}

/** An endpoint's connections: an h1 pool, an h2 or mux session. */
export interface Transport<Req, Ex extends Exchange> {
  /** Sends `req`; `onDone` runs once when the exchange ends, however it ends. */
  dispatch(req: Req, onDone: (ex: Ex) => void): Ex;
  /** Open connections (the client's `connections` gauge). */
  readonly connections: number;
  /**
   * True when one more request would exceed what the transport may queue, given `load` requests
   * in flight on it: an h1 pool's connections plus waiters, a session's concurrent streams.
   */
  saturated(load: number): boolean;
  /** Stops taking requests; in-flight ones finish, then connections close. */
  close(): Promise<void>;
  /** Closes every connection now, failing in-flight requests. */
  destroy(): Promise<void>;
}

/** What the core asks a protocol about its requests, responses and failures (client side). */
export interface ClientProtocol<Req, Ex extends Exchange, TransportOpts, Classifier> {
  /**
   * Whether a response's final class may only be known at its end (gRPC status in trailers): the
   * client's request/success/failure counters then wait for the end of streamed responses.
   */
  readonly classifiesAtEnd?: boolean;
  /** The transport of one endpoint. */
  transport(address: Address, opts: TransportOpts): Transport<Req, Ex>;
  /** Whether the request can be sent again (no body, a buffered one, a stream not yet read). */
  isReplayable(req: Req): boolean;
  /** Whether `err` is a failed TLS handshake (logged, rate-limited, for the operator). */
  isTlsFailure(err: unknown): boolean;
  /**
   * Whether a requeueable failure is the connection's, so that running out of requeues fails the
   * request with a ConnectionFailedError; false keeps the failure as it is (an h2 refused stream).
   * Absent: every requeueable failure is a connection's.
   */
  isConnectFailure?(err: unknown): boolean;
  /** Whether an attempt that failed with `err` is safe to send to another endpoint (nothing reached the peer). */
  isRequeueable(err: unknown, ex: Ex | undefined): boolean;
  /** The class of a response, at its head: decides retries, and stats unless {@link endClass} overrides it. */
  classify(classifier: Classifier, req: Req, ex: Ex): ResponseClass;
  /** The class of an attempt that failed before a response. */
  classifyFailure(classifier: Classifier, req: Req, err: Error): ResponseClass;
  /**
   * The class of a response once it has ended, when the protocol only knows it then (gRPC status
   * in trailers); undefined keeps the head's class. Counts for stats and failure accrual.
   */
  endClass(ex: Ex): ResponseClass | undefined;
  /** Per-client response stats beyond the core's (HTTP's status codes), built once per client. */
  responseStats(stats: StatsReceiver): ResponseStats<Ex>;
}

/** Protocol-specific per-response stats of a client. */
export interface ResponseStats<Ex> {
  record(ex: Ex): void;
}

/**
 * The request's current attempt, so a timeout or the caller going away can abort it. One per
 * inbound request, reused across attempts.
 */
export class AttemptHandle {
  exchange: Exchange | undefined;
  /** Set when the caller is gone: no further attempt may start. */
  cancelled: Error | undefined;

  /** Aborts the exchange in flight; `final` also stops further attempts. */
  abort(err: Error, final: boolean): void {
    if (final) this.cancelled = err;
    this.exchange?.abort(err);
  }
}
