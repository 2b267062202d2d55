/**
 * HTTP/2 framing (RFC 9113 §4, §6): frame types and flags, a parser that cuts a byte stream into
 * frames without copying whole frames it can slice, and a writer that packs the small frames of a
 * tick into shared slabs so a session flushes them in one write.
 */

export const FrameType = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const Flag = {
  END_STREAM: 0x1,
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const Setting = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** The client connection preface (RFC 9113 §3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FRAME_HEADER_BYTES = 9;
export const DEFAULT_MAX_FRAME_BYTES = 16_384;
export const DEFAULT_WINDOW_BYTES = 65_535;
export const MAX_WINDOW_BYTES = 2 ** 31 - 1;

/** Receives the frames a {@link FrameParser} cuts; `payload` is valid only during the call. */
export interface FrameSink {
  frame(type: number, flags: number, streamId: number, payload: Buffer): void;
  /** A frame longer than the receiver's SETTINGS_MAX_FRAME_SIZE: a connection error (FRAME_SIZE_ERROR). */
  oversized(length: number): void;
}

/**
 * Cuts frames out of the bytes a socket reads. A frame wholly inside a chunk is handed over as a
 * view of it; only a frame split across chunks is gathered into a buffer of its own.
 */
export class FrameParser {
  readonly #sink: FrameSink;
  maxFrameBytes: number;
  #rest: Buffer | undefined;
  #stopped = false;

  constructor(sink: FrameSink, maxFrameBytes: number) {
    this.#sink = sink;
    this.maxFrameBytes = maxFrameBytes;
  }

  /** No more frames are delivered (the connection failed). */
  stop(): void {
    this.#stopped = true;
    this.#rest = undefined;
  }

  push(chunk: Buffer): void {
    let buf = chunk;
    const rest = this.#rest;
    if (rest !== undefined) {
      buf = Buffer.concat([rest, chunk]);
      this.#rest = undefined;
    }
    let at = 0;
    const end = buf.length;
    while (!this.#stopped && end - at >= FRAME_HEADER_BYTES) {
      const length = (buf[at]! << 16) | (buf[at + 1]! << 8) | buf[at + 2]!;
      if (length > this.maxFrameBytes) {
        this.#stopped = true;
        this.#sink.oversized(length);
        return;
      }
      if (end - at - FRAME_HEADER_BYTES < length) break;
      const type = buf[at + 3]!;
      const flags = buf[at + 4]!;
      const streamId = buf.readUInt32BE(at + 5) & 0x7fff_ffff;
      const start = at + FRAME_HEADER_BYTES;
      at = start + length;
      this.#sink.frame(type, flags, streamId, buf.subarray(start, at));
    }
    if (!this.#stopped && at < end) this.#rest = Buffer.from(buf.subarray(at));
  }
}

const SLAB_BYTES = 64 * 1024;
/** DATA payloads at least this long are written as they are rather than copied into a slab. */
const COPY_BELOW = 1024;

/**
 * Frames queued for the next flush. Small frames are written into a slab (a region once handed to
 * the socket is never written again); large DATA payloads join the queue as they are.
 */
export class FrameWriter {
  /** Each slab's size: a session holds one, so servers of many idle connections choose small ones. */
  readonly #slabBytes: number;
  #slab: Buffer;
  /** Start of the slab region not yet queued, and the write position. */
  #start = 0;
  #pos = 0;
  #parts: Buffer[] = [];
  #bytes = 0;

  constructor(slabBytes = SLAB_BYTES) {
    this.#slabBytes = slabBytes;
    this.#slab = Buffer.allocUnsafe(slabBytes);
  }

  /** Bytes queued and not yet taken. */
  get pending(): number {
    return this.#bytes + this.#pos - this.#start;
  }

  /** Room for `n` more bytes in the slab (a new slab when the current one is full). */
  #room(n: number): void {
    if (this.#pos + n <= this.#slab.length) return;
    this.#cut();
    this.#slab = Buffer.allocUnsafe(Math.max(this.#slabBytes, n));
    this.#start = 0;
    this.#pos = 0;
  }

  /** Queues the slab region written since the last cut. */
  #cut(): void {
    if (this.#pos > this.#start) {
      this.#parts.push(this.#slab.subarray(this.#start, this.#pos));
      this.#bytes += this.#pos - this.#start;
      this.#start = this.#pos;
    }
  }

  #header(length: number, type: number, flags: number, streamId: number): void {
    const s = this.#slab;
    let p = this.#pos;
    s[p++] = length >>> 16;
    s[p++] = (length >>> 8) & 0xff;
    s[p++] = length & 0xff;
    s[p++] = type;
    s[p++] = flags;
    s.writeUInt32BE(streamId, p);
    this.#pos = p + 4;
  }

  raw(bytes: Buffer): void {
    this.#room(bytes.length);
    this.#pos += bytes.copy(this.#slab, this.#pos);
  }

  /** A frame whose payload is copied into the slab. */
  frame(type: number, flags: number, streamId: number, payload: Uint8Array | undefined): void {
    const n = payload === undefined ? 0 : payload.length;
    this.#room(FRAME_HEADER_BYTES + n);
    this.#header(n, type, flags, streamId);
    if (payload !== undefined) {
      this.#slab.set(payload, this.#pos);
      this.#pos += n;
    }
  }

  /** DATA: small payloads copied, large ones queued as they are (the caller no longer changes them). */
  data(streamId: number, payload: Buffer, endStream: boolean): void {
    const flags = endStream ? 0x1 : 0;
    if (payload.length < COPY_BELOW) {
      this.frame(FrameType.DATA, flags, streamId, payload);
      return;
    }
    this.#room(FRAME_HEADER_BYTES);
    this.#header(payload.length, FrameType.DATA, flags, streamId);
    this.#cut();
    this.#parts.push(payload);
    this.#bytes += payload.length;
  }

  /** A 4-byte payload frame: RST_STREAM's code or WINDOW_UPDATE's increment. */
  u32(type: number, streamId: number, value: number): void {
    this.#room(FRAME_HEADER_BYTES + 4);
    this.#header(4, type, 0, streamId);
    this.#slab.writeUInt32BE(value >>> 0, this.#pos);
    this.#pos += 4;
  }

  /** SETTINGS from (id, value) pairs. */
  settings(pairs: readonly number[]): void {
    const n = (pairs.length / 2) * 6;
    this.#room(FRAME_HEADER_BYTES + n);
    this.#header(n, FrameType.SETTINGS, 0, 0);
    const s = this.#slab;
    for (let i = 0; i < pairs.length; i += 2) {
      s.writeUInt16BE(pairs[i]!, this.#pos);
      s.writeUInt32BE(pairs[i + 1]! >>> 0, this.#pos + 2);
      this.#pos += 6;
    }
  }

  goaway(lastStreamId: number, code: number, debug: string): void {
    const text = Buffer.from(debug, 'utf8');
    this.#room(FRAME_HEADER_BYTES + 8 + text.length);
    this.#header(8 + text.length, FrameType.GOAWAY, 0, 0);
    this.#slab.writeUInt32BE(lastStreamId, this.#pos);
    this.#slab.writeUInt32BE(code, this.#pos + 4);
    this.#pos += 8;
    this.#pos += text.copy(this.#slab, this.#pos);
  }

  /** Takes everything queued, in order. */
  take(): Buffer[] {
    this.#cut();
    const parts = this.#parts;
    this.#parts = [];
    this.#bytes = 0;
    return parts;
  }
}
