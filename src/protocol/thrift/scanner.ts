/**
 * Finds where a thrift message ends in a byte stream without a frame (the buffered transport):
 * an iterative, resumable skip over the message header and its one struct, optionally preceded by
 * a struct (Finagle's TTwitter request or response header). Bounded: a nesting depth limit and a
 * maximum message size. Resumable: bytes are read once however they arrive (one at a time, or a
 * whole message at once), so large messages cost linear time.
 */
import { ThriftMessageTooLargeError, ThriftProtocolError } from './errors.js';
import { readMessageHeader, type MessageHeader, type ThriftProtocolName } from './message.js';

/** Nesting deeper than this is refused (Apache Thrift's default recursion limit). */
export const MAX_DEPTH = 64;

// Binary protocol type codes.
const T_STOP = 0;
const T_BOOL = 2;
const T_BYTE = 3;
const T_DOUBLE = 4;
const T_I16 = 6;
const T_I32 = 8;
const T_I64 = 10;
const T_STRING = 11;
const T_STRUCT = 12;
const T_MAP = 13;
const T_SET = 14;
const T_LIST = 15;
const T_UUID = 16;

// Frames of the skip stack: what is being skipped, its element types, how many items are left.
const F_STRUCT = 0;
const F_LIST = 1;
const F_MAP = 2;

/** Thrown inside a step when the bytes run out; the step is retried once more arrive. */
// One object, thrown and caught within a scan: control flow, never seen outside (no stack per throw).
const INCOMPLETE = new Error('thrift message incomplete');

/** The outcome of a completed scan. */
export interface ScannedMessage {
  /** Bytes of the leading struct (0 without one). */
  readonly prefixLength: number;
  readonly header: MessageHeader;
  /** Bytes of the whole message, prefix included. */
  readonly length: number;
}

/**
 * Scans one message at a time. {@link scan} is called with the same message start and a growing
 * end until it returns the message; then {@link reset} before the next.
 */
export class MessageScanner {
  readonly #proto: ThriftProtocolName;
  readonly #maxBytes: number;
  readonly #maxDepth: number;
  /** Whether the next message starts with a struct (TTwitter's header). */
  prefixed = false;
  // 0: the leading struct, 1: the message header, 2: the message's struct.
  #phase = 0;
  #pos = 0;
  #prefixLength = 0;
  #header: MessageHeader | undefined;
  // The skip stack, four numbers a frame: kind, first type, second type, items left.
  readonly #stack: number[] = [];
  #cursor = 0;
  #end = 0;
  #buf: Buffer = Buffer.alloc(0);
  #started = false;

  constructor(proto: ThriftProtocolName, maxBytes: number, maxDepth = MAX_DEPTH) {
    this.#proto = proto;
    this.#maxBytes = maxBytes;
    this.#maxDepth = maxDepth;
  }

  reset(): void {
    this.#started = false;
    this.#phase = 0;
    this.#pos = 0;
    this.#prefixLength = 0;
    this.#header = undefined;
    this.#stack.length = 0;
  }

  /** The message starting at `buf[start]` with `end` bytes available; undefined while incomplete. */
  scan(buf: Buffer, start: number, end: number): ScannedMessage | undefined {
    if (!this.#started) {
      this.#started = true;
      this.#phase = this.prefixed ? 0 : 1;
      if (this.prefixed) this.#push(F_STRUCT, 0, 0, 0);
    }
    this.#buf = buf;
    this.#end = end;
    for (;;) {
      if (this.#phase === 1) {
        const h = readMessageHeader(this.#proto, buf, start + this.#pos, end);
        if (h === undefined) return this.#incomplete(end - start);
        this.#header = h;
        this.#pos += h.length;
        this.#phase = 2;
        this.#push(F_STRUCT, 0, 0, 0);
      }
      while (this.#stack.length > 0) {
        this.#cursor = start + this.#pos;
        try {
          if (this.#proto === 'binary') this.#stepBinary();
          else this.#stepCompact();
        } catch (e) {
          if (e === INCOMPLETE) return this.#incomplete(end - start);
          throw e;
        }
        this.#pos = this.#cursor - start;
        if (this.#pos > this.#maxBytes) throw new ThriftMessageTooLargeError(undefined, this.#maxBytes);
      }
      if (this.#phase === 0) {
        this.#prefixLength = this.#pos;
        this.#phase = 1;
        continue;
      }
      return { prefixLength: this.#prefixLength, header: this.#header as MessageHeader, length: this.#pos };
    }
  }

  #incomplete(available: number): undefined {
    if (available > this.#maxBytes) throw new ThriftMessageTooLargeError(undefined, this.#maxBytes);
    return undefined;
  }

  #push(kind: number, t1: number, t2: number, left: number): void {
    if (this.#stack.length / 4 >= this.#maxDepth) throw new ThriftProtocolError(`thrift message nested deeper than ${this.#maxDepth}`);
    this.#stack.push(kind, t1, t2, left);
  }

  /**
   * The type of the next item of the top (collection) frame, or -1 when the frame is done (and
   * popped). The count is only taken down by {@link #itemDone}, once the item's bytes were there:
   * a step cut short by missing bytes is retried as a whole.
   */
  #nextItem(): number {
    const s = this.#stack;
    const top = s.length - 4;
    const left = s[top + 3] as number;
    if (left === 0) {
      s.length = top;
      return -1;
    }
    // A map's items alternate key, value: an even count left means a key comes next.
    return s[top] === F_MAP && left % 2 === 1 ? (s[top + 2] as number) : (s[top + 1] as number);
  }

  #itemDone(top: number): void {
    const s = this.#stack;
    s[top + 3] = (s[top + 3] as number) - 1;
  }

  #need(n: number): number {
    const at = this.#cursor;
    if (at + n > this.#end) throw INCOMPLETE;
    this.#cursor = at + n;
    return at;
  }

  // ---- binary --------------------------------------------------------------------------------

  #stepBinary(): void {
    const s = this.#stack;
    const buf = this.#buf;
    if (s[s.length - 4] === F_STRUCT) {
      const type = buf[this.#need(1)] as number;
      if (type === T_STOP) {
        s.length -= 4;
        return;
      }
      this.#need(2);
      this.#valueBinary(type);
      return;
    }
    const top = s.length - 4;
    const type = this.#nextItem();
    if (type < 0) return;
    this.#valueBinary(type);
    this.#itemDone(top);
  }

  #valueBinary(type: number): void {
    const buf = this.#buf;
    switch (type) {
      case T_BOOL:
      case T_BYTE:
        this.#need(1);
        return;
      case T_I16:
        this.#need(2);
        return;
      case T_I32:
        this.#need(4);
        return;
      case T_DOUBLE:
      case T_I64:
        this.#need(8);
        return;
      case T_UUID:
        this.#need(16);
        return;
      case T_STRING: {
        const len = buf.readInt32BE(this.#need(4));
        this.#size(len);
        this.#need(len);
        return;
      }
      case T_STRUCT:
        this.#push(F_STRUCT, 0, 0, 0);
        return;
      case T_LIST:
      case T_SET: {
        const at = this.#need(5);
        const size = buf.readInt32BE(at + 1);
        this.#size(size);
        this.#push(F_LIST, buf[at] as number, 0, size);
        return;
      }
      case T_MAP: {
        const at = this.#need(6);
        const size = buf.readInt32BE(at + 2);
        this.#size(size);
        this.#push(F_MAP, buf[at] as number, buf[at + 1] as number, size * 2);
        return;
      }
      default:
        throw new ThriftProtocolError(`unknown binary protocol type ${type}`);
    }
  }

  #size(n: number): void {
    if (n < 0) throw new ThriftProtocolError(`negative size ${n}`);
    if (n > this.#maxBytes) throw new ThriftMessageTooLargeError(n, this.#maxBytes);
  }

  // ---- compact -------------------------------------------------------------------------------

  #stepCompact(): void {
    const s = this.#stack;
    const buf = this.#buf;
    if (s[s.length - 4] === F_STRUCT) {
      const b = buf[this.#need(1)] as number;
      if (b === 0) {
        s.length -= 4;
        return;
      }
      // A zero delta: the field id follows as a zigzag varint.
      if ((b & 0xf0) === 0) this.#varint(3);
      const type = b & 0x0f;
      // Booleans in fields carry their value in the type.
      if (type === 1 || type === 2) return;
      this.#valueCompact(type);
      return;
    }
    const top = s.length - 4;
    const type = this.#nextItem();
    if (type < 0) return;
    // Booleans in collections take a byte each.
    if (type === 1 || type === 2) this.#need(1);
    else this.#valueCompact(type);
    this.#itemDone(top);
  }

  #valueCompact(type: number): void {
    const buf = this.#buf;
    switch (type) {
      case 3:
        this.#need(1);
        return;
      case 4:
        this.#varint(3);
        return;
      case 5:
        this.#varint(5);
        return;
      case 6:
        this.#varint(10);
        return;
      case 7:
        this.#need(8);
        return;
      case 13:
        this.#need(16);
        return;
      case 8: {
        const len = this.#varint(5);
        this.#size(len);
        this.#need(len);
        return;
      }
      case 12:
        this.#push(F_STRUCT, 0, 0, 0);
        return;
      case 9:
      case 10: {
        const h = buf[this.#need(1)] as number;
        let size = h >> 4;
        if (size === 15) size = this.#varint(5);
        this.#size(size);
        this.#push(F_LIST, h & 0x0f, 0, size);
        return;
      }
      case 11: {
        const size = this.#varint(5);
        this.#size(size);
        if (size === 0) return;
        const kv = buf[this.#need(1)] as number;
        this.#push(F_MAP, kv >> 4, kv & 0x0f, size * 2);
        return;
      }
      default:
        throw new ThriftProtocolError(`unknown compact protocol type ${type}`);
    }
  }

  /** Skips a varint of at most `maxLen` bytes; returns its low 32 bits as a signed int. */
  #varint(maxLen: number): number {
    const buf = this.#buf;
    let v = 0;
    for (let i = 0; i < maxLen; i++) {
      const b = buf[this.#need(1)] as number;
      if (i < 5) v |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return v | 0;
    }
    throw new ThriftProtocolError(`varint longer than ${maxLen} bytes`);
  }
}
