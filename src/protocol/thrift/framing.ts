/**
 * Cuts a thrift byte stream into messages: framed (a 4-byte big-endian length before each) or
 * buffered (no frame: the message's own structure says where it ends, see {@link MessageScanner}).
 * Bytes are copied only when a message spans reads; a message within one read is a view of it.
 */
import { ThriftMessageTooLargeError, ThriftProtocolError } from './errors.js';
import type { ThriftProtocolName } from './message.js';
import { MessageScanner } from './scanner.js';
import { structLength } from './ttwitter.js';

/** The default maximum size of one message (a frame's payload), both directions: 32 MiB (a 16 MiB payload and then some). */
export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

export interface FramingOptions {
  readonly framed: boolean;
  readonly protocol: ThriftProtocolName;
  readonly maxMessageBytes: number;
}

/** The 4-byte length prefix of a frame of `n` bytes. */
export function frameHeader(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(n);
  return b;
}

/** Messages up to this size are copied into one buffer with their frame header and prefix. */
const COALESCED_BYTES = 16 * 1024;

/**
 * Writes one message (`prefix`, a TTwitter header, then `msg`), framed or not: a small one as one
 * buffer in one write (cheaper than a corked writev of two or three), a larger one without copying.
 * Returns what the socket's write returned; `written` runs when the last part has been written.
 */
export function writeMessage(
  socket: NodeJS.WritableStream & { cork(): void; uncork(): void },
  framed: boolean,
  prefix: Buffer | undefined,
  msg: Buffer,
  written?: (err?: Error | null) => void,
): boolean {
  if (!framed && prefix === undefined) return socket.write(msg, written);
  const headBytes = framed ? 4 : 0;
  const prefixBytes = prefix?.length ?? 0;
  const size = prefixBytes + msg.length;
  if (size <= COALESCED_BYTES) {
    const out = Buffer.allocUnsafe(headBytes + size);
    if (framed) out.writeInt32BE(size, 0);
    prefix?.copy(out, headBytes);
    msg.copy(out, headBytes + prefixBytes);
    return socket.write(out, written);
  }
  socket.cork();
  if (framed) socket.write(frameHeader(size));
  if (prefix !== undefined) socket.write(prefix);
  const ok = socket.write(msg, written);
  socket.uncork();
  return ok;
}

/**
 * Reads messages from a connection's bytes. {@link push} each read, then call {@link next} until
 * it returns undefined. Throws ThriftProtocolError / ThriftMessageTooLargeError: the connection
 * cannot go on.
 */
export class MessageReader {
  readonly #opts: FramingOptions;
  readonly #scanner: MessageScanner | undefined;
  /** Bytes not yet returned: `#buf[#start..#end)`; capacity beyond `#end` is ours to fill when `#owned`. */
  #buf: Buffer = EMPTY;
  #start = 0;
  #end = 0;
  #owned = false;
  /** Whether each message starts with a TTwitter header struct (an upgraded connection). */
  #prefixed = false;
  /** Bytes of the header struct before the last message {@link next} returned. */
  prefixLength = 0;

  constructor(opts: FramingOptions) {
    this.#opts = opts;
    this.#scanner = opts.framed ? undefined : new MessageScanner(opts.protocol, opts.maxMessageBytes);
  }

  /** Messages from now on carry a TTwitter header struct first. */
  set prefixed(on: boolean) {
    this.#prefixed = on;
    if (this.#scanner !== undefined) this.#scanner.prefixed = on;
  }

  get prefixed(): boolean {
    return this.#prefixed;
  }

  /** Bytes received and not yet returned as a message (a peer that died mid-message left these). */
  get pending(): number {
    return this.#end - this.#start;
  }

  push(chunk: Buffer): void {
    if (this.#end === this.#start) {
      this.#buf = chunk;
      this.#start = 0;
      this.#end = chunk.length;
      this.#owned = false;
      return;
    }
    const pending = this.#end - this.#start;
    const need = pending + chunk.length;
    if (this.#owned && this.#end + chunk.length <= this.#buf.length) {
      chunk.copy(this.#buf, this.#end);
      this.#end += chunk.length;
      return;
    }
    // Grow: at least double, and for a frame whose length is known, the whole frame at once.
    let cap = Math.max(need, pending * 2, 4096);
    if (this.#opts.framed && pending >= 4) cap = Math.max(need, 4 + this.#buf.readInt32BE(this.#start));
    const next = Buffer.allocUnsafe(cap);
    this.#buf.copy(next, 0, this.#start, this.#end);
    chunk.copy(next, pending);
    this.#buf = next;
    this.#start = 0;
    this.#end = need;
    this.#owned = true;
  }

  /** The next whole message (with its header struct when prefixed), or undefined. */
  next(): Buffer | undefined {
    return this.#opts.framed ? this.#nextFrame() : this.#nextBuffered();
  }

  #nextFrame(): Buffer | undefined {
    const avail = this.#end - this.#start;
    if (avail < 4) return undefined;
    const len = this.#buf.readInt32BE(this.#start);
    if (len < 0) throw new ThriftProtocolError(`negative frame length ${len}`);
    if (len > this.#opts.maxMessageBytes) throw new ThriftMessageTooLargeError(len, this.#opts.maxMessageBytes);
    if (avail < 4 + len) return undefined;
    const at = this.#start + 4;
    this.#start = at + len;
    const msg = this.#buf.subarray(at, at + len);
    this.prefixLength = this.#prefixed ? structLength(this.#opts.protocol, msg) : 0;
    return msg;
  }

  #nextBuffered(): Buffer | undefined {
    const scanner = this.#scanner as MessageScanner;
    const m = scanner.scan(this.#buf, this.#start, this.#end);
    if (m === undefined) return undefined;
    scanner.reset();
    const at = this.#start;
    this.#start = at + m.length;
    this.prefixLength = m.prefixLength;
    return this.#buf.subarray(at, at + m.length);
  }
}

const EMPTY = Buffer.alloc(0);
