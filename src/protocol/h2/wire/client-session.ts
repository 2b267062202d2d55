/**
 * prx's own HTTP/2 client session (RFC 9113) on one socket: streams opened within the peer's
 * concurrency limit, request bodies sent within both send windows, responses handed to each
 * stream's handler with receive credit returned as the handler consumes, GOAWAY honoured (streams
 * past its last id are refused, so the router may send them elsewhere).
 */
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { H2AlpnError, H2Code, H2ConnectionError, H2ConnectionLostError, H2ConnectTimeoutError, H2SessionClosedError, StreamResetError } from '../errors.js';
import { H2ClientStream, type H2StreamHandler, type StreamOwner } from './client-stream.js';
import { H2Connection, type H2SessionSettings } from './connection.js';
import { CLIENT_PREFACE, Flag, FrameType, MAX_WINDOW_BYTES, Setting } from './frames.js';
import { responseFields } from './fields.js';
import { StreamTable } from './stream-table.js';

export type { H2SessionSettings } from './connection.js';

/** What a session tells its transport. */
export interface SessionOwner {
  /** The session takes no new streams (GOAWAY, failure, ids used up, closing). */
  gone(session: H2ClientSession): void;
  /** The socket is closed and every stream is over. */
  closed(session: H2ClientSession): void;
}

const MAX_STREAM_ID = 2 ** 31 - 1;

export class H2ClientSession extends H2Connection<H2ClientStream> implements StreamOwner {
  readonly #owner: SessionOwner;
  readonly #streams = new StreamTable<H2ClientStream>();
  /** Streams waiting for the peer's concurrency limit, in order. */
  readonly #waiting: H2ClientStream[] = [];
  /** Streams with request bytes held by the connection's send window or a full socket. */
  readonly #blocked = new StreamTable<H2ClientStream>();
  #nextId = 1;
  #goingAway = false;

  /** Fails the session if the peer's SETTINGS have not arrived in time (TCP, TLS and the preface). */
  #connectTimer: NodeJS.Timeout | undefined;

  constructor(socket: Duplex, settings: H2SessionSettings, owner: SessionOwner, connectTimeoutMs = 10_000) {
    super(socket, settings);
    this.#owner = owner;
    this.#connectTimer = setTimeout(() => {
      this.fail(new H2ConnectTimeoutError(connectTimeoutMs), undefined);
      socket.destroy();
    }, connectTimeoutMs);
    this.#connectTimer.unref();
    if ((socket as TLSSocket).encrypted === true) socket.once('secureConnect', () => this.#checkAlpn(socket as TLSSocket));
    this.sendSettings(CLIENT_PREFACE, [Setting.ENABLE_PUSH, 0]);
  }

  /** Whether new streams may be opened here. */
  get usable(): boolean {
    return !this.#goingAway && this.failed === undefined && !this.socketClosed && this.#nextId <= MAX_STREAM_ID;
  }

  /** Streams open or waiting. */
  get active(): number {
    return this.#streams.size + this.#waiting.length;
  }

  /** The peer's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until it says otherwise). */
  get maxConcurrentStreams(): number {
    return this.peerMaxStreams;
  }

  #checkAlpn(socket: TLSSocket): void {
    const chosen = socket.alpnProtocol ?? false;
    if (chosen !== 'h2') this.fail(new H2AlpnError(chosen), undefined);
  }

  /** Opens a stream with a request head (alternating names and values, pseudo-headers first). */
  request(fields: string[], endStream: boolean, handler: H2StreamHandler): H2ClientStream {
    const stream = new H2ClientStream(this, handler, fields, endStream);
    if (!this.usable) {
      const err = this.failed ?? new H2SessionClosedError();
      queueMicrotask(() => stream.finish(err));
      return stream;
    }
    if (this.#streams.size < this.peerMaxStreams && this.#waiting.length === 0) this.#open(stream);
    else this.#waiting.push(stream);
    return stream;
  }

  /** Sends a stream's HEADERS (it gets its id now: ids must rise in the order streams are opened). */
  #open(stream: H2ClientStream): void {
    const id = this.#nextId;
    this.#nextId += 2;
    stream.id = id;
    stream.sendWindow = this.peerInitialWindow;
    stream.recvWindow = this.settings.initialWindowBytes;
    this.#streams.add(stream);
    const fields = stream.fields as string[];
    stream.fields = undefined;
    const endNow = stream.endQueued && stream.queuedBytes === 0 && stream.trailers === undefined;
    this.writeHeaders(id, fields, endNow);
    if (endNow) stream.localClosed = true;
    else if (stream.queuedBytes > 0 || stream.endQueued) this.pump(stream);
    if (this.#nextId > MAX_STREAM_ID) {
      // Ids used up: streams still waiting can never open here; refused, they go elsewhere.
      this.#goneForNew();
      this.#refuseWaiting();
    }
  }

  // ---- StreamOwner ---------------------------------------------------------------------------

  pump(stream: H2ClientStream): void {
    if (stream.closed || stream.localClosed || stream.id === 0) return;
    const queue = stream.queue;
    let sent = false;
    while (queue.length > 0) {
      const chunk = this.takeChunk(stream);
      if (chunk === undefined) {
        if (stream.sendWindow > 0) this.#blocked.add(stream);
        break;
      }
      const last = queue.length === 0 && stream.endQueued && stream.trailers === undefined;
      this.sendData(stream.id, chunk, last);
      if (last) stream.localClosed = true;
      sent = true;
    }
    if (queue.length === 0 && stream.endQueued && !stream.localClosed) {
      stream.localClosed = true;
      if (stream.trailers !== undefined) this.writeHeaders(stream.id, stream.trailers, true);
      else this.out.data(stream.id, EMPTY, true);
      sent = true;
    }
    if (sent) this.scheduleFlush();
    if (stream.needsDrain && stream.queuedBytes < 16 * 1024) {
      stream.needsDrain = false;
      stream.handler.onDrain();
    }
    if (stream.localClosed) this.#maybeClosed(stream);
  }

  credit(stream: H2ClientStream, bytes: number): void {
    stream.unreturned += bytes;
    if (stream.remoteClosed || stream.id === 0) return;
    if (stream.recvWindow <= this.settings.initialWindowBytes * this.settings.windowUpdateRatio) {
      this.out.u32(FrameType.WINDOW_UPDATE, stream.id, stream.unreturned);
      stream.recvWindow += stream.unreturned;
      stream.unreturned = 0;
      this.scheduleFlush();
    }
  }

  resetStream(stream: H2ClientStream, code: number): void {
    stream.rstCode = code;
    if (stream.id === 0) {
      const i = this.#waiting.indexOf(stream);
      if (i >= 0) this.#waiting.splice(i, 1);
      stream.finish(new StreamResetError(code, 'downstream'));
      return;
    }
    if (!this.socketClosed && this.failed === undefined) {
      this.out.u32(FrameType.RST_STREAM, stream.id, code);
      this.scheduleFlush();
    }
    this.#close(stream, new StreamResetError(code, 'downstream'));
  }

  // ---- stream frames -------------------------------------------------------------------------

  /** The stream a peer's frame is for, or undefined (ignored) for one already closed; idle ids are an error. */
  #streamFor(id: number, what: string): H2ClientStream | undefined {
    const s = this.#streams.get(id);
    if (s === undefined && (id % 2 === 0 || id >= this.#nextId)) this.connectionError(H2Code.PROTOCOL_ERROR, `${what} on idle stream ${id}`);
    return s;
  }

  protected dataFrame(flags: number, id: number, payload: Buffer): void {
    const stream = this.#streamFor(id, 'DATA');
    if (stream === undefined) return;
    const length = payload.length;
    let body = payload;
    if ((flags & Flag.PADDED) !== 0) {
      const pad = length === 0 ? -1 : (payload[0] as number);
      if (pad < 0 || pad >= length) return this.connectionError(H2Code.PROTOCOL_ERROR, 'DATA padding longer than its frame');
      body = payload.subarray(1, length - pad);
    }
    if (stream.remoteClosed) return this.#streamError(stream, H2Code.STREAM_CLOSED);
    stream.recvWindow -= length;
    if (stream.recvWindow < 0) return this.#streamError(stream, H2Code.FLOW_CONTROL_ERROR);
    if (!stream.responded) return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
    // Padding is consumed at once; the body's credit returns as the handler passes it on.
    if (length > body.length) this.credit(stream, length - body.length);
    stream.receivedBytes += body.length;
    // More DATA than content-length says is malformed (RFC 9113 §8.1.1); so is less, at the end.
    if (stream.expectedBytes >= 0 && stream.receivedBytes > stream.expectedBytes) return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
    if (body.length > 0) stream.handler.onData(body);
    if ((flags & Flag.END_STREAM) !== 0) this.#remoteEnd(stream);
  }

  protected headerBlock(id: number, flags: number, list: string[], size: number): void {
    const stream = this.#streamFor(id, 'HEADERS');
    if (stream === undefined || stream.closed) return;
    const endStream = (flags & Flag.END_STREAM) !== 0;
    if (stream.remoteClosed) return this.#streamError(stream, H2Code.STREAM_CLOSED);
    const max = this.settings.maxHeaderListBytes;
    if (max !== undefined && size > max) return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
    const trailers = stream.responded;
    const parsed = responseFields(list, trailers);
    // A malformed response (RFC 9113 §8.1.1) resets the stream; the defect is not the client's to read.
    if (typeof parsed === 'string') return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
    if (trailers) {
      if (!endStream) return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
      stream.handler.onTrailers(parsed.fields);
      this.#remoteEnd(stream);
      return;
    }
    const status = parsed.status;
    if (status < 200) {
      // 1xx heads are informational (101 is not allowed in HTTP/2); the final head follows.
      if (status === 101 || endStream) this.#streamError(stream, H2Code.PROTOCOL_ERROR);
      return;
    }
    stream.responded = true;
    const cl = parsed.fields['content-length'];
    if (typeof cl === 'string' && !stream.headRequest && status !== 204 && status !== 304) stream.expectedBytes = /^[0-9]{1,15}$/.test(cl) ? Number(cl) : -1;
    stream.handler.onHead(status, parsed.fields, endStream);
    if (endStream) this.#remoteEnd(stream);
  }

  #remoteEnd(stream: H2ClientStream): void {
    if (stream.closed) return;
    if (stream.expectedBytes >= 0 && stream.receivedBytes !== stream.expectedBytes) return this.#streamError(stream, H2Code.PROTOCOL_ERROR);
    stream.remoteClosed = true;
    stream.handler.onEnd();
    this.#maybeClosed(stream);
  }

  #maybeClosed(stream: H2ClientStream): void {
    if (stream.localClosed && stream.remoteClosed) this.#close(stream, undefined);
  }

  protected rstStream(id: number, code: number): void {
    const stream = this.#streamFor(id, 'RST_STREAM');
    if (stream === undefined) return;
    stream.rstCode = code;
    // A complete response may be followed by RST_STREAM(NO_ERROR): stop sending the request (RFC 9113 §8.1).
    this.#close(stream, code === H2Code.NO_ERROR && stream.remoteClosed ? undefined : new StreamResetError(code, 'upstream'));
  }

  protected streamWindowUpdate(id: number, increment: number): void {
    const s = this.#streamFor(id, 'WINDOW_UPDATE');
    if (s === undefined) return;
    if (increment === 0) return this.#streamError(s, H2Code.PROTOCOL_ERROR);
    s.sendWindow += increment;
    if (s.sendWindow > MAX_WINDOW_BYTES) return this.#streamError(s, H2Code.FLOW_CONTROL_ERROR);
    this.pump(s);
  }

  protected openStreams(): Iterable<H2ClientStream> {
    return this.#streams.values();
  }

  protected peerSettingsApplied(): void {
    clearTimeout(this.#connectTimer);
    this.#openWaiting();
  }

  protected goaway(last: number, code: number, detail: string): void {
    this.#goneForNew();
    // Streams past the last id were not processed: refused, so the router may send them elsewhere.
    for (const s of this.#streams.values()) if (s.id > last) this.#close(s, new StreamResetError(H2Code.REFUSED_STREAM, 'upstream'));
    this.#refuseWaiting();
    // The peer failed the connection: the streams it had taken fail with its reason.
    if (code !== H2Code.NO_ERROR && this.#streams.size > 0) this.fail(new H2ConnectionError(code, 'peer', detail || 'no detail'), undefined);
    else this.#closeIfIdle();
  }

  protected drained(): void {
    if (this.#blocked.size === 0) return;
    const blocked = this.#blocked.takeAll();
    for (const s of blocked) this.pump(s);
  }

  // ---- stream and connection ends ------------------------------------------------------------

  #close(stream: H2ClientStream, error: Error | undefined): void {
    if (stream.closed) return;
    if (stream.id !== 0) this.#streams.delete(stream.id);
    this.#blocked.delete(stream.id);
    stream.finish(error);
    this.#openWaiting();
    this.#closeIfIdle();
  }

  /** A stream error: RST_STREAM to the peer; the stream fails with the code as the upstream's. */
  #streamError(stream: H2ClientStream, code: number): void {
    this.out.u32(FrameType.RST_STREAM, stream.id, code);
    this.scheduleFlush();
    stream.rstCode = code;
    this.#close(stream, new StreamResetError(code, 'upstream'));
  }

  #openWaiting(): void {
    while (this.#waiting.length > 0 && this.#streams.size < this.peerMaxStreams && this.usable) this.#open(this.#waiting.shift() as H2ClientStream);
  }

  #refuseWaiting(): void {
    const waiting = this.#waiting.splice(0);
    for (const s of waiting) s.finish(new StreamResetError(H2Code.REFUSED_STREAM, 'upstream'));
  }

  #goneForNew(): void {
    if (this.#goingAway) return;
    this.#goingAway = true;
    this.#owner.gone(this);
  }

  /** Streams never sent are refused (or get the connect failure); the rest get `error`. */
  protected failStreams(error: Error, cause: Error | undefined): void {
    this.#goneForNew();
    const sent = this.#streams.values();
    this.#streams.clear();
    this.#blocked.clear();
    const waiting = this.#waiting.splice(0);
    // Before the peer's SETTINGS nothing was processed: every stream fails as the connection did.
    const unsent = this.established ? new StreamResetError(H2Code.REFUSED_STREAM, 'upstream') : error;
    for (const s of waiting) s.finish(unsent);
    for (const s of sent) s.finish(this.established ? error : (cause ?? error));
  }

  protected socketError(err: Error): void {
    this.fail(this.established ? new H2ConnectionLostError(err) : err, err);
  }

  protected socketGone(): void {
    clearTimeout(this.#connectTimer);
    if (this.#streams.size > 0 || this.#waiting.length > 0) {
      const lost = this.established ? new H2ConnectionLostError(undefined) : Object.assign(new Error('the upstream closed the connection before its HTTP/2 preface'), { code: 'ECONNRESET' });
      this.fail(lost, undefined);
    }
    this.#goneForNew();
    this.#owner.closed(this);
  }

  /** After a GOAWAY (either way) the socket closes once its last stream is over. */
  #closeIfIdle(): void {
    if (!this.#goingAway || this.#streams.size > 0 || this.#waiting.length > 0 || this.socketClosed) return;
    this.flush();
    this.socket.end();
  }

  /** Graceful close: GOAWAY(NO_ERROR), streams in flight finish, then the socket closes. */
  close(): Promise<void> {
    if (this.socketClosed) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.socket.once('close', () => resolve()));
    if (!this.#goingAway && this.failed === undefined) {
      this.out.goaway(0, H2Code.NO_ERROR, '');
      // Sent now, not with the last stream's frames: the peer hears at once that no stream follows.
      this.scheduleFlush();
      this.#refuseWaiting();
      this.#goneForNew();
    }
    this.#closeIfIdle();
    return done;
  }

  destroy(): void {
    this.fail(new H2SessionClosedError(), undefined);
    this.socket.destroy();
  }
}

const EMPTY = Buffer.alloc(0);
