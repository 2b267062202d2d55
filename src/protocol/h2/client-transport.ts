/**
 * The h2 client side as the router core's transport: one multiplexed session per endpoint
 * (prior knowledge in plaintext, ALPN `h2` over TLS), each attempt a stream. Request bodies are
 * streamed with back-pressure and kept (up to the retry buffer) so a retry can replay them; a
 * response whose class is only known at its end is read ahead within the response buffer and the
 * classification timeout before the core classifies it.
 */
import type * as http2 from 'node:http2';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { connect as netConnect } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import type * as Tls from 'node:tls';
import type { Address } from '../../naming/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import type { ClientTlsSettings } from '../../service/tls-settings.js';
import { FLAG_END_STREAM, H2Code, http2Module, StreamResetError } from './errors.js';
import type { H2Classifier } from './classifiers.js';
import { readGrpcStatus } from './grpc.js';
import { SESSION_OPTIONS } from './settings.js';

const NGHTTP2_CANCEL = H2Code.CANCEL;

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

/**
 * A request body read from the downstream stream: forwarded to the current attempt's stream with
 * back-pressure, and kept while it fits `limit` bytes so another attempt can start from its
 * beginning. Past the limit it can no longer be replayed (the request is simply not retried).
 */
export class H2RequestBody {
  readonly #source: Readable;
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #bytes = 0;
  #overflowed = false;
  #ended = false;
  trailers: IncomingHttpHeaders | undefined;
  /** Whether the request may carry trailers (`te: trailers`): the upstream stream must wait for them. */
  readonly mayHaveTrailers: boolean;
  #sink: http2.ClientHttp2Stream | undefined;
  #draining = false;
  readonly #resume = (): void => {
    if (this.#sink !== undefined) this.#source.resume();
  };

  constructor(source: Readable, limit: number, mayHaveTrailers: boolean) {
    this.#source = source;
    this.#limit = limit;
    this.mayHaveTrailers = mayHaveTrailers;
    source.pause();
    source.on('data', (chunk: Buffer) => this.#data(chunk));
    source.once('end', () => {
      this.#ended = true;
      const sink = this.#sink;
      if (sink !== undefined) endSink(sink);
    });
    source.on('trailers', (t: IncomingHttpHeaders) => (this.trailers = t));
  }

  /** True while every byte read so far is kept: another attempt can send the body again. */
  get replayable(): boolean {
    return !this.#overflowed;
  }

  /** Starts sending the body on `sink` (from the beginning: the kept bytes first). */
  attach(sink: http2.ClientHttp2Stream): void {
    for (const c of this.#chunks) sink.write(c);
    if (this.#ended) {
      endSink(sink);
      return;
    }
    this.#sink = sink;
    sink.on('drain', this.#resume);
    this.#source.resume();
  }

  /** Stops sending to `sink` (its attempt is over). */
  detach(sink: http2.ClientHttp2Stream): void {
    if (this.#sink !== sink) return;
    this.#sink = undefined;
    sink.off('drain', this.#resume);
    this.#source.pause();
  }

  /** No attempt will read the rest: let it flow and drop it, so the client is not held by flow control. */
  drain(): void {
    if (this.#sink !== undefined || this.#ended) return;
    this.#draining = true;
    this.#chunks = [];
    this.#source.resume();
  }

  #data(chunk: Buffer): void {
    if (this.#draining) return;
    if (!this.#overflowed) {
      if (this.#bytes + chunk.length <= this.#limit) {
        this.#chunks.push(chunk);
        this.#bytes += chunk.length;
      } else {
        this.#overflowed = true;
        this.#chunks = [];
      }
    }
    const sink = this.#sink;
    if (sink === undefined || sink.destroyed) {
      this.#source.pause();
      return;
    }
    if (!sink.write(chunk)) this.#source.pause();
  }
}

function endSink(sink: http2.ClientHttp2Stream): void {
  // With `te: trailers` the stream waits for them ('wantTrailers', see H2Transport.dispatch).
  if (!sink.destroyed) sink.end();
}

/** What an endpoint's session is built with. */
export interface H2EndpointOptions {
  readonly settings: http2.Settings;
  readonly connectionWindowBytes: number;
  readonly tls: ClientTlsSettings | undefined;
  /** clientSession.idleTimeMs / lifeTimeMs: the session closes itself after these. */
  readonly idleTimeMs: number | undefined;
  readonly lifeTimeMs: number | undefined;
  /** Streams beyond the peer's concurrency limit that may wait in the session (hostConnectionPool.maxWaiters). */
  readonly maxWaiters: number;
}

/**
 * The session's connection, without Nagle's delay: HTTP/2 frames are small and interleaved, and a
 * held frame (waiting for the peer's delayed ACK) stalls every stream behind it. TLS options (ALPN
 * `h2`, CA, servername) come from the session's connect options.
 */
function connectNoDelay(url: URL, opts: http2.SessionOptions): Duplex {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port);
  if (url.protocol === 'http:') return netConnect({ host, port, noDelay: true });
  const tls: typeof Tls = process.getBuiltinModule('node:tls');
  return tls.connect({ ...opts, host, port, noDelay: true } as Tls.ConnectionOptions);
}

/** One attempt: an upstream stream and what it answered. */
export class H2Exchange {
  readonly head: Promise<void>;
  readonly req: H2Request;
  readonly stream: http2.ClientHttp2Stream | undefined;
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
  /** Response bytes read ahead for classification, to be written before the rest. */
  buffered: Buffer[] | undefined;
  /** Told when the exchange ends (the client's end-of-stream stats). */
  endStats: { ended(ex: H2Exchange): void } | undefined;
  /** The gRPC status once the exchange has finished (null: not read yet). */
  #grpcStatus: number | undefined | null = null;
  #resolve!: () => void;
  #reject!: (e: Error) => void;
  #settled = false;
  readonly #onDone: (ex: H2Exchange) => void;

  constructor(req: H2Request, stream: http2.ClientHttp2Stream | Error, onDone: (ex: H2Exchange) => void) {
    this.req = req;
    this.#onDone = onDone;
    this.head = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // The core always awaits the head; this only keeps a rejection nobody awaits from being reported.
    this.head.catch(noop);
    if (stream instanceof Error) {
      this.stream = undefined;
      this.error = stream;
      this.finished = true;
      queueMicrotask(() => {
        this.#fail(stream);
        onDone(this);
      });
      return;
    }
    this.stream = stream;
    stream.on('response', (headers, flags) => this.#response(headers, flags));
    stream.on('trailers', (t: IncomingHttpHeaders) => (this.trailers = t));
    stream.on('error', (err: Error) => {
      // A stream error is the peer's RST_STREAM; anything else (refused, reset connection, TLS)
      // keeps its own cause, although node also gives the stream a code.
      this.error ??= ((err as { code?: unknown }).code === 'ERR_HTTP2_STREAM_ERROR' ? resetOf(stream) : undefined) ?? err;
    });
    stream.once('end', () => {
      // Node ends the readable side on a peer's RST_STREAM(CANCEL) too: a reset is not an end.
      const reset = resetOf(stream);
      if (reset === undefined) this.ended = true;
      else this.error ??= reset;
    });
    stream.once('close', () => this.#closed(stream));
    req.body?.attach(stream);
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
    const s = this.stream;
    if (s !== undefined && !s.destroyed) s.close(NGHTTP2_CANCEL);
  }

  /** The response is dropped for a retry. */
  discard(): void {
    const s = this.stream;
    if (s === undefined) return;
    this.req.body?.detach(s);
    if (!s.destroyed) s.close(NGHTTP2_CANCEL);
  }

  #response(headers: IncomingHttpHeaders, flags: number): void {
    this.responded = true;
    this.status = Number(headers[':status']);
    this.headers = headers;
    // END_STREAM on the head: a response without body (gRPC trailers-only).
    if ((flags & FLAG_END_STREAM) !== 0) this.ended = true;
    const c = this.req.classification;
    if (c === undefined || !c.classifier.needsEnd || this.ended || this.req.body?.replayable === false) this.#succeed();
    else this.#readAhead(c);
  }

  /**
   * Reads the response until it ends, `responseBytes` are buffered or the classification timeout
   * passes, so its class (gRPC status in trailers) can decide a retry. Never waits on flow
   * control: past the buffer the response streams on without a retry.
   */
  #readAhead(c: H2Classification): void {
    const s = this.stream as http2.ClientHttp2Stream;
    const chunks: Buffer[] = [];
    this.buffered = chunks;
    let bytes = 0;
    const stop = (): void => {
      clearTimeout(timer);
      s.off('data', onData);
      s.off('end', stop);
      s.pause();
      this.#succeed();
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      bytes += chunk.length;
      if (bytes > c.responseBytes) stop();
    };
    const timer = setTimeout(stop, c.classificationTimeoutMs);
    s.on('data', onData);
    s.once('end', stop);
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

  #closed(stream: http2.ClientHttp2Stream): void {
    this.finished = true;
    this.req.body?.detach(stream);
    if (!this.ended) this.error ??= resetOf(stream) ?? new StreamResetError(stream.rstCode ?? 0, 'upstream');
    if (!this.responded || !this.#settled) this.#fail(this.error ?? new StreamResetError(0, 'upstream'));
    this.endStats?.ended(this);
    this.#onDone(this);
  }
}

const EMPTY_HEADERS: IncomingHttpHeaders = Object.freeze({});

function noop(): void {}

/** The reset a stream closed with (RST_STREAM from the peer or nghttp2), if any. */
function resetOf(stream: http2.ClientHttp2Stream): StreamResetError | undefined {
  const code = stream.rstCode;
  return code === undefined || code === 0 ? undefined : new StreamResetError(code, 'upstream');
}

/** The connections of one endpoint: a single multiplexed session, reopened when it goes away. */
export class H2Transport {
  readonly #authority: string;
  readonly #opts: H2EndpointOptions;
  #session: http2.ClientHttp2Session | undefined;
  #closed = false;

  constructor(address: Address, opts: H2EndpointOptions) {
    const host = address.host.includes(':') ? `[${address.host}]` : address.host;
    this.#authority = `${opts.tls === undefined ? 'http' : 'https'}://${host}:${address.port}`;
    this.#opts = opts;
  }

  get connections(): number {
    const s = this.#session;
    return s !== undefined && !s.destroyed ? 1 : 0;
  }

  saturated(load: number): boolean {
    const s = this.#session;
    const max = s?.remoteSettings?.maxConcurrentStreams ?? 2 ** 32 - 1;
    return load >= max + this.#opts.maxWaiters;
  }

  dispatch(req: H2Request, onDone: (ex: H2Exchange) => void): H2Exchange {
    let stream: http2.ClientHttp2Stream | Error;
    try {
      if (this.#closed) throw Object.assign(new Error('the endpoint is closed'), { code: 'ERR_HTTP2_INVALID_SESSION' });
      const session = this.#live();
      const body = req.body;
      stream = session.request(req.headers, { endStream: body === null, waitForTrailers: body !== null && body.mayHaveTrailers });
      if (body !== null && body.mayHaveTrailers) {
        const s = stream;
        s.once('wantTrailers', () => s.sendTrailers(body.trailers ?? {}));
      }
    } catch (err) {
      stream = err instanceof Error ? err : new Error(String(err));
    }
    return new H2Exchange(req, stream, onDone);
  }

  #live(): http2.ClientHttp2Session {
    const s = this.#session;
    if (s !== undefined && !s.closed && !s.destroyed) return s;
    return this.#connect();
  }

  #connect(): http2.ClientHttp2Session {
    const o = this.#opts;
    const tls = o.tls;
    const session = http2Module().connect(this.#authority, {
      settings: o.settings,
      ...SESSION_OPTIONS,
      // No Nagle delay: small interleaved frames would wait for the peer's delayed ACK.
      createConnection: connectNoDelay,
      ...(tls === undefined
        ? {}
        : {
            ALPNProtocols: ['h2'],
            rejectUnauthorized: tls.rejectUnauthorized,
            ...(tls.servername === undefined ? {} : { servername: tls.servername }),
            ...(tls.ca === undefined ? {} : { ca: tls.ca }),
          }),
    });
    this.#session = session;
    const forget = (): void => {
      if (this.#session === session) this.#session = undefined;
    };
    // Session errors (refused, reset) reach each stream; the session itself is just replaced.
    session.on('error', forget);
    session.on('goaway', forget);
    session.once('close', forget);
    session.once('connect', () => {
      if (o.connectionWindowBytes > 65_535) session.setLocalWindowSize(o.connectionWindowBytes);
    });
    if (o.idleTimeMs !== undefined) session.setTimeout(o.idleTimeMs, () => session.close());
    if (o.lifeTimeMs !== undefined) {
      const timer = setTimeout(() => {
        forget();
        session.close();
      }, o.lifeTimeMs);
      timer.unref();
      session.once('close', () => clearTimeout(timer));
    }
    return session;
  }

  close(): Promise<void> {
    this.#closed = true;
    const s = this.#session;
    this.#session = undefined;
    if (s === undefined || s.destroyed) return Promise.resolve();
    return new Promise((resolve) => s.close(() => resolve()));
  }

  destroy(): Promise<void> {
    this.#closed = true;
    const s = this.#session;
    this.#session = undefined;
    s?.destroy();
    return Promise.resolve();
  }
}
