/**
 * mux's own failures (the protocol's catalogue): malformed or oversized frames, a session that
 * closed or was lost, and the peer's answers that are failures (Rerr, a nack, a ping left
 * unanswered). The router core's failures are rendered by the mux router as Rdispatch errors,
 * nacks or Rerr; these are what the wire itself can go wrong with.
 */
import { PrxError } from '../../core/errors.js';
import { FailureFlag, RouterFailure } from '../../service/failures.js';

/** A frame or message the peer sent does not follow the mux specification. */
export class MuxBadMessageError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MUX_BAD_MESSAGE', message);
  }
}

/** A frame, or a message reassembled from fragments, is larger than the configured limit. */
export class MuxMessageTooLargeError extends PrxError {
  readonly bytes: number;
  readonly limit: number;
  constructor(bytes: number, limit: number) {
    super('PRX_ERR_MUX_MESSAGE_TOO_LARGE', `mux message of ${bytes} bytes exceeds the limit of ${limit} bytes`);
    this.bytes = bytes;
    this.limit = limit;
  }
}

/**
 * The peer holds too much in partly sent (fragmented) messages on one connection: more bytes, or
 * more tags, than the connection-level budget allows.
 */
export class MuxPartialBudgetError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MUX_PARTIAL_BUDGET', message);
  }
}

/**
 * The session was closed, draining or not yet usable when the request was to be written: it never
 * left, so it may go to another endpoint.
 */
export class MuxSessionClosedError extends PrxError {
  constructor(message = 'mux session closed before the request was written') {
    super('PRX_ERR_MUX_SESSION_CLOSED', message);
  }
}

/** The connection under a session was lost (closed, reset, or its peer stopped answering pings) with the request in flight. */
export class MuxSessionLostError extends PrxError {
  constructor(message: string, options?: ErrorOptions) {
    super('PRX_ERR_MUX_SESSION_LOST', message, options);
  }
}

/** The peer answered a message with Rerr: it could not interpret or act on it (Finagle's ServerError). */
export class MuxServerError extends PrxError {
  constructor(why: string) {
    super('PRX_ERR_MUX_RERR', why);
  }
}

/** The session handshake (Tinit/Rinit) failed: the peer refused the version or answered out of turn. */
export class MuxHandshakeError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MUX_HANDSHAKE', message);
  }
}

/**
 * The upstream nacked the request (Rdispatch or Rreq status 2): it was not processed, so it is safe
 * to send again, to any endpoint (Finagle's retryable nack).
 */
export class MuxNackError extends RouterFailure {
  constructor(message = 'The request was nacked by the server') {
    super('PRX_ERR_MUX_NACK', message, FailureFlag.Retryable | FailureFlag.Rejected);
  }
}
