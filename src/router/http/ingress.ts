import type { InboundRequest, InboundResponse, ResponseOwner } from '../../protocol/http/h1/server.js';
import { accessLogEntryOf, type AccessLogEntry } from '../../protocol/http/access-log.js';
import { prepareRequestBody, readInboundRequest, stampOutboundRequest } from '../../protocol/http/inbound-request.js';
import { UnknownDestinationError, MaxConcurrentRequestsError, RoutingLoopError } from '../../protocol/http/headers/proxy-errors.js';
import type { Dtab, Path } from '../../naming/index.js';
import type { TraceId } from '../../service/tracing.js';
import { RequestCancelledError } from '../../service/failures.js';
import { AttemptHandle } from '../core/transport.js';
import type { OutboundRequest } from '../../protocol/http/client-transport.js';
import type { HttpPathService, HttpServed, HttpServerView, RequestScope } from './types.js';
import { writeErrorResponse } from './egress.js';
import { clientCertHeader } from '../../protocol/http/h1/tls-peer.js';
import { pathOf } from '../../protocol/http/identifiers/index.js';
import type { PolicyRequest } from '../../protocol/http/policies.js';


/** What ingress decided: `routed` leaves the destination in the context's `dst` and `localDtab`. */
export type IngressResult = { readonly kind: 'answered' } | { readonly kind: 'routed' };

const ANSWERED: IngressResult = Object.freeze({ kind: 'answered' });
const ROUTED: IngressResult = Object.freeze({ kind: 'routed' });

/**
 * Everything one inbound request carries through the router: the outbound request being built,
 * body replay state, the chosen service and attempt, and completion bookkeeping.
 */
export class RequestContext implements ResponseOwner, RequestScope {
  readonly server: HttpServerView;
  readonly req: InboundRequest;
  readonly res: InboundResponse;
  readonly started = performance.now();
  readonly bindDeadline: number;
  readonly out: OutboundRequest;
  service: HttpPathService | undefined;
  served: HttpServed | undefined;
  handle: AttemptHandle | undefined;
  dst: Path | undefined;
  localDtab: Dtab | undefined;
  traceId: TraceId | undefined;
  /** What the router's authorizers and loggers see of the request (set once identified, when it has any). */
  policyRequest: PolicyRequest | undefined;
  /** Every authorizer let the request through (authorizers then hear of its completion). */
  authorized = false;
  /** Status sent to the client (0 until the head is written). */
  status = 0;
  /** The response's Content-Length as sent, for the access log. */
  responseLength: number | undefined;
  #done = false;
  /** The response class to complete with once the forwarded response has been written out. */
  #successOnFinish = false;

  constructor(server: HttpServerView, req: InboundRequest, res: InboundResponse) {
    this.server = server;
    this.req = req;
    this.res = res;
    this.bindDeadline = Date.now() + server.router.cfg.bindingTimeoutMs;
    this.out = {
      method: req.method,
      path: req.url,
      headers: req.headers,
      body: null,
      upgrade: null,
      clientCert: undefined,
      chunked: req.chunked,
      hostBeforeRewrite: undefined,
    };
    res.owner = this;
  }

  /**
   * The response is over: complete the request; when the client left first, cancel the upstream
   * work (no further attempt starts, the exchange in flight is aborted and its connection closed).
   */
  responseClosed(): void {
    const res = this.res;
    if (!res.writableFinished) {
      // Gone before routing reached its first attempt: the handle made here stops it at once.
      (this.handle ??= new AttemptHandle()).abort(new RequestCancelledError(), true);
      this.finish(this.status, false);
      return;
    }
    this.finish(this.status, this.#successOnFinish);
  }

  /**
   * The forwarded body failed. An upstream failure (framing, a connection cut mid-body) counts
   * against the endpoint; before any byte went out the client gets a 502 with `prx-err` instead of
   * the broken response, and after that its connection is cut (the caller's part).
   */
  bodyFailed(err: Error, headSent: boolean): boolean {
    const served = this.served;
    if (served !== undefined && served.attempt.exchange.error === err) served.client.recordBodyFailure(served.attempt);
    if (headSent) return false;
    this.#successOnFinish = false;
    writeErrorResponse(this, err);
    return true;
  }

  /** The forwarded response is being written: once it is all out, the request completes as `success`. */
  succeedOnFinish(success: boolean): void {
    this.#successOnFinish = success;
  }

  /** Completes the request once (stats, access log); success per the response class. */
  finish(status: number, success: boolean): void {
    if (this.#done) return;
    this.#done = true;
    this.server.end(this, status, success);
  }

  rejectConcurrency(): IngressResult {
    writeErrorResponse(this, new MaxConcurrentRequestsError());
    return ANSWERED;
  }

  /**
   * Checks limits, reads and rewrites the context headers, identifies the request and prepares
   * its body. Writes the error response itself and answers `answered` when the request cannot go on.
   */
  ingress(): IngressResult | Promise<IngressResult> {
    const router = this.server.router;
    const req = this.req;
    const headers = req.headers;
    try {
      const out = this.out;
      const localDtab = readInboundRequest(req, out, this.server.cfg.clearContext);
      const url = out.path;
      const identified = router.identifier.identify({ method: out.method, url, httpVersion: req.httpVersion, headers });
      if (identified.kind === 'unidentified') {
        throw new UnknownDestinationError({ method: out.method, uri: url, remoteAddress: req.socket.remoteAddress, remotePort: req.socket.remotePort }, identified.reason);
      }
      if (identified.kind === 'redirect') return this.#redirect(identified.status, identified.location);
      // This router's own Via entry on the way in: the request looped back here (first revisit).
      if (router.via.seenInHeaders(headers)) throw new RoutingLoopError(identified.dst.show, router.label, router.via.token);
      if (router.policy.active) this.policyRequest = { path: pathOf(url), target: identified.meshTarget };
      if (identified.url !== undefined) out.path = identified.url;
      if (identified.authority !== undefined) out.headers.host = identified.authority;
      this.dst = identified.dst;
      this.localDtab = localDtab;
      stampOutboundRequest(req, out, identified.dst.show, localDtab, router.via.entry(req.httpVersion), this.server.cfg.timestampHeader);
      router.trace(this, headers);
      this.server.forwarded?.(this);
      out.clientCert = clientCertHeader(req);
      const reading = prepareRequestBody(req, out, this.server.bodyLimits);
      return reading === undefined ? ROUTED : reading.then(routed, (err: unknown) => this.#answerError(err));
    } catch (err) {
      return this.#answerError(err);
    }
  }

  /** A route rule's redirect: answered here, with no body, and counted as a success. */
  #redirect(status: number, location: string): IngressResult {
    this.status = status;
    this.responseLength = 0;
    this.succeedOnFinish(true);
    this.res.writeHead(status, { location, 'content-length': '0' });
    this.res.end();
    return ANSWERED;
  }

  #answerError(err: unknown): IngressResult {
    writeErrorResponse(this, err);
    return ANSWERED;
  }

  /** The access-log line of this request. */
  accessLogEntry(status: number): AccessLogEntry {
    return accessLogEntryOf(this.req, status, this.responseLength);
  }
}

function routed(): IngressResult {
  return ROUTED;
}
