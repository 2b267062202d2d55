import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { FailureFlag, RouterFailure } from '../../service/failures.js';
import { isSocketConnectFailure, isTlsFailure } from '../../service/connect-failures.js';
import type { StatsReceiver } from '../../service/stats/index.js';
import { MuxHandshakeError, MuxNackError, MuxSessionClosedError } from './errors.js';
import { MuxTransport, type MuxClassification, type MuxEndpointOptions, type MuxExchange, type MuxRequest } from './client-transport.js';
import { ReplyStatus } from './messages.js';

/** Whether an attempt that failed with `err` certainly did not reach the server's application. */
export function isUnsentMuxFailure(err: unknown): boolean {
  return err instanceof MuxNackError || err instanceof MuxSessionClosedError || err instanceof MuxHandshakeError || isSocketConnectFailure(err) || isTlsFailure(err);
}

/**
 * mux as the router core's client protocol: a session per endpoint; requests always replayable
 * (a mux request is one whole message); nacks and failures before the request left requeued on
 * another endpoint; an Rdispatch error is a failure, an ok reply a success.
 */
export class MuxClientProtocol {
  transport(address: Address, opts: MuxEndpointOptions): MuxTransport {
    return new MuxTransport(address, opts);
  }

  isReplayable(_req: MuxRequest): boolean {
    return true;
  }

  isTlsFailure(err: unknown): boolean {
    return isTlsFailure(err);
  }

  /** A nack is the server's answer: once requeues run out it is passed on as the nack it is. */
  isConnectFailure(err: unknown): boolean {
    return !(err instanceof MuxNackError) && isUnsentMuxFailure(err);
  }

  isRequeueable(err: unknown, ex: MuxExchange | undefined): boolean {
    if (err instanceof MuxNackError) return true;
    if (ex?.written === true && !(err instanceof MuxSessionClosedError)) return isSocketConnectFailure(err) || isTlsFailure(err);
    return isUnsentMuxFailure(err);
  }

  classify(_c: MuxClassification, _req: MuxRequest, ex: MuxExchange): ResponseClass {
    return ex.status === ReplyStatus.Ok ? 'success' : 'failure';
  }

  classifyFailure(_c: MuxClassification, _req: MuxRequest, error: Error): ResponseClass {
    // Only what certainly did not run (flagged Retryable: a nack, a failed connection) is retried:
    // a lost session or a timeout may have left the work done (Finagle's default classifier).
    return error instanceof RouterFailure && error.is(FailureFlag.Retryable) ? 'retryableFailure' : 'failure';
  }

  endClass(_ex: MuxExchange): ResponseClass | undefined {
    return undefined;
  }

  responseStats(_stats: StatsReceiver): { record(ex: MuxExchange): void } {
    return NO_RESPONSE_STATS;
  }
}

const NO_RESPONSE_STATS = { record: (_ex: MuxExchange): void => undefined };
