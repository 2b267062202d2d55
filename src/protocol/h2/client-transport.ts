/**
 * The h2 client side as the router core's transport: one multiplexed session per endpoint
 * (prx's own HTTP/2 client: prior knowledge in plaintext, ALPN `h2` over TLS), each attempt a
 * stream. Request bodies are streamed with back-pressure and kept (up to the retry buffer) so a
 * retry can replay them; a response whose class is only known at its end is read ahead within the
 * response buffer and the classification timeout before the core classifies it.
 */
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { connect as netConnect, type Socket } from 'node:net';
import type * as Tls from 'node:tls';
import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import { H2Code, H2SessionClosedError, StreamResetError } from './errors.js';
import type { H2Classifier } from './classifiers.js';
import { readGrpcStatus } from './grpc.js';
import type { H2RequestBody } from './request-body.js';
import { H2ClientSession, type H2SessionSettings, type SessionOwner } from './wire/client-session.js';
import type { H2ClientStream, H2Fields, H2StreamHandler } from './wire/client-stream.js';
import { requestFields } from './wire/fields.js';

export { H2RequestBody } from './request-body.js';
export type { H2SessionSettings } from './wire/client-session.js';

/** How a service classifies its responses and how much it may buffer for retries. */
export interface H2Classification {
  readonly classifier: H2Classifier;
  readonly classificationTimeoutMs: number;
  readonly requestBytes: number;
  readonly responseBytes: number;
}

/** One request as the router sends it upstream (the same object across retries). */
export interface H2Request {
  readonly method: string;
  /** Pseudo-headers and headers as sent upstream (the router stamps `prx-dst-*` per attempt). */
  readonly headers: OutgoingHttpHeaders;
  /** The body, or null when the request ended with its headers (set once the service is known). */
  body: H2RequestBody | null;
  /** Set by the router from the service's parameters before the request is served. */
  classification: H2Classification | undefined;
  /** The downstream TLS client's certificate as `x-forwarded-client-cert`, for clients that forward it. */
  readonly clientCert: string | undefined;
}

/** What an endpoint's session is built with. */
export interface H2EndpointOptions {
  readonly settings: H2SessionSettings;
  readonly tls: ClientTlsSettings | undefined;
  /** clientSession.idleTimeMs / lifeTimeMs: the session closes itself after these. */
  readonly idleTimeMs: number | undefined;
  readonly lifeTimeMs: number | undefined;
  /** Streams beyond the peer's concurrency limit that may wait in the session (hostConnectionPool.maxWaiters). */
  readonly maxWaiters: number;
}

/** Where a forwarded response goes (the downstream stream). */
export interface H2ResponseSink {
  /** False when the client pushes back: credit is held until {@link H2Exchange.resume}. */
  data(chunk: Buffer): boolean;
  /** The upstream response ended (END_STREAM): trailers, if any, are in the exchange. */
  end(): void;
}

/** A sink that drops what it is given (responses without content). */
export const DISCARD_SINK: H2ResponseSink = { data: () => true, end: () => undefined };

/** One attempt: an upstream stream and what it answered. */
export class H2Exchange implements H2StreamHandler {
  readonly head: Promise<void>;
  readonly req: H2Request;
  readonly stream: H2ClientStream | undefined;
  status = 0;
  headers: IncomingHttpHeaders = EMPTY_HEADERS;
  trailers: IncomingHttpHeaders | undefined;
  error: Error | undefined;
  /** The response head arrived. */
  responded = false;
  /** The upstream stream ended cleanly (END_STREAM received). */
  ended = false;
  finished = false;
  outcomePending = false;
  headClass: ResponseClass | undefined;
  /** The service a deferred outcome is counted for (the core's end-of-stream counting). */
  pendingService: string | undefined;
  /** Response bytes received before the router forwards them (read ahead, or waiting). */
  buffered: Buffer[] | undefined;
  /** Told when the exchange ends (the client's end-of-stream stats). */
  endStats: { ended(ex: H2Exchange): void } | undefined;
  /** The router's hook for the end of the upstream stream (after the core's). */
  onFinished: ((ex: H2Exchange) => void) | undefined;
  /** The gRPC status once the exchange has finished (null: not read yet). */
  #grpcStatus: number | undefined | null = null;
  #resolve!: () => void;
  #reject!: (e: Error) => void;
  #settled = false;
  readonly #onDone: (ex: H2Exchange) => void;
  /** Read-ahead in progress: bytes so far and its timer. */
  #aheadBytes = -1;
  #aheadTimer: NodeJS.Timeout | undefined;
  #sink: H2ResponseSink | undefined;
  /** Bytes given to the sink or buffered whose credit is not yet returned. */
  #held = 0;

  constructor(req: H2Request, session: H2ClientSession | Error, fields: string[], onDone: (ex: H2Exchange) => void) {
    this.req = req;
    this.#onDone = onDone;
    this.head = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // The core always awaits the head; this only keeps a rejection nobody awaits from being reported.
    this.head.catch(noop);
    if (session instanceof Error) {
      this.stream = undefined;
      this.error = session;
      this.finished = true;
      queueMicrotask(() => {
        this.#fail(session);
        onDone(this);
      });
      return;
    }
    const body = req.body;
    this.stream = session.request(fields, body === null, this);
    body?.attach(this.stream);
  }

  /**
   * The response's gRPC status: from its trailers, or from a trailers-only head. Read once the
   * exchange has finished (its classifier, the client's and the server's stats all ask).
   */
  get grpcStatus(): number | undefined {
    if (this.#grpcStatus !== null) return this.#grpcStatus;
    const h = this.headers;
    const g = readGrpcStatus(this.trailers) ?? (this.ended || h['grpc-status'] !== undefined ? readGrpcStatus(h) : undefined);
    if (this.finished) this.#grpcStatus = g;
    return g;
  }

  /** The exchange is no longer wanted (a timeout, the caller left): reset the stream with CANCEL. */
  abort(err: Error): void {
    this.error ??= err;
    this.stream?.reset(H2Code.CANCEL);
  }

  /** The response is dropped for a retry. */
  discard(): void {
    const s = this.stream;
    if (s === undefined) return;
    this.req.body?.detach(s);
    s.reset(H2Code.CANCEL);
  }

  /**
   * Hands the response's body to `sink`: what was buffered first, the rest as it comes, and the
   * end. Credit returns to the upstream as the sink takes bytes without pushing back.
   */
  forward(sink: H2ResponseSink): void {
    this.#stopReadAhead();
    this.#sink = sink;
    const buffered = this.buffered;
    this.buffered = undefined;
    let ok = true;
    if (buffered !== undefined) for (const chunk of buffered) ok = sink.data(chunk) && ok;
    if (ok) this.resume();
    if (this.ended) sink.end();
  }

  /** The sink drained: return the credit held for what it took. */
  resume(): void {
    const held = this.#held;
    this.#held = 0;
    this.stream?.consumed(held);
  }

  // ---- H2StreamHandler -----------------------------------------------------------------------

  onHead(status: number, headers: H2Fields, endStream: boolean): void {
    this.responded = true;
    this.status = status;
    this.headers = headers;
    // END_STREAM on the head: a response without body (gRPC trailers-only); onEnd follows.
    if (endStream) this.ended = true;
    const c = this.req.classification;
    if (c === undefined || !c.classifier.needsEnd || endStream || this.req.body?.replayable === false) this.#succeed();
    else this.#readAhead(c);
  }

  onData(chunk: Buffer): void {
    const sink = this.#sink;
    if (sink !== undefined) {
      if (sink.data(chunk) && this.#held === 0) this.stream?.consumed(chunk.length);
      else this.#held += chunk.length;
      return;
    }
    (this.buffered ??= []).push(chunk);
    if (this.#aheadBytes < 0) {
      // Waiting for the router: the upstream is held back by the stream's window meanwhile.
      this.#held += chunk.length;
      return;
    }
    // Read ahead for classification consumes (never waits on flow control) up to the buffer.
    this.stream?.consumed(chunk.length);
    this.#aheadBytes += chunk.length;
    const c = this.req.classification;
    if (c !== undefined && this.#aheadBytes > c.responseBytes) this.#endReadAhead();
  }

  onTrailers(trailers: H2Fields): void {
    this.trailers = trailers;
  }

  onEnd(): void {
    this.ended = true;
    if (this.#aheadBytes >= 0) this.#endReadAhead();
    this.#sink?.end();
  }

  onDrain(): void {
    const s = this.stream;
    if (s !== undefined) this.req.body?.drained(s);
  }

  onClose(error: Error | undefined): void {
    this.#stopReadAhead();
    this.finished = true;
    const s = this.stream;
    if (s !== undefined) this.req.body?.detach(s);
    if (!this.ended || error !== undefined) this.error ??= error ?? new StreamResetError(H2Code.NO_ERROR, 'upstream');
    if (!this.responded || !this.#settled) this.#fail(this.error ?? new StreamResetError(H2Code.NO_ERROR, 'upstream'));
    this.endStats?.ended(this);
    this.#onDone(this);
    this.onFinished?.(this);
  }

  /**
   * Reads the response until it ends, `responseBytes` are buffered or the classification timeout
   * passes, so its class (gRPC status in trailers) can decide a retry.
   */
  #readAhead(c: H2Classification): void {
    this.#aheadBytes = 0;
    this.buffered = [];
    this.#aheadTimer = setTimeout(() => this.#endReadAhead(), c.classificationTimeoutMs);
  }

  #stopReadAhead(): void {
    if (this.#aheadBytes < 0) return;
    this.#aheadBytes = -1;
    clearTimeout(this.#aheadTimer);
    this.#aheadTimer = undefined;
  }

  #endReadAhead(): void {
    this.#stopReadAhead();
    this.#succeed();
  }

  #succeed(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve();
  }

  #fail(err: Error): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(err);
  }
}

const EMPTY_HEADERS: IncomingHttpHeaders = Object.freeze({});

function noop(): void {}

/** The connections of one endpoint: a single multiplexed session, reopened when it goes away. */
export class H2Transport implements SessionOwner {
  readonly #host: string;
  readonly #port: number;
  readonly #opts: H2EndpointOptions;
  #session: H2ClientSession | undefined;
  readonly #sessions = new Set<H2ClientSession>();
  #closed = false;

  constructor(address: Address, opts: H2EndpointOptions) {
    this.#host = address.host;
    this.#port = address.port;
    this.#opts = opts;
  }

  get connections(): number {
    return this.#session !== undefined ? 1 : 0;
  }

  saturated(load: number): boolean {
    const max = this.#session?.maxConcurrentStreams ?? Infinity;
    return load >= max + this.#opts.maxWaiters;
  }

  dispatch(req: H2Request, onDone: (ex: H2Exchange) => void): H2Exchange {
    const session = this.#closed ? new H2SessionClosedError() : this.#live();
    return new H2Exchange(req, session, requestFields(req.headers), onDone);
  }

  gone(session: H2ClientSession): void {
    if (this.#session === session) this.#session = undefined;
  }

  closed(session: H2ClientSession): void {
    this.gone(session);
    this.#sessions.delete(session);
  }

  #live(): H2ClientSession {
    const s = this.#session;
    if (s !== undefined && s.usable) return s;
    return this.#connect();
  }

  #connect(): H2ClientSession {
    const o = this.#opts;
    const tls = o.tls;
    const host = this.#host;
    const port = this.#port;
    let socket: Socket;
    if (tls === undefined) socket = netConnect({ host, port, noDelay: true });
    else {
      const t: typeof Tls = process.getBuiltinModule('node:tls');
      socket = t.connect({
        host,
        port,
        ALPNProtocols: ['h2'],
        rejectUnauthorized: tls.rejectUnauthorized,
        ...(tls.servername === undefined ? (host.includes(':') || /^[0-9.]+$/.test(host) ? {} : { servername: host }) : { servername: tls.servername }),
        ...(tls.ca === undefined ? {} : { ca: tls.ca }),
      });
      // No Nagle delay: small interleaved frames would wait for the peer's delayed ACK.
      socket.setNoDelay(true);
    }
    const session = new H2ClientSession(socket, o.settings, this);
    this.#session = session;
    this.#sessions.add(session);
    // Idle as Finagle's session expiry means it: nothing in flight (a quiet long-lived stream is not idle).
    if (o.idleTimeMs !== undefined) {
      // 'on', not setTimeout's callback (node registers that once): a timer that fired while a
      // stream was open fires again after the next activity and idle spell.
      socket.setTimeout(o.idleTimeMs);
      socket.on('timeout', () => {
        if (session.active === 0) void session.close();
      });
    }
    if (o.lifeTimeMs !== undefined) {
      const timer = setTimeout(() => void session.close(), o.lifeTimeMs);
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
    }
    return session;
  }

  close(): Promise<void> {
    this.#closed = true;
    this.#session = undefined;
    return Promise.all([...this.#sessions].map((s) => s.close())).then(noop);
  }

  destroy(): Promise<void> {
    this.#closed = true;
    this.#session = undefined;
    for (const s of this.#sessions) s.destroy();
    this.#sessions.clear();
    return Promise.resolve();
  }
}
