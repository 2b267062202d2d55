/**
 * The connection half of an HTTP/2 endpoint (RFC 9113), shared by prx's sessions: the socket,
 * frames in and out (the frames of a turn leave in one write), header blocks (HEADERS with their
 * CONTINUATIONs, HPACK both ways), the peer's SETTINGS, PING answers, the connection's receive
 * credit, and connection errors answered with GOAWAY. Streams are the subclass's.
 */
import type { Duplex } from 'node:stream';
import { H2Code, H2ConnectionError } from '../errors.js';
import { DEFAULT_MAX_FRAME_BYTES, DEFAULT_WINDOW_BYTES, Flag, FrameParser, FrameType, FrameWriter, MAX_WINDOW_BYTES, Setting, type FrameSink } from './frames.js';
import { HpackDecoder, HpackEncoder } from './hpack.js';
import { noteSocketRead } from '../../../core/read-pacer.js';

/** What a session announces and how it returns credit. */
export interface H2SessionSettings {
  /** SETTINGS_INITIAL_WINDOW_SIZE: each stream's receive window. */
  readonly initialWindowBytes: number;
  /** The connection's receive window (opened with a WINDOW_UPDATE after SETTINGS). */
  readonly connectionWindowBytes: number;
  readonly maxFrameBytes: number;
  readonly headerTableBytes: number;
  readonly maxHeaderListBytes: number | undefined;
  /** Credit is returned once the window left falls to this share of its size (Linkerd's windowUpdateRatio). */
  readonly windowUpdateRatio: number;
  /** The size of the slabs outgoing frames are packed into (default 64 KiB; one is held per connection). */
  readonly writeSlabBytes?: number | undefined;
}

const FLUSH_BEFORE_DESTROY_MS = 1000;

/** `S`: the subclass's streams, whose send windows the peer's SETTINGS_INITIAL_WINDOW_SIZE moves. */
/** What the base needs of a stream to send its queued DATA. */
export interface SendingStream {
  readonly id: number;
  sendWindow: number;
  readonly queue: Buffer[];
  queuedBytes: number;
}

/** Pending DATA bytes past which a pump flushes at once rather than at the end of the turn. */
const FLUSH_AT_BYTES = 256 * 1024;

export abstract class H2Connection<S extends SendingStream> implements FrameSink {
  protected readonly socket: Duplex;
  protected readonly settings: H2SessionSettings;
  protected readonly out: FrameWriter;
  readonly #parser: FrameParser;
  readonly #encoder = new HpackEncoder();
  readonly #decoder: HpackDecoder;
  /** The peer's settings as they apply to us. */
  protected peerMaxStreams = Infinity;
  protected peerInitialWindow = DEFAULT_WINDOW_BYTES;
  protected peerMaxFrame = DEFAULT_MAX_FRAME_BYTES;
  protected connSendWindow = DEFAULT_WINDOW_BYTES;
  #connRecvWindow: number;
  /** A header block arriving in CONTINUATION frames. */
  #continued: { id: number; flags: number; parts: Buffer[]; bytes: number } | undefined;
  #flushQueued = false;
  /** The socket asked us to wait ('drain'): DATA waits, control frames still queue. */
  protected socketFull = false;
  /** The peer's SETTINGS arrived: the connection is up and the peer speaks HTTP/2. */
  protected established = false;
  /** Why the connection failed (no frame is read after). */
  protected failed: Error | undefined;
  protected socketClosed = false;
  /** The last stream the peer opened that this side processed: GOAWAY's last-stream-id (0 for a client). */
  protected lastPeerStream = 0;

  constructor(socket: Duplex, settings: H2SessionSettings) {
    this.socket = socket;
    this.settings = settings;
    this.out = new FrameWriter(settings.writeSlabBytes);
    this.#decoder = new HpackDecoder(settings.headerTableBytes);
    this.#parser = new FrameParser(this, settings.maxFrameBytes);
    this.#connRecvWindow = settings.connectionWindowBytes;
    socket.on('data', (chunk: Buffer) => {
      noteSocketRead(chunk.length);
      this.received(chunk);
    });
    socket.on('drain', () => {
      this.socketFull = false;
      this.drained();
    });
    socket.on('error', (err: Error) => this.socketError(err));
    socket.once('close', () => {
      this.socketClosed = true;
      this.socketGone();
    });
  }

  /** Our SETTINGS (preceded by `preface` when given) and the connection window's first credit. */
  protected sendSettings(preface: Buffer | undefined, extra: readonly number[]): void {
    const s = this.settings;
    const out = this.out;
    if (preface !== undefined) out.raw(preface);
    const pairs = [Setting.INITIAL_WINDOW_SIZE, s.initialWindowBytes, ...extra];
    if (s.maxFrameBytes !== DEFAULT_MAX_FRAME_BYTES) pairs.push(Setting.MAX_FRAME_SIZE, s.maxFrameBytes);
    if (s.headerTableBytes !== 4096) pairs.push(Setting.HEADER_TABLE_SIZE, s.headerTableBytes);
    if (s.maxHeaderListBytes !== undefined) pairs.push(Setting.MAX_HEADER_LIST_SIZE, s.maxHeaderListBytes);
    out.settings(pairs);
    if (s.connectionWindowBytes > DEFAULT_WINDOW_BYTES) out.u32(FrameType.WINDOW_UPDATE, 0, s.connectionWindowBytes - DEFAULT_WINDOW_BYTES);
    this.flush();
  }

  // ---- what the subclass handles -------------------------------------------------------------

  protected abstract dataFrame(flags: number, id: number, payload: Buffer): void;
  /** A complete, decoded header block (`size`: its header list size). */
  protected abstract headerBlock(id: number, flags: number, fields: string[], size: number): void;
  protected abstract rstStream(id: number, code: number): void;
  protected abstract streamWindowUpdate(id: number, increment: number): void;
  /** The streams open now. */
  protected abstract openStreams(): Iterable<S>;
  /** Sends what a stream's windows, the connection's and the socket allow. */
  abstract pump(stream: S): void;
  /** The peer's SETTINGS were applied (and acknowledged). */
  protected abstract peerSettingsApplied(): void;
  protected abstract goaway(lastStreamId: number, code: number, detail: string): void;
  /** Connection-level send credit or socket room came back. */
  protected abstract drained(): void;
  /** Every stream fails with `error` (the connection failed); `cause` is the socket's error, if any. */
  protected abstract failStreams(error: Error, cause: Error | undefined): void;
  protected abstract socketError(err: Error): void;
  protected abstract socketGone(): void;

  /** The peer acknowledged our SETTINGS: from now on they bind it. */
  protected settingsAcked(): void {}

  // ---- frames in -----------------------------------------------------------------------------

  /** Bytes read from the socket (a server first takes the client's preface off them). */
  protected received(chunk: Buffer): void {
    this.#parser.push(chunk);
  }

  oversized(length: number): void {
    this.connectionError(H2Code.FRAME_SIZE_ERROR, `a frame of ${length} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${this.settings.maxFrameBytes}`);
  }

  frame(type: number, flags: number, id: number, payload: Buffer): void {
    // The peer's preface is a SETTINGS frame (RFC 9113 §3.4): nothing it sends before is taken.
    if (!this.established && (type !== FrameType.SETTINGS || (flags & Flag.ACK) !== 0)) {
      return this.connectionError(H2Code.PROTOCOL_ERROR, 'the peer’s connection preface is not a SETTINGS frame');
    }
    const c = this.#continued;
    if (c !== undefined && (type !== FrameType.CONTINUATION || id !== c.id)) {
      this.connectionError(H2Code.PROTOCOL_ERROR, 'a header block was interrupted before END_HEADERS');
      return;
    }
    switch (type) {
      case FrameType.DATA:
        if (id === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'DATA on stream 0');
        if (this.#takeConnectionCredit(payload.length)) this.dataFrame(flags, id, payload);
        return;
      case FrameType.HEADERS:
        return this.#headersFrame(flags, id, payload);
      case FrameType.CONTINUATION:
        return this.#continuation(flags, payload);
      case FrameType.RST_STREAM:
        if (id === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
        if (payload.length !== 4) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'RST_STREAM of a length other than 4');
        return this.rstStream(id, payload.readUInt32BE(0));
      case FrameType.SETTINGS:
        return this.#settingsFrame(flags, id, payload);
      case FrameType.PING:
        return this.#ping(flags, id, payload);
      case FrameType.GOAWAY:
        if (id !== 0 || payload.length < 8) return this.connectionError(H2Code.PROTOCOL_ERROR, 'a malformed GOAWAY');
        return this.goaway(payload.readUInt32BE(0) & 0x7fff_ffff, payload.readUInt32BE(4), payload.length > 8 ? payload.toString('utf8', 8, Math.min(payload.length, 264)) : '');
      case FrameType.WINDOW_UPDATE:
        return this.#windowUpdate(id, payload);
      case FrameType.PUSH_PROMISE:
        return this.connectionError(H2Code.PROTOCOL_ERROR, 'PUSH_PROMISE although SETTINGS_ENABLE_PUSH is 0');
      case FrameType.PRIORITY:
        if (id === 0) this.connectionError(H2Code.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        return;
      default:
        // Unknown frame types are ignored (RFC 9113 §4.1).
        return;
    }
  }

  /** DATA counts against the connection window whatever its stream; credit returns at once. */
  #takeConnectionCredit(length: number): boolean {
    this.#connRecvWindow -= length;
    if (this.#connRecvWindow < 0) {
      this.connectionError(H2Code.FLOW_CONTROL_ERROR, 'DATA beyond the connection window');
      return false;
    }
    const size = this.settings.connectionWindowBytes;
    if (this.#connRecvWindow <= size * this.settings.windowUpdateRatio) {
      this.out.u32(FrameType.WINDOW_UPDATE, 0, size - this.#connRecvWindow);
      this.#connRecvWindow = size;
      this.scheduleFlush();
    }
    return true;
  }

  #headersFrame(flags: number, id: number, payload: Buffer): void {
    if (id === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let at = 0;
    let end = payload.length;
    if ((flags & Flag.PADDED) !== 0) {
      const pad = end === 0 ? -1 : (payload[0] as number);
      at = 1;
      end -= pad;
      if (pad < 0 || end < at) return this.connectionError(H2Code.PROTOCOL_ERROR, 'HEADERS padding longer than its frame');
    }
    if ((flags & Flag.PRIORITY) !== 0) at += 5;
    if (at > end) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'HEADERS too short for its priority fields');
    const fragment = payload.subarray(at, end);
    if ((flags & Flag.END_HEADERS) !== 0) this.#decode(id, flags, fragment);
    else this.#continued = { id, flags, parts: [Buffer.from(fragment)], bytes: fragment.length };
  }

  #continuation(flags: number, payload: Buffer): void {
    const c = this.#continued;
    if (c === undefined) return this.connectionError(H2Code.PROTOCOL_ERROR, 'CONTINUATION without a header block');
    c.parts.push(Buffer.from(payload));
    c.bytes += payload.length;
    // A block is bounded like the list it decodes to (HPACK cannot expand less than 1:2 usefully).
    const limit = (this.settings.maxHeaderListBytes ?? 256 * 1024) * 2;
    if (c.bytes > limit) return this.connectionError(H2Code.ENHANCE_YOUR_CALM, `a header block of over ${limit} bytes`);
    if ((flags & Flag.END_HEADERS) === 0) return;
    this.#continued = undefined;
    this.#decode(c.id, c.flags, Buffer.concat(c.parts, c.bytes));
  }

  /** Every block is decoded, even one for a stream already gone: the HPACK table is the connection's. */
  #decode(id: number, flags: number, block: Buffer): void {
    const fields: string[] = [];
    let size: number;
    try {
      size = this.#decoder.decode(block, fields);
    } catch (err) {
      return this.connectionError(H2Code.COMPRESSION_ERROR, err instanceof Error ? err.message : String(err));
    }
    this.headerBlock(id, flags, fields, size);
  }

  #settingsFrame(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if ((flags & Flag.ACK) !== 0) {
      if (payload.length !== 0) this.connectionError(H2Code.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      else this.settingsAcked();
      return;
    }
    if (payload.length % 6 !== 0) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'SETTINGS of a length not a multiple of 6');
    for (let at = 0; at < payload.length; at += 6) {
      if (!this.#setting(payload.readUInt16BE(at), payload.readUInt32BE(at + 2))) return;
    }
    this.established = true;
    this.out.frame(FrameType.SETTINGS, Flag.ACK, 0, undefined);
    this.scheduleFlush();
    this.peerSettingsApplied();
  }

  /** Applies one of the peer's settings; false after a connection error. */
  #setting(key: number, value: number): boolean {
    switch (key) {
      case Setting.HEADER_TABLE_SIZE:
        this.#encoder.setPeerMaxTableBytes(value);
        return true;
      case Setting.ENABLE_PUSH:
        if (value > 1) this.connectionError(H2Code.PROTOCOL_ERROR, 'SETTINGS_ENABLE_PUSH above 1');
        return value <= 1;
      case Setting.MAX_CONCURRENT_STREAMS:
        this.peerMaxStreams = value;
        return true;
      case Setting.INITIAL_WINDOW_SIZE: {
        if (value > MAX_WINDOW_BYTES) {
          this.connectionError(H2Code.FLOW_CONTROL_ERROR, 'SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1');
          return false;
        }
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        return delta === 0 || this.#peerWindowChanged(delta);
      }
      case Setting.MAX_FRAME_SIZE:
        if (value < DEFAULT_MAX_FRAME_BYTES || value > 16_777_215) {
          this.connectionError(H2Code.PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${value} out of range`);
          return false;
        }
        this.peerMaxFrame = value;
        return true;
      default:
        // SETTINGS_MAX_HEADER_LIST_SIZE is advisory; unknown settings are ignored.
        return true;
    }
  }

  /** SETTINGS_INITIAL_WINDOW_SIZE changed by `delta`: every stream's send window moves by it (RFC 9113 §6.9.2). */
  #peerWindowChanged(delta: number): boolean {
    for (const s of this.openStreams()) {
      s.sendWindow += delta;
      if (s.sendWindow > MAX_WINDOW_BYTES) {
        this.connectionError(H2Code.FLOW_CONTROL_ERROR, 'a stream window above 2^31-1');
        return false;
      }
    }
    if (delta > 0) for (const s of this.openStreams()) this.pump(s);
    return true;
  }

  #ping(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'PING on a stream');
    if (payload.length !== 8) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'PING of a length other than 8');
    if ((flags & Flag.ACK) !== 0) return this.pingAcked(payload);
    this.out.frame(FrameType.PING, Flag.ACK, 0, payload);
    this.scheduleFlush();
  }

  /** The peer acknowledged a PING (ours, if its payload is one we sent). */
  protected pingAcked(_payload: Buffer): void {}

  /** Sends a PING with this 8-byte payload (liveness checks; the answer comes to pingAcked). */
  protected sendPing(payload: Buffer): void {
    if (this.failed !== undefined || this.socketClosed) return;
    this.out.frame(FrameType.PING, 0, 0, payload);
    this.scheduleFlush();
  }

  #windowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) return this.connectionError(H2Code.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of a length other than 4');
    const inc = payload.readUInt32BE(0) & 0x7fff_ffff;
    if (id !== 0) return this.streamWindowUpdate(id, inc);
    if (inc === 0) return this.connectionError(H2Code.PROTOCOL_ERROR, 'a WINDOW_UPDATE of 0');
    this.connSendWindow += inc;
    if (this.connSendWindow > MAX_WINDOW_BYTES) return this.connectionError(H2Code.FLOW_CONTROL_ERROR, 'the connection window above 2^31-1');
    this.drained();
  }

  // ---- frames out ----------------------------------------------------------------------------

  /** A header block as HEADERS and, past the peer's frame size, CONTINUATION frames. */
  protected writeHeaders(id: number, fields: readonly string[], endStream: boolean): void {
    const block = this.#encoder.encode(fields);
    const max = this.peerMaxFrame;
    const es = endStream ? Flag.END_STREAM : 0;
    if (block.length <= max) {
      this.out.frame(FrameType.HEADERS, Flag.END_HEADERS | es, id, block);
    } else {
      this.out.frame(FrameType.HEADERS, es, id, block.subarray(0, max));
      for (let at = max; at < block.length; at += max) {
        const last = at + max >= block.length;
        this.out.frame(FrameType.CONTINUATION, last ? Flag.END_HEADERS : 0, id, block.subarray(at, Math.min(at + max, block.length)));
      }
    }
    this.scheduleFlush();
  }

  protected scheduleFlush(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    // After this turn's I/O callbacks: the streams of one downstream read leave in one write.
    setImmediate(this.#flushTick);
  }

  readonly #flushTick = (): void => {
    this.#flushQueued = false;
    this.flush();
  };

  protected flush(): void {
    const parts = this.out.take();
    if (parts.length === 0 || this.socketClosed) return;
    const socket = this.socket;
    let ok: boolean;
    if (parts.length === 1) ok = socket.write(parts[0]);
    else {
      socket.cork();
      ok = true;
      for (const p of parts) ok = socket.write(p);
      socket.uncork();
    }
    if (!ok) this.socketFull = true;
  }

  /**
   * Takes the next DATA chunk of `stream`'s queue that both send windows, the peer's frame size
   * and the socket allow, and charges the windows; undefined when nothing may go now.
   */
  protected takeChunk(stream: S): Buffer | undefined {
    const allowed = Math.min(stream.sendWindow, this.connSendWindow, this.peerMaxFrame);
    if (allowed <= 0 || this.socketFull) return undefined;
    const queue = stream.queue;
    const head = queue[0] as Buffer;
    let chunk = head;
    if (head.length > allowed) {
      chunk = head.subarray(0, allowed);
      queue[0] = head.subarray(allowed);
    } else queue.shift();
    stream.queuedBytes -= chunk.length;
    stream.sendWindow -= chunk.length;
    this.connSendWindow -= chunk.length;
    return chunk;
  }

  /** Queues a DATA frame of a pump; a pump that has queued enough flushes without waiting for the turn's end. */
  protected sendData(id: number, chunk: Buffer, endStream: boolean): void {
    this.out.data(id, chunk, endStream);
    if (this.out.pending >= FLUSH_AT_BYTES) this.flush();
  }

  // ---- failure -------------------------------------------------------------------------------

  /** A connection error: GOAWAY with `code`, every stream failed, the socket closed after the flush. */
  protected connectionError(code: number, detail: string): void {
    if (this.failed !== undefined) return;
    this.out.goaway(this.lastPeerStream, code, detail);
    this.flush();
    this.fail(new H2ConnectionError(code, 'prx', detail, !this.established), undefined);
  }

  /** Fails the connection once: no more frames are read, streams fail, the socket closes. */
  protected fail(error: Error, cause: Error | undefined): void {
    if (this.failed !== undefined) return;
    this.failed = error;
    this.#parser.stop();
    this.failStreams(error, cause);
    const socket = this.socket;
    if (!this.socketClosed) {
      socket.end();
      setTimeout(() => socket.destroy(), FLUSH_BEFORE_DESTROY_MS).unref();
    }
  }
}
