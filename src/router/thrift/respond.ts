/**
 * How the thrift router answers a call it could not forward: an EXCEPTION message carrying a
 * TApplicationException of type INTERNAL_ERROR (thrift has no type for a proxy's failures; Finagle
 * servers answer failures of the service this way too), whose one-line message says what failed in
 * Finagle's words (no hosts with the dtabs, the connection that failed, the timeout exceeded),
 * followed by the failure's stable code in brackets.
 */
import type { Dtab } from '../../naming/index.js';
import { errorMessage, PrxError } from '../../core/errors.js';
import { NoBrokersAvailableError } from '../../service/failures.js';
import { AppExceptionType, encodeAppException, type AppException } from '../../protocol/thrift/app-exception.js';
import type { ThriftProtocolName } from '../../protocol/thrift/message.js';

/** The request a failure happened on, as far as the answer depends on it. */
export interface FailedCall {
  readonly dst: string | undefined;
  readonly baseDtab: Dtab;
  readonly localDtab: Dtab | undefined;
}

/** The TApplicationException for a failure of call `c`. */
export function appExceptionFor(err: unknown, c: FailedCall): AppException {
  const message =
    err instanceof NoBrokersAvailableError
      ? `No hosts are available for ${c.dst ?? err.dst}, Dtab.base=[${c.baseDtab.show}], Dtab.local=[${c.localDtab?.show ?? ''}]. Remote Info: Not Available`
      : errorMessage(err);
  // The stable code last, for scripts and operators: `prx: <what happened> [PRX_ERR_…]`.
  return { type: AppExceptionType.INTERNAL_ERROR, message: err instanceof PrxError ? `prx: ${message} [${err.code}]` : `prx: ${message}` };
}

/** The EXCEPTION message answering call `name`/`seqid` with the failure. */
export function failureReply(proto: ThriftProtocolName, name: string, seqid: number, err: unknown, c: FailedCall): Buffer {
  return encodeAppException(proto, name, seqid, appExceptionFor(err, c));
}
