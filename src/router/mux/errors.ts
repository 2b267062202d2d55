/**
 * The mux router's own failures (besides the core's): a Tdispatch whose destination or dtab is
 * not a path, a server over its `maxConcurrentRequests`, a request past its deadline.
 */
import { PrxError } from '../../core/errors.js';
import { formatFinagleDuration } from '../../core/duration.js';
import { FailureFlag, RouterFailure } from '../../service/failures.js';

/** A Tdispatch's `dst` or dtab could not be read as paths (answered with Rerr). */
export class MuxBadDestinationError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_MUX_BAD_DESTINATION', message);
  }
}

/** The server already has `maxConcurrentRequests` in flight: the request is nacked, untouched. */
export class MuxServerOverloadedError extends RouterFailure {
  constructor(max: number) {
    super('PRX_ERR_MUX_OVERLOADED', `server is at its limit of ${max} concurrent requests`, FailureFlag.Rejected | FailureFlag.Retryable);
  }
}

/** The request's deadline (its `com.twitter.finagle.Deadline` context) passed before an answer. */
export class MuxDeadlineExceededError extends RouterFailure {
  constructor(timeoutMs: number, dst: string) {
    super('PRX_ERR_MUX_DEADLINE_EXCEEDED', `exceeded ${formatFinagleDuration(timeoutMs)} deadline of the request to ${dst}`, FailureFlag.Timeout);
  }
}
