/**
 * The thriftmux server's own failures (besides the core's): a mux request whose body is no thrift
 * call, a destination or dtab that is no path, a server over its `maxConcurrentRequests`, a request
 * past its deadline context.
 */
import { PrxError } from '../../core/errors.js';
import { formatFinagleDuration } from '../../core/duration.js';
import { FailureFlag, RouterFailure } from '../../service/failures.js';

/** A Tdispatch (or Treq) body that does not start with a thrift CALL or ONEWAY message (answered with an Rdispatch error). */
export class ThriftMuxBadRequestError extends PrxError {
  constructor(message: string) {
    super('PRX_ERR_THRIFTMUX_BAD_REQUEST', message);
  }
}

/** The server already has `maxConcurrentRequests` in flight: the request is nacked, untouched. */
export class ThriftMuxOverloadedError extends RouterFailure {
  constructor(max: number) {
    super('PRX_ERR_THRIFTMUX_OVERLOADED', `server is at its limit of ${max} concurrent requests`, FailureFlag.Rejected | FailureFlag.Retryable);
  }
}

/** The request's `com.twitter.finagle.Deadline` context passed before an answer. */
export class ThriftMuxDeadlineExceededError extends RouterFailure {
  constructor(timeoutMs: number, dst: string) {
    super('PRX_ERR_THRIFTMUX_DEADLINE_EXCEEDED', `exceeded ${formatFinagleDuration(timeoutMs)} deadline of the request to ${dst}`, FailureFlag.Timeout);
  }
}
