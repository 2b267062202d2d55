import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { isSocketConnectFailure, isTlsFailure } from '../../service/connect-failures.js';
import { FailureFlag, RouterFailure } from '../../service/failures.js';
import type { Counter, StatsReceiver } from '../../service/stats/index.js';
import { ThriftConnectionClosedError } from './errors.js';
import { ThriftTransport, type ThriftEndpointOptions, type ThriftExchange, type ThriftRequest } from './client-transport.js';
import { MessageType } from './message.js';

/**
 * How a thrift service classifies replies: prx's own decision. Any REPLY is a success, even one
 * carrying an exception the IDL declares (the result struct is never decoded); an EXCEPTION
 * message (TApplicationException) counts as a failure, for failure accrual and stats. Linkerd 1's
 * thrift router forwards raw bytes without looking at the message type, and Finagle's default
 * classifier counts any reply a success; prx reads the type byte it already has. No reply is
 * retried: only calls that never reached a peer are sent again.
 */
export type ThriftClassification = Readonly<Record<never, never>>;

export const THRIFT_CLASSIFICATION: ThriftClassification = Object.freeze({});

/** Whether an attempt that failed with `err` certainly did not reach the peer's application. */
function isUnsent(err: unknown): boolean {
  if (err instanceof ThriftConnectionClosedError) return !err.written;
  return isSocketConnectFailure(err) || isTlsFailure(err);
}

/** Thrift as the router core's client protocol. */
export class ThriftClientProtocol {
  transport(address: Address, opts: ThriftEndpointOptions): ThriftTransport {
    return new ThriftTransport(address, opts);
  }

  /** The whole call is in memory: it can always be sent again. */
  isReplayable(_req: ThriftRequest): boolean {
    return true;
  }

  isTlsFailure(err: unknown): boolean {
    return isTlsFailure(err);
  }

  isConnectFailure(err: unknown): boolean {
    return isUnsent(err);
  }

  isRequeueable(err: unknown, ex: ThriftExchange | undefined): boolean {
    if (ex?.written === true) return false;
    return isUnsent(err);
  }

  classify(_c: ThriftClassification, _req: ThriftRequest, ex: ThriftExchange): ResponseClass {
    return ex.replyHeader?.type === MessageType.EXCEPTION ? 'failure' : 'success';
  }

  /** A failure known not to have reached a peer (flagged Retryable by the core) may be retried. */
  classifyFailure(_c: ThriftClassification, _req: ThriftRequest, err: Error): ResponseClass {
    return err instanceof RouterFailure && err.is(FailureFlag.Retryable) ? 'retryableFailure' : 'failure';
  }

  endClass(): undefined {
    return undefined;
  }

  responseStats(stats: StatsReceiver): ThriftResponseStats {
    return new ThriftResponseStats(stats);
  }
}

/** A client's `exceptions` counter: replies that were TApplicationExceptions. */
export class ThriftResponseStats {
  readonly #exceptions: Counter;
  constructor(stats: StatsReceiver) {
    this.#exceptions = stats.counter('thrift', 'application_exceptions');
  }

  record(ex: ThriftExchange): void {
    if (ex.replyHeader?.type === MessageType.EXCEPTION) this.#exceptions.incr();
  }
}
