import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import type { Dtab, Path } from '../../naming/index.js';
import { h2EndClass } from '../../protocol/h2/client-protocol.js';
import { DISCARD_SINK, H2RequestBody, type H2Exchange, type H2Request, type H2ResponseSink } from '../../protocol/h2/client-transport.js';
import { FLAG_END_STREAM, H2Code, StreamResetError } from '../../protocol/h2/errors.js';
import { formatGrpcTimeout, isGrpcContentType, parseGrpcTimeout } from '../../protocol/h2/grpc.js';
import { peerCertHeader } from '../../protocol/http/headers/client-cert.js';
import { clearContext, combineDeadlines, deadlineAfter, epochNanos, readDeadlineHeaders, readDtabHeaders, writeDeadlineHeader, writeDtabHeader } from '../../protocol/http/headers/context.js';
import { clearResponseContext } from '../../protocol/http/headers/error-response.js';
import { MaxConcurrentRequestsError, RoutingLoopError, UnknownDestinationError } from '../../protocol/http/headers/proxy-errors.js';
import { appendVia, checkCallDepth } from '../../protocol/http/headers/via.js';
import { pathOf } from '../../protocol/http/identifiers/index.js';
import { MeshctlRedirect, type PolicyRequest } from '../../protocol/http/policies.js';
import { RequestCancelledError } from '../../service/failures.js';
import type { TraceId } from '../../service/tracing.js';
import type { H2ServerStream } from '../../protocol/h2/wire/server-stream.js';
import type { Lease } from '../core/cache.js';
import { AttemptHandle } from '../core/transport.js';
import { answerFor, sendAnswer } from './respond.js';
import type { H2PathService, H2RouterHost, H2Served } from './types.js';
import type { H2ServerConfig } from './schema.js';

const NGHTTP2_FLAG_END_STREAM = FLAG_END_STREAM;

/** What a stream needs of its server. */
export interface H2ServerView {
  readonly router: H2RouterHost;
  readonly cfg: H2ServerConfig;
  readonly tls: boolean;
  readonly via: string;
  /** The stream is over (once): stats, access log. */
  end(call: H2Call, status: number, success: boolean): void;
}

/**
 * One inbound stream through the router: context headers, identification, routing through the
 * path cache, then the upstream response streamed back (head, body, trailers) or the failure
 * answered in h2's (or gRPC's) terms. A reset or departure on either side reaches the other.
 */
export class H2Call implements H2ResponseSink {
  readonly started = performance.now();
  readonly stream: H2ServerStream;
  readonly headers: IncomingHttpHeaders;
  readonly grpc: boolean;
  readonly server: H2ServerView;
  readonly bindDeadline: number;
  readonly handle = new AttemptHandle();
  readonly #hasBody: boolean;
  dst: Path | undefined;
  localDtab: Dtab | undefined;
  traceId: TraceId | undefined;
  served: H2Served | undefined;
  service: H2PathService | undefined;
  /** The client's address, kept for the access log (a closed stream no longer has its session). */
  readonly remoteAddress: string | undefined;
  /** The status sent downstream (0: none, or a reset). */
  status = 0;
  /** What the router's authorizers and loggers see of the stream (set once identified, when it has any). */
  policyRequest: PolicyRequest | undefined;
  /** Every authorizer let the stream through. */
  authorized = false;
  #lease: Lease<H2PathService> | undefined;
  #body: H2RequestBody | null = null;
  #done = false;

  constructor(server: H2ServerView, stream: H2ServerStream, headers: IncomingHttpHeaders, flags: number) {
    this.server = server;
    this.stream = stream;
    this.headers = headers;
    this.grpc = isGrpcContentType(headers['content-type']);
    this.#hasBody = (flags & NGHTTP2_FLAG_END_STREAM) === 0;
    this.bindDeadline = Date.now() + server.router.bindingTimeoutMs;
    this.remoteAddress = server.router.accessLog === undefined ? undefined : stream.session.socket.remoteAddress;
    // Errors surface through 'close' and rstCode; an 'error' listener keeps them from being thrown.
    stream.on('error', noop);
    stream.once('close', () => this.#closed());
  }

  /** Routes the stream; never throws (failures are answered on the stream). */
  async serve(overloaded: boolean): Promise<void> {
    try {
      if (overloaded) throw new MaxConcurrentRequestsError();
      const req = this.#inbound();
      const policy = this.server.router.policy;
      if (this.policyRequest !== undefined && policy.authorizers.length > 0) {
        await policy.authorize(this.policyRequest);
        this.authorized = true;
      }
      const lease = (this.#lease = this.server.router.pathService(this.dst as Path, this.localDtab as Dtab));
      const svc = (this.service = lease.value);
      const c = svc.classifier;
      req.classification = c;
      if (this.#hasBody) {
        const te = this.headers['te'];
        this.#body = new H2RequestBody(this.stream, c.requestBytes, typeof te === 'string' && te.includes('trailers'));
      }
      req.body = this.#body;
      if (this.handle.cancelled !== undefined) throw this.handle.cancelled;
      const served = await svc.serve(req, this.handle, this.bindDeadline, this.started);
      this.served = served;
      this.#forward(served);
    } catch (err) {
      this.#fail(err);
    }
  }

  /** Reads and rewrites the request's context headers and names it; throws what cannot go on. */
  #inbound(): H2Request {
    const h = this.headers;
    const server = this.server;
    const router = server.router;
    if (server.cfg.clearContext) clearContext(h);
    checkCallDepth(h);
    const localDtab = readDtabHeaders(h);
    this.localDtab = localDtab;
    this.#deadline(h);
    const method = (h[':method']) ?? 'GET';
    const path = (h[':path']) ?? '/';
    const id = router.identifier.identify({ method, url: path, httpVersion: '2.0', headers: h });
    if (id.kind === 'unidentified') {
      const socket = this.stream.session?.socket;
      throw new UnknownDestinationError({ method, uri: path, remoteAddress: socket?.remoteAddress, remotePort: socket?.remotePort }, id.reason);
    }
    if (id.kind === 'redirect') throw new MeshctlRedirect(id.status, id.location);
    if (router.via.seenInHeaders(h)) throw new RoutingLoopError(id.dst.show, router.label, router.via.token);
    this.dst = id.dst;
    if (router.policy.active) this.policyRequest = { path: pathOf(path), target: id.meshTarget };
    if (id.url !== undefined) h[':path'] = id.url;
    if (id.authority !== undefined) {
      h[':authority'] = id.authority;
      if (h['host'] !== undefined) h['host'] = id.authority;
    }
    h['prx-dst-service'] = id.dst.show;
    writeDtabHeader(h, localDtab);
    appendVia(h, server.via);
    this.traceId = router.trace(h);
    return { method, headers: h, body: null, classification: undefined, clientCert: this.#clientCert() };
  }

  /**
   * `prx-ctx-deadline` and `grpc-timeout` are the same deadline in two forms: the stricter of the
   * two travels on in both (gRPC's only on gRPC requests).
   */
  #deadline(h: IncomingHttpHeaders): void {
    let d = readDeadlineHeaders(h);
    const timeout = h['grpc-timeout'];
    const ms = typeof timeout === 'string' ? parseGrpcTimeout(timeout) : undefined;
    if (ms !== undefined) {
      const g = deadlineAfter(ms);
      d = d === undefined ? g : combineDeadlines(d, g);
    }
    writeDeadlineHeader(h, d);
    if (d !== undefined && this.grpc) {
      const left = Number(d.deadlineNanos - epochNanos()) / 1e6;
      h['grpc-timeout'] = formatGrpcTimeout(Math.max(0, left));
    }
  }

  /** The `x-forwarded-client-cert` value of a TLS client's certificate (once per session). */
  #clientCert(): string | undefined {
    const session = this.stream.session;
    return this.server.tls && session !== undefined ? peerCertHeader(session, session.socket as TLSSocket) : undefined;
  }

  /** Writes the upstream response head, then its body and trailers, as they come. */
  #forward(served: H2Served): void {
    const ex = served.attempt.exchange;
    const down = this.stream;
    if (down.destroyed || down.closed) {
      ex.abort(new RequestCancelledError());
      return;
    }
    const headers = this.#responseHeaders(ex);
    this.status = ex.status;
    this.#served = served;
    ex.onFinished = this.#onUpFinished;
    const buffered = ex.buffered;
    const empty = buffered === undefined || buffered.length === 0;
    if ((ex.ended && empty && ex.trailers === undefined) || noContent(this.headers[':method'], ex.status)) {
      // A head with END_STREAM (trailers-only gRPC), or a response that has no content (HEAD, 204,
      // 304): nothing follows; the (empty) rest is read so the upstream stream completes.
      down.respond(headers, { endStream: true });
      ex.forward(DISCARD_SINK);
    } else {
      down.respond(headers, { waitForTrailers: true });
      down.once('wantTrailers', () => {
        if (!down.destroyed) down.sendTrailers(this.#responseTrailers(ex));
      });
      down.on('drain', this.#onDownDrain);
      ex.forward(this);
    }
    if (ex.finished) this.#upstreamClosed(served);
  }

  #served: H2Served | undefined;
  readonly #onDownDrain = (): void => {
    this.#served?.attempt.exchange.resume();
  };
  readonly #onUpFinished = (): void => {
    const served = this.#served;
    if (served !== undefined) this.#upstreamClosed(served);
  };

  /** Response bytes for the client (the exchange's sink); false when its window is full. */
  data(chunk: Buffer): boolean {
    return this.stream.write(chunk);
  }

  /** The upstream body ended: end the client's stream (its trailers follow). */
  end(): void {
    if (!this.stream.destroyed) this.stream.end();
  }

  #responseHeaders(ex: H2Exchange): OutgoingHttpHeaders {
    const out = ex.headers as OutgoingHttpHeaders;
    appendVia(out as Record<string, string | string[] | undefined>, this.server.via);
    if (this.server.cfg.clearContext) clearResponseContext(out as Record<string, string | string[] | undefined>);
    return out;
  }

  #responseTrailers(ex: H2Exchange): OutgoingHttpHeaders {
    const t = ex.trailers;
    if (t === undefined) return {};
    if (this.server.cfg.clearContext) for (const k in t) if (k.startsWith('prx-')) delete t[k];
    return t;
  }

  /**
   * The upstream stream is over. Broken before its end (a reset, a lost session): the endpoint is
   * charged, and the client's stream is reset with the upstream's code (INTERNAL_ERROR when there is none).
   */
  #upstreamClosed(served: H2Served): void {
    const ex = served.attempt.exchange;
    this.#body?.drain();
    if (ex.ended) return;
    const err = ex.error;
    if (err instanceof StreamResetError && err.by === 'downstream') return;
    if (this.handle.cancelled !== undefined) return;
    served.client.recordBodyFailure(served.attempt);
    const down = this.stream;
    if (!down.destroyed && !down.closed) down.close(err instanceof StreamResetError && err.h2Code !== H2Code.NO_ERROR ? err.h2Code : H2Code.INTERNAL_ERROR);
  }

  #fail(err: unknown): void {
    const router = this.server.router;
    const answer = answerFor(err, { grpc: this.grpc, dst: this.dst?.show, baseDtab: router.baseDtab, localDtab: this.localDtab });
    if (answer.kind !== 'reset' || (err instanceof Error && !(err instanceof StreamResetError))) {
      router.log.debug({ err: err instanceof Error ? err.message : String(err), dst: this.dst?.show }, 'h2 request failed');
    }
    // A body nobody will read is let through and dropped, so the stream can close (one refused
    // before its body was taken up flows unread).
    if (this.#body !== null) this.#body.drain();
    else if (this.#hasBody) this.stream.resume();
    this.status = sendAnswer(this.stream, answer, this.server.cfg.clearContext, 8192);
  }

  /** The downstream stream closed: stop upstream work if it is still going, then complete. */
  #closed(): void {
    const down = this.stream;
    const served = this.served;
    const ex = served?.attempt.exchange;
    const reset = down.rstCode !== undefined && down.rstCode !== H2Code.NO_ERROR;
    if (ex === undefined || !ex.finished) {
      // The client left (or reset) before the exchange ended: cancel upstream (no further attempt).
      const cancel = reset ? new StreamResetError(down.rstCode ?? H2Code.CANCEL, 'downstream') : new RequestCancelledError();
      if (ex === undefined || reset || !down.writableFinished) this.handle.abort(cancel, true);
      if (reset) ex?.abort(cancel);
    }
    let success = false;
    if (served !== undefined) {
      const protocolClass = ex === undefined ? undefined : h2EndClass(ex);
      success = (protocolClass ?? served.responseClass) === 'success' && !reset;
      this.service?.record(success, performance.now() - this.started);
    }
    this.#lease?.release();
    this.#lease = undefined;
    this.#finish(success);
  }

  #finish(success: boolean): void {
    if (this.#done) return;
    this.#done = true;
    if (this.policyRequest !== undefined) this.server.router.policy.completed(this.policyRequest, this.status, performance.now() - this.started, this.authorized);
    this.server.end(this, this.status, success);
  }
}

/** Responses that carry no content whatever their framing says (RFC 9110 §6.4.1). */
function noContent(method: string | string[] | undefined, status: number): boolean {
  return method === 'HEAD' || status === 204 || status === 304;
}

function noop(): void {}
