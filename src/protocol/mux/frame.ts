/**
 * mux framing (Finagle's mux specification): every frame is `size:4 type:1 tag:3 body`, the size
 * counting type, tag and body. The type is a signed byte (T messages positive, R negative; bit 6
 * marks control messages); the tag's most significant bit marks a fragment with more to follow,
 * leaving 23 bits of tag. The decoder here only cuts the byte stream into frames: bodies are
 * slices of what was read (no copy unless a frame spans reads), and a frame over the limit is an
 * error before any of it is buffered.
 */
import { MuxBadMessageError, MuxMessageTooLargeError, MuxPartialBudgetError } from './errors.js';

/** Message types (signed bytes). */
export const MuxType = {
  Treq: 1,
  Rreq: -1,
  Tdispatch: 2,
  Rdispatch: -2,
  Tdrain: 64,
  Rdrain: -64,
  Tping: 65,
  Rping: -65,
  Tdiscarded: 66,
  Rdiscarded: -66,
  Tlease: 67,
  Tinit: 68,
  Rinit: -68,
  Rerr: -128,
  /** The type Finagle still writes its Tdiscarded with (an early implementation's value); both are read. */
  BadTdiscarded: -62,
  /** The type Finagle still writes its Rerr with; both are read. */
  BadRerr: 127,
} as const;

/** Tag 0 marks a T message that expects no reply (Tdiscarded, Tlease). */
export const MARKER_TAG = 0;
/** Finagle reserves tag 1 for control messages (Tping, Tdrain, the handshake). */
export const CONTROL_TAG = 1;
/** The first tag of a dispatch. */
export const MIN_TAG = 2;
export const MAX_TAG = (1 << 23) - 1;
/** The tag bit that marks a fragment with more to follow. */
export const TAG_MSB = 1 << 23;

/** size + type + tag. */
export const FRAME_HEADER_BYTES = 8;

/** The default limit on one message (a frame, or the fragments of one reassembled): 16 MiB. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/** Tags one connection may have partly received messages on at once. */
export const MAX_PARTIAL_TAGS = 256;

/** Whether a message of this type may be split into fragments (application messages with bodies). */
export function isFragmentable(type: number): boolean {
  return type === MuxType.Tdispatch || type === MuxType.Rdispatch;
}

/** Whether `type` is one of the discards (a receiver drops a partly reassembled message of their tag). */
export function isDiscard(type: number): boolean {
  return type === MuxType.Tdiscarded || type === MuxType.BadTdiscarded || type === MuxType.Rdiscarded;
}

/** The 8 bytes before a body of `bodyBytes`. */
export function frameHeader(type: number, tag: number, bodyBytes: number): Buffer {
  return writeFrameHeader(Buffer.allocUnsafe(FRAME_HEADER_BYTES), type, tag, bodyBytes);
}

/** Writes a frame header at the start of `into` (at least {@link FRAME_HEADER_BYTES} long); returns `into`. */
export function writeFrameHeader(into: Buffer, type: number, tag: number, bodyBytes: number): Buffer {
  into.writeUInt32BE(bodyBytes + 4, 0);
  into.writeInt8(type, 4);
  into.writeUIntBE(tag & 0xffffff, 5, 3);
  return into;
}

/** A whole frame: header and body in one buffer (small control messages). */
export function encodeFrame(type: number, tag: number, body?: Buffer): Buffer {
  if (tag < 0 || (tag & ~TAG_MSB) > MAX_TAG) throw new MuxBadMessageError(`invalid tag number ${tag}`);
  const h = frameHeader(type, tag, body?.length ?? 0);
  return body === undefined || body.length === 0 ? h : Buffer.concat([h, body]);
}

/** One frame as read: its type, its tag (fragment bit included) and its body. */
export interface MuxFrame {
  readonly type: number;
  /** The raw 24-bit tag: {@link TAG_MSB} set on a fragment with more to follow. */
  readonly tag: number;
  readonly body: Buffer;
}

/** What a {@link FrameDecoder} hands each frame to. */
export interface FrameSink {
  frame(type: number, tag: number, body: Buffer): void;
}

/**
 * Cuts a byte stream into frames. `push` throws {@link MuxBadMessageError} (a size below the
 * header) or {@link MuxMessageTooLargeError}; the session then closes the connection.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  readonly #sink: FrameSink;
  #chunks: Buffer[] = [];
  #buffered = 0;

  constructor(sink: FrameSink, maxFrameBytes: number) {
    this.#sink = sink;
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Bytes held for a frame not yet complete. */
  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Buffer): void {
    let buf: Buffer;
    if (this.#buffered === 0) buf = chunk;
    else {
      // Part of a frame is held: join only once the frame is complete, so a large frame arriving
      // in many reads is copied once, not once per read.
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
      const need = this.#needed();
      if (need === undefined || this.#buffered < need) return;
      buf = Buffer.concat(this.#chunks, this.#buffered);
      this.#chunks = [];
    }
    let at = 0;
    const end = buf.length;
    while (end - at >= 4) {
      const size = this.#checkSize(buf.readUInt32BE(at));
      if (end - at - 4 < size) break;
      const type = buf.readInt8(at + 4);
      const tag = buf.readUIntBE(at + 5, 3);
      const body = buf.subarray(at + FRAME_HEADER_BYTES, at + 4 + size);
      at += 4 + size;
      this.#sink.frame(type, tag, body);
    }
    if (at === end) {
      this.#buffered = 0;
      this.#chunks = [];
    } else {
      const rest = buf.subarray(at);
      this.#chunks = [rest];
      this.#buffered = rest.length;
    }
  }

  /** The bytes the held frame needs in all (size prefix included), once its size is known. */
  #needed(): number | undefined {
    if (this.#buffered < 4) return undefined;
    let first = this.#chunks[0] as Buffer;
    if (first.length < 4) {
      first = Buffer.concat(this.#chunks, this.#buffered);
      this.#chunks = [first];
    }
    return 4 + this.#checkSize(first.readUInt32BE(0));
  }

  #checkSize(size: number): number {
    if (size < 4) throw new MuxBadMessageError(`mux frame size ${size} is shorter than its type and tag`);
    if (size - 4 > this.#maxFrameBytes) throw new MuxMessageTooLargeError(size - 4, this.#maxFrameBytes);
    return size;
  }
}

/**
 * Reassembles fragmented messages per tag: fragments (tag MSB set) are held until the fragment
 * without the bit; a discard of the tag drops what was held. Whole messages pass through. Besides
 * each message's own limit, what is held across tags is bounded: at most `maxPartialBytes`
 * (default twice the message limit) on at most {@link MAX_PARTIAL_TAGS} tags.
 */
export class Defragmenter {
  /** Made at the first fragment: most sessions never see one, and a Map per session adds up over thousands. */
  #partial: Map<number, { parts: Buffer[]; bytes: number }> | undefined;
  readonly #maxMessageBytes: number;
  readonly #maxPartialBytes: number;
  readonly #maxPartialTags: number;
  /** Bytes held across every tag. */
  #heldBytes = 0;

  constructor(maxMessageBytes: number, maxPartialBytes = 2 * maxMessageBytes, maxPartialTags = MAX_PARTIAL_TAGS) {
    this.#maxMessageBytes = maxMessageBytes;
    this.#maxPartialBytes = maxPartialBytes;
    this.#maxPartialTags = maxPartialTags;
  }

  /** Bytes held in partly received messages. */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  #drop(tag: number): void {
    const held = this.#partial?.get(tag);
    if (held === undefined) return;
    this.#heldBytes -= held.bytes;
    this.#partial?.delete(tag);
  }

  /** The message this frame completes (its tag without the fragment bit), or undefined while more are to come. */
  accept(type: number, rawTag: number, body: Buffer): MuxFrame | undefined {
    const tag = rawTag & ~TAG_MSB;
    const more = (rawTag & TAG_MSB) !== 0;
    const partial = this.#partial?.get(tag);
    if (isDiscard(type) && type !== MuxType.Rdiscarded) {
      // A Tdiscarded names its tag in its body; a partly received Tdispatch of that tag is dropped.
      if (body.length >= 3) this.#drop(body.readUIntBE(0, 3));
      return { type, tag, body };
    }
    if (type === MuxType.Rdiscarded) {
      this.#drop(tag);
      return { type, tag, body };
    }
    if (!more && partial === undefined) return { type, tag, body };
    if (!isFragmentable(type)) throw new MuxBadMessageError(`mux message type ${type} cannot be fragmented`);
    const held = partial ?? { parts: [], bytes: 0 };
    held.bytes += body.length;
    if (held.bytes > this.#maxMessageBytes) throw new MuxMessageTooLargeError(held.bytes, this.#maxMessageBytes);
    if (more) {
      if (partial === undefined) {
        const all = (this.#partial ??= new Map());
        if (all.size >= this.#maxPartialTags) throw new MuxPartialBudgetError(`mux peer has partial messages on more than ${this.#maxPartialTags} tags`);
        all.set(tag, held);
      }
      this.#heldBytes += body.length;
      if (this.#heldBytes > this.#maxPartialBytes) throw new MuxPartialBudgetError(`mux peer holds ${this.#heldBytes} bytes in partial messages, over the connection's budget of ${this.#maxPartialBytes}`);
      held.parts.push(body);
      return undefined;
    }
    held.parts.push(body);
    this.#heldBytes -= held.bytes - body.length;
    this.#partial?.delete(tag);
    return { type, tag, body: Buffer.concat(held.parts, held.bytes) };
  }

  /** Tags with a message partly received. */
  get pending(): number {
    return this.#partial?.size ?? 0;
  }
}
