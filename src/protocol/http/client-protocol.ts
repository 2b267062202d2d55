import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import type { ResponseClassifier } from './classifiers.js';
import { errorCode, isSocketConnectFailure, isTlsFailure, isWriteFailure } from '../../service/connect-failures.js';
import { StatusCodeCounters, type StatsReceiver } from '../../service/stats/index.js';
import type { UpstreamExchange } from './upstream.js';
import { HttpTransport, isReplayable, type EndpointOptions, type OutboundRequest } from './client-transport.js';

// undici's and the lean h1 client's codes of a connection that failed before the request left.
const CLIENT_CONNECT_FAILURES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'PRX_ERR_UPSTREAM_CLOSED',
  'PRX_ERR_UPSTREAM_CONNECT_TIMEOUT',
  'PRX_ERR_UPSTREAM_POOL_CLOSED',
]);

/** Whether `err` is a failure to establish a connection (or to use it before anything was sent), TLS included. */
export function isConnectFailure(err: unknown): boolean {
  return isSocketConnectFailure(err) || CLIENT_CONNECT_FAILURES.has(errorCode(err)) || isTlsFailure(err);
}

/**
 * HTTP/1.1 as the router core's client protocol (router/core's `ClientProtocol`): its transport,
 * replay and requeue rules, classifiers and status stats.
 */
export class HttpClientProtocol {
  transport(address: Address, opts: EndpointOptions): HttpTransport {
    return new HttpTransport(address, opts);
  }

  isReplayable(req: OutboundRequest): boolean {
    return isReplayable(req);
  }

  isTlsFailure(err: unknown): boolean {
    return isTlsFailure(err);
  }

  /** A connect failure before the request was written, or a failed write before any response. */
  isRequeueable(err: unknown, ex: UpstreamExchange | undefined): boolean {
    if (!isConnectFailure(err)) return false;
    if (ex === undefined) return true;
    if (ex.responded) return false;
    return !ex.requestStarted || isWriteFailure(err);
  }

  classify(classifier: ResponseClassifier, req: OutboundRequest, ex: UpstreamExchange): ResponseClass {
    return classifier.classify({ method: req.method, status: ex.status, retryableHeader: ex.headers['prx-retryable'] === 'true', chunked: req.chunked });
  }

  classifyFailure(classifier: ResponseClassifier, req: OutboundRequest, error: Error): ResponseClass {
    return classifier.classify({ method: req.method, error, chunked: req.chunked });
  }

  /** HTTP/1.1 classifies at the head: a broken body is reported on its own (`recordBodyFailure`). */
  endClass(): ResponseClass | undefined {
    return undefined;
  }

  responseStats(stats: StatsReceiver): StatusStats {
    return new StatusStats(stats);
  }
}

/** `status/<code>` and `status/<class>XX` of a client's responses. */
class StatusStats {
  readonly #counters: StatusCodeCounters;
  constructor(stats: StatsReceiver) {
    this.#counters = new StatusCodeCounters(stats);
  }

  record(ex: UpstreamExchange): void {
    this.#counters.record(ex.status);
  }
}

