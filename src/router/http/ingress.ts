import type { InboundRequest, InboundResponse, ResponseOwner } from '../../protocol/http/h1/server.js';
import type { AccessLogEntry } from '../../protocol/http/access-log.js';
import { readDeadlineHeaders, writeDeadlineHeader, readDtabHeaders, writeDtabHeader, clearContext } from '../../protocol/http/headers/context.js';
import { stripHopByHopHeaders } from '../../protocol/http/headers/hop-by-hop.js';
import { PayloadTooLargeError, UnknownDestinationError, MaxConcurrentRequestsError, RoutingLoopError } from '../../protocol/http/headers/proxy-errors.js';
import { appendViaToRequest, checkCallDepth } from '../../protocol/http/headers/via.js';
import type { Dtab, Path } from '../../naming/index.js';
import type { TraceId } from '../../service/tracing.js';
import { RequestCancelledError } from '../../service/failures.js';
import { AttemptHandle } from '../core/transport.js';
import type { OutboundRequest } from '../../protocol/http/client-transport.js';
import type { HttpPathService, HttpServed, HttpServerView, RequestScope } from './types.js';
import { writeErrorResponse } from './egress.js';
import { clientCertHeader } from '../../protocol/http/h1/tls-peer.js';

/** Bodies up to this size are buffered so the request can be retried; larger ones stream. */
export const RETRY_BUFFER_BYTES = 8 * 1024;


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
  /** Status sent to the client (0 until the head is written). */
  status = 0;
  /**
   * The response's Content-Length as sent, for the access log.
   */
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
      // The client's hop-by-hop list applies to the client's headers only: stripped before prx
      // adds its own, so `Connection: prx-dst-service` (or `via`, `forwarded`…) cannot remove them.
      const upgrading = req.upgrade;
      stripHopByHopHeaders(headers, { keepUpgrade: upgrading });
      // Absolute-form targets (clients using prx as an HTTP proxy) become origin-form plus Host,
      // as Linkerd's ProxyRewriteFilter does, before anything reads the URI. The server let only
      // origin-form, `*` (OPTIONS) and absolute-form it could parse through (CONNECT is a 405).
      if (this.out.path.charCodeAt(0) !== 0x2f && this.out.path !== '*') {
        const u = new URL(this.out.path);
        this.out.path = `${u.pathname}${u.search}`;
        headers.host = u.host;
      }
      const url = this.out.path;
      if (this.server.cfg.clearContext) clearContext(headers);
      checkCallDepth(headers);
      const localDtab = readDtabHeaders(headers);
      writeDeadlineHeader(headers, readDeadlineHeaders(headers));

      const identified = router.identifier.identify({ method: this.out.method, url, httpVersion: req.httpVersion, headers });
      if (identified.kind === 'unidentified') {
        throw new UnknownDestinationError({ method: this.out.method, uri: url, remoteAddress: req.socket.remoteAddress, remotePort: req.socket.remotePort }, identified.reason);
      }
      // This router's own Via entry on the way in: the request looped back here (first revisit).
      if (router.via.seenInHeaders(headers)) throw new RoutingLoopError(identified.dst.show, router.label, router.via.token);
      if (identified.url !== undefined) this.out.path = identified.url;
      this.dst = identified.dst;
      this.localDtab = localDtab;
      headers['prx-dst-service'] = identified.dst.show;
      writeDtabHeader(headers, localDtab);
      router.trace(this, headers);
      if (upgrading) {
        this.out.upgrade = (headers['upgrade']) ?? 'websocket';
        delete headers['upgrade'];
        delete headers['connection'];
      }
      appendViaToRequest(headers, router.via.entry(req.httpVersion));
      const stamp = this.server.cfg.timestampHeader;
      if (stamp !== undefined) headers[stamp.toLowerCase()] = String(Date.now());
      this.server.forwarded?.(this);
      this.out.clientCert = clientCertHeader(req);
      if (headers['expect'] !== undefined) delete headers['expect'];
      const reading = this.#prepareBody();
      return reading === undefined ? ROUTED : reading.then(routed, (err: unknown) => this.#answerError(err));
    } catch (err) {
      return this.#answerError(err);
    }
  }

  #answerError(err: unknown): IngressResult {
    writeErrorResponse(this, err);
    return ANSWERED;
  }

  /** Sets the outbound body; a promise only when the body has to be read (and buffered) first. */
  #prepareBody(): Promise<void> | undefined {
    const req = this.req;
    const rc = this.server.router.cfg;
    const n = req.contentLength;
    if (n >= 0) {
      const limit = rc.maxRequestKB * 1024;
      if (n > limit) throw new PayloadTooLargeError(n, limit);
      if (n === 0) return undefined;
      if (n <= RETRY_BUFFER_BYTES || !rc.streamingEnabled) {
        return req.readBody(n).then((body) => {
          this.out.body = body;
        });
      }
      this.out.body = req.bodyStream();
      return undefined;
    }
    if (req.chunked) {
      // Chunked: forwarded as a stream (never retried). Without streaming, it is aggregated up to the limit.
      if (!rc.streamingEnabled) {
        return req.readBody(rc.maxRequestKB * 1024).then((body) => {
          this.out.body = body;
          req.headers['content-length'] = String(body.length);
        });
      }
      this.out.body = req.bodyStream();
    }
    return undefined;
  }

  /** The access-log line of this request. */
  accessLogEntry(status: number): AccessLogEntry {
    const req = this.req;
    const h = req.headers;
    const cl = this.responseLength;
    return {
      ...(typeof h.host === 'string' ? { host: h.host } : {}),
      remoteHost: req.socket.remoteAddress ?? '-',
      time: Date.now(),
      method: req.method,
      uri: req.url,
      protocol: `HTTP/${req.httpVersion}`,
      status,
      bytes: cl === undefined ? '-' : Number(cl),
      ...(typeof h.referer === 'string' ? { referer: h.referer } : {}),
      ...(typeof h['user-agent'] === 'string' ? { userAgent: h['user-agent'] } : {}),
    };
  }
}

function routed(): IngressResult {
  return ROUTED;
}
