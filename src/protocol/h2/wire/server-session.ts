/**
 * prx's own HTTP/2 server session (RFC 9113) on one client socket: the client's preface checked,
 * streams the client opens checked (ids, concurrency, RFC 9113 §8.3.1 heads, content-length) and
 * handed to the owner, request bodies delivered with receive credit returned as they are read,
 * responses sent within both send windows, and a graceful close (GOAWAY, streams in flight finish).
 */
import type { Duplex } from 'node:stream';
import type { Socket } from 'node:net';
import { H2Code, H2ConnectionError, H2DownstreamClosedError, h2CodeName } from '../errors.js';
import { H2Connection, type H2SessionSettings } from './connection.js';
import { CLIENT_PREFACE, DEFAULT_WINDOW_BYTES, Flag, FrameType, MAX_WINDOW_BYTES, Setting } from './frames.js';
import { requestHead, requestTrailers } from './fields.js';
import { H2ServerStream, LOW_WATER_BYTES, type H2Fields, type H2ServerSessionView, type ServerStreamOwner } from './server-stream.js';
import { StreamTable } from './stream-table.js';

export type { H2SessionSettings } from './connection.js';

export interface H2ServerSettings extends H2SessionSettings {
  /** SETTINGS_MAX_CONCURRENT_STREAMS (unlimited when undefined): streams past it are refused. */
  readonly maxConcurrentStreams: number | undefined;
}

/** What a session tells its server. */
export interface ServerSessionOwner {
  /** A stream the client opened with a well-formed head; `flags` has END_STREAM (0x1) when the head ended the request. */
  stream(stream: H2ServerStream, headers: H2Fields, flags: number): void;
  /** The socket is closed and every stream is over (once). */
  closed(session: H2ServerSession): void;
}

/** How long the client has to close its side after a graceful close before the socket is destroyed. */
const CLOSE_GRACE_MS = 1000;
/** Ids of streams reset while the client may still be sending on them (whose late frames are ignored). */
const RESET_IDS_KEPT = 1024;
const EMPTY = Buffer.alloc(0);

export class H2ServerSession extends H2Connection<H2ServerStream> implements ServerStreamOwner, H2ServerSessionView {
  /** The client's socket (a TLSSocket on TLS). */
  declare readonly socket: Socket;
  readonly #owner: ServerSessionOwner;
  readonly #maxStreams: number;
  readonly #streams = new StreamTable<H2ServerStream>();
  /** Streams with response bytes held by the connection's send window or a full socket. */
  readonly #blocked = new StreamTable<H2ServerStream>();
  /** Made at the first reset (most connections never reset a stream). */
  #resetIds: Set<number> | undefined;
  /** The highest stream id the client used (opened, refused or rejected). */
  #lastSeen = 0;
  /** Bytes of the client's preface still to be checked. */
  #prefaceAt = 0;
  #goingAway = false;
  #ownerTold = false;
  /**
   * Until the client acknowledges our SETTINGS it may send by the default window (RFC 9113
   * §6.9.2): streams opened before get that window, moved by the difference at the ACK.
   */
  #acked = false;
  /** The socket was ended after a graceful close. */
  #ending = false;

  constructor(socket: Duplex, settings: H2ServerSettings, owner: ServerSessionOwner) {
    super(socket, settings);
    this.#owner = owner;
    const max = settings.maxConcurrentStreams;
    this.#maxStreams = max ?? Infinity;
    this.sendSettings(undefined, max === undefined ? [Setting.ENABLE_PUSH, 0] : [Setting.ENABLE_PUSH, 0, Setting.MAX_CONCURRENT_STREAMS, max]);
    // A listener may hand the socket over paused, with the bytes it read put back (unshift).
    socket.resume();
  }

  /** close() was called, or the connection failed or closed: no new streams. */
  get closed(): boolean {
    return this.#goingAway || this.failed !== undefined || this.socketClosed;
  }

  get destroyed(): boolean {
    return this.failed !== undefined || this.socketClosed;
  }

  /** Streams open. */
  get active(): number {
    return this.#streams.size;
  }

  /** Takes the 24-byte client preface (RFC 9113 §3.4) off the first bytes; anything else closes the connection. */
  protected override received(chunk: Buffer): void {
    let at = this.#prefaceAt;
    if (at === CLIENT_PREFACE.length) return super.received(chunk);
    const n = Math.min(CLIENT_PREFACE.length - at, chunk.length);
    if (chunk.compare(CLIENT_PREFACE, at, at + n, 0, n) !== 0) {
      this.connectionError(H2Code.PROTOCOL_ERROR, 'not the HTTP/2 client connection preface');
      return;
    }
    at += n;
    this.#prefaceAt = at;
    if (at === CLIENT_PREFACE.length && n < chunk.length) super.received(chunk.subarray(n));
  }

  // ---- ServerStreamOwner ----------------------------------------------------------------------

  sendHeaders(stream: H2ServerStream, fields: string[], endStream: boolean): void {
    if (stream.closed || this.failed !== undefined) return;
    this.writeHeaders(stream.id, fields, endStream);
    if (!endStream) return;
    stream.writableFinished = true;
    this.#localEnd(stream);
  }

  pump(stream: H2ServerStream): void {
    if (stream.closed || stream.writableFinished || !stream.headersSent) return;
    const queue = stream.queue;
    let sent = false;
    while (queue.length > 0) {
      const chunk = this.takeChunk(stream);
      if (chunk === undefined) {
        if (stream.sendWindow > 0) this.#blocked.add(stream);
        break;
      }
      const last = queue.length === 0 && stream.endQueued && stream.trailers === undefined && !stream.waitForTrailers;
      this.sendData(stream.id, chunk, last);
      sent = true;
      if (last) stream.writableFinished = true;
    }
    if (queue.length === 0 && stream.endQueued && !stream.writableFinished) {
      const t = stream.trailers;
      if (t !== undefined && t.length > 0) this.writeHeaders(stream.id, t, true);
      else if (t !== undefined || !stream.waitForTrailers) this.out.data(stream.id, EMPTY, true);
      else if (!stream.wantTrailersAsked) stream.askTrailers();
      if (t !== undefined || !stream.waitForTrailers) {
        stream.writableFinished = true;
        sent = true;
      }
    }
    if (sent) this.scheduleFlush();
    if (stream.needsDrain && stream.queuedBytes < (stream.drainWhenEmpty ? 1 : LOW_WATER_BYTES)) stream.drained();
    if (stream.writableFinished) this.#localEnd(stream);
  }

  credit(stream: H2ServerStream, bytes: number): void {
    stream.unreturned += bytes;
    if (stream.remoteClosed) return;
    const s = this.settings;
    if (stream.recvWindow <= s.initialWindowBytes * s.windowUpdateRatio) {
      this.out.u32(FrameType.WINDOW_UPDATE, stream.id, stream.unreturned);
      stream.recvWindow += stream.unreturned;
      stream.unreturned = 0;
      this.scheduleFlush();
    }
  }

  resetStream(stream: H2ServerStream, code: number): void {
    if (stream.closed) return;
    this.#reset(stream, code);
  }

  // ---- stream frames --------------------------------------------------------------------------

  /** The open stream a frame is for; undefined (the frame ignored) for one closed; idle ids fail the connection. */
  #streamFor(id: number, what: string): H2ServerStream | undefined {
    const s = this.#streams.get(id);
    if (s === undefined && (id % 2 === 0 || id > this.#lastSeen)) this.connectionError(H2Code.PROTOCOL_ERROR, `${what} on idle stream ${id}`);
    return s;
  }

  protected headerBlock(id: number, flags: number, list: string[], size: number): void {
    const open = this.#streams.get(id);
    if (open !== undefined) return this.#trailers(open, flags, list, size);
    if (id % 2 === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, `HEADERS on even stream ${id}`);
    if (id <= this.#lastSeen) {
      // Trailers may still arrive for a stream reset before the client heard of it; any other
      // HEADERS on a used id is a stream id out of order (RFC 9113 §5.1.1).
      if (this.#resetIds?.has(id) === true) return;
      return this.connectionError(H2Code.PROTOCOL_ERROR, `HEADERS on stream ${id}, not above ${this.#lastSeen}`);
    }
    this.#lastSeen = id;
    const endStream = (flags & Flag.END_STREAM) !== 0;
    // After our GOAWAY, and past the concurrency limit, streams are refused: never processed, safe to retry.
    if (this.#goingAway || this.#streams.size >= this.#maxStreams) return this.#rejectNew(id, endStream, H2Code.REFUSED_STREAM);
    // Over the announced header list size: ENHANCE_YOUR_CALM, as node's nghttp2 binding answers it.
    const max = this.settings.maxHeaderListBytes;
    if (max !== undefined && size > max) return this.#rejectNew(id, endStream, H2Code.ENHANCE_YOUR_CALM);
    const headers = requestHead(list);
    if (typeof headers === 'string') return this.#rejectNew(id, endStream, H2Code.PROTOCOL_ERROR);
    let expected = -1;
    const cl = headers['content-length'];
    if (cl !== undefined) {
      expected = typeof cl === 'string' && /^[0-9]{1,15}$/.test(cl) ? Number(cl) : -2;
      if (expected === -2 || (endStream && expected !== 0)) return this.#rejectNew(id, endStream, H2Code.PROTOCOL_ERROR);
    }
    const stream = new H2ServerStream(this, id, this.peerInitialWindow, this.#acked ? this.settings.initialWindowBytes : DEFAULT_WINDOW_BYTES, headers[':method'] === 'HEAD');
    stream.expectedBytes = expected;
    this.#streams.add(stream);
    this.lastPeerStream = id;
    if (endStream) stream.remoteEnded(undefined);
    try {
      this.#owner.stream(stream, headers, flags);
    } catch {
      this.resetStream(stream, H2Code.INTERNAL_ERROR);
    }
  }

  #rejectNew(id: number, endStream: boolean, code: number): void {
    this.out.u32(FrameType.RST_STREAM, id, code);
    this.scheduleFlush();
    if (!endStream) this.#keepResetId(id);
  }

  #trailers(stream: H2ServerStream, flags: number, list: string[], size: number): void {
    if (stream.remoteClosed) return this.#reset(stream, H2Code.STREAM_CLOSED);
    if ((flags & Flag.END_STREAM) === 0) return this.#reset(stream, H2Code.PROTOCOL_ERROR);
    const max = this.settings.maxHeaderListBytes;
    if (max !== undefined && size > max) return this.#reset(stream, H2Code.ENHANCE_YOUR_CALM);
    const trailers = requestTrailers(list);
    if (typeof trailers === 'string') return this.#reset(stream, H2Code.PROTOCOL_ERROR);
    this.#remoteEnd(stream, trailers);
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
    if (stream.remoteClosed) return this.#reset(stream, H2Code.STREAM_CLOSED);
    stream.recvWindow -= length;
    if (stream.recvWindow < 0) return this.#reset(stream, H2Code.FLOW_CONTROL_ERROR);
    // Padding is credited at once; the body as the reader takes it.
    if (length > body.length) this.credit(stream, length - body.length);
    stream.receivedBytes += body.length;
    // More DATA than content-length says is malformed (RFC 9113 §8.1.1); so is less, at the end.
    if (stream.expectedBytes >= 0 && stream.receivedBytes > stream.expectedBytes) return this.#reset(stream, H2Code.PROTOCOL_ERROR);
    if (body.length > 0) stream.received(body);
    if ((flags & Flag.END_STREAM) !== 0 && !stream.closed) this.#remoteEnd(stream, undefined);
  }

  #remoteEnd(stream: H2ServerStream, trailers: H2Fields | undefined): void {
    if (stream.expectedBytes >= 0 && stream.receivedBytes !== stream.expectedBytes) return this.#reset(stream, H2Code.PROTOCOL_ERROR);
    stream.remoteEnded(trailers);
    if (stream.writableFinished) this.#close(stream);
  }

  #localEnd(stream: H2ServerStream): void {
    if (stream.remoteClosed) this.#close(stream);
  }

  protected rstStream(id: number, code: number): void {
    const stream = this.#streamFor(id, 'RST_STREAM');
    if (stream === undefined) return;
    stream.rstCode = code;
    this.#close(stream);
  }

  protected streamWindowUpdate(id: number, increment: number): void {
    const s = this.#streamFor(id, 'WINDOW_UPDATE');
    if (s === undefined) return;
    if (increment === 0) return this.#reset(s, H2Code.PROTOCOL_ERROR);
    s.sendWindow += increment;
    if (s.sendWindow > MAX_WINDOW_BYTES) return this.#reset(s, H2Code.FLOW_CONTROL_ERROR);
    this.pump(s);
  }

  protected openStreams(): Iterable<H2ServerStream> {
    return this.#streams.values();
  }

  protected peerSettingsApplied(): void {}

  protected override settingsAcked(): void {
    if (this.#acked) return;
    this.#acked = true;
    const delta = this.settings.initialWindowBytes - DEFAULT_WINDOW_BYTES;
    if (delta !== 0) for (const s of this.#streams.values()) s.recvWindow += delta;
  }

  /** The client's GOAWAY: without an error it is leaving gracefully (so are we); with one, the connection is over. */
  protected goaway(_last: number, code: number, detail: string): void {
    if (code === H2Code.NO_ERROR) this.close();
    else this.fail(new H2DownstreamClosedError(`GOAWAY ${h2CodeName(code)}${detail === '' ? '' : `: ${detail}`}`, code), undefined);
  }

  protected drained(): void {
    if (this.#blocked.size === 0) return;
    const blocked = this.#blocked.takeAll();
    for (const s of blocked) this.pump(s);
  }

  // ---- stream and connection ends -------------------------------------------------------------

  /** A stream error, or the owner's close(code): RST_STREAM, then the stream closes. */
  #reset(stream: H2ServerStream, code: number): void {
    this.out.u32(FrameType.RST_STREAM, stream.id, code);
    this.scheduleFlush();
    stream.rstCode = code;
    if (!stream.remoteClosed) this.#keepResetId(stream.id);
    this.#close(stream);
  }

  #keepResetId(id: number): void {
    const ids = (this.#resetIds ??= new Set<number>());
    if (ids.size >= RESET_IDS_KEPT) ids.delete(ids.values().next().value as number);
    ids.add(id);
  }

  #close(stream: H2ServerStream): void {
    if (stream.closed) return;
    this.#streams.delete(stream.id);
    this.#blocked.delete(stream.id);
    stream.finish();
    this.#closeIfIdle();
  }

  /** Every stream still open closes with the failure's code as its rstCode. */
  protected failStreams(error: Error): void {
    this.#goingAway = true;
    const code = error instanceof H2ConnectionError || error instanceof H2DownstreamClosedError ? error.h2Code : H2Code.CANCEL;
    const open = this.#streams.values();
    this.#streams.clear();
    this.#blocked.clear();
    for (const s of open) {
      if (s.rstCode === undefined) s.rstCode = code;
      s.finish();
    }
  }

  protected socketError(err: Error): void {
    this.fail(new H2DownstreamClosedError(err.message, H2Code.CANCEL, err), err);
  }

  protected socketGone(): void {
    if (this.#streams.size > 0) this.fail(new H2DownstreamClosedError('the socket closed'), undefined);
    if (this.#ownerTold) return;
    this.#ownerTold = true;
    this.#owner.closed(this);
  }

  /** After our GOAWAY the socket closes once its last stream is over. */
  #closeIfIdle(): void {
    if (!this.#goingAway || this.#ending || this.#streams.size > 0 || this.socketClosed || this.failed !== undefined) return;
    this.#ending = true;
    this.flush();
    const socket = this.socket;
    socket.end();
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  /** Graceful close: GOAWAY(NO_ERROR, the last stream processed); streams in flight finish, then the socket closes. */
  close(): void {
    if (this.#goingAway || this.failed !== undefined || this.socketClosed) return;
    this.#goingAway = true;
    this.out.goaway(this.lastPeerStream, H2Code.NO_ERROR, '');
    this.scheduleFlush();
    this.#closeIfIdle();
  }

  /** Closes the connection at once: streams still open close with rstCode CANCEL. */
  destroy(): void {
    this.fail(new H2DownstreamClosedError('destroyed'), undefined);
    this.socket.destroy();
  }
}
