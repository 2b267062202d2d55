/**
 * How the thrift router answers a call it could not forward: an EXCEPTION message carrying a
 * TApplicationException of type INTERNAL_ERROR (thrift has no type for a proxy's failures; Finagle
 * servers answer failures of the service this way too), whose message says what failed in
 * Linkerd's words (no hosts with the dtabs, connection failure with the addresses, timeouts).
 */
import type { Dtab } from '../../naming/index.js';
import { errorMessage } from '../../core/errors.js';
import { richRoutingFailure } from '../../protocol/http/headers/proxy-errors.js';
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
  const rich = richRoutingFailure(err, { service: c.dst ?? 'unknown', baseDtab: c.baseDtab, localDtab: c.localDtab });
  return { type: AppExceptionType.INTERNAL_ERROR, message: `prx: ${errorMessage(rich ?? err)}` };
}

/** The EXCEPTION message answering call `name`/`seqid` with the failure. */
export function failureReply(proto: ThriftProtocolName, name: string, seqid: number, err: unknown, c: FailedCall): Buffer {
  return encodeAppException(proto, name, seqid, appExceptionFor(err, c));
}
