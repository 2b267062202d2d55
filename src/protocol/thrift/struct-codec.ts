/**
 * A small writer and reader of thrift structs in the binary and compact protocols, for the few
 * messages the proxy makes or reads itself (TApplicationException, Finagle's TTwitter upgrade and
 * headers). Types are given by their binary protocol codes; the compact side maps them. Payloads
 * the proxy forwards never go through here.
 */
import { ThriftProtocolError } from './errors.js';
import { varint32, type ThriftProtocolName } from './message.js';

/** Thrift's type codes (as the binary protocol writes them). */
export const TType = { STOP: 0, BOOL: 2, BYTE: 3, DOUBLE: 4, I16: 6, I32: 8, I64: 10, STRING: 11, STRUCT: 12, MAP: 13, SET: 14, LIST: 15, UUID: 16 } as const;

// Binary type code → compact type code, and back.
const TO_COMPACT: Readonly<Record<number, number>> = { 2: 1, 3: 3, 4: 7, 6: 4, 8: 5, 10: 6, 11: 8, 12: 12, 13: 11, 14: 10, 15: 9, 16: 13 };
const FROM_COMPACT: Readonly<Record<number, number>> = { 1: 2, 2: 2, 3: 3, 4: 6, 5: 8, 6: 10, 7: 4, 8: 11, 9: 15, 10: 14, 11: 13, 12: 12, 13: 16 };

const MAX_SKIP_DEPTH = 64;

/** Writes a message or a bare struct, field by field. */
export class ThriftWriter {
  readonly #compact: boolean;
  readonly #parts: Buffer[] = [];
  /** Compact: the last field id of each open struct (ids are written as deltas). */
  readonly #lastIds: number[] = [0];

  constructor(proto: ThriftProtocolName) {
    this.#compact = proto === 'compact';
  }

  messageBegin(name: string, type: number, seqid: number): this {
    const n = Buffer.from(name, 'utf8');
    if (this.#compact) {
      this.#parts.push(Buffer.from([0x82, 1 | (type << 5)]), varint32(seqid), varint32(n.length), n);
    } else {
      const b = Buffer.alloc(8);
      b.writeInt32BE((0x80010000 | type) | 0, 0);
      b.writeInt32BE(n.length, 4);
      const s = Buffer.alloc(4);
      s.writeInt32BE(seqid | 0, 0);
      this.#parts.push(b, n, s);
    }
    return this;
  }

  field(type: number, id: number): this {
    if (!this.#compact) {
      const b = Buffer.alloc(3);
      b[0] = type;
      b.writeInt16BE(id, 1);
      this.#parts.push(b);
      return this;
    }
    this.#compactField(TO_COMPACT[type] as number, id);
    return this;
  }

  #compactField(ctype: number, id: number): void {
    const ids = this.#lastIds;
    const last = ids[ids.length - 1] as number;
    const delta = id - last;
    if (delta > 0 && delta <= 15) this.#parts.push(Buffer.from([(delta << 4) | ctype]));
    else this.#parts.push(Buffer.from([ctype]), varint32(zigzag32(id)));
    ids[ids.length - 1] = id;
  }

  /** A bool field (compact writes the value in the field's type). */
  boolField(id: number, v: boolean): this {
    if (this.#compact) this.#compactField(v ? 1 : 2, id);
    else this.field(TType.BOOL, id).#parts.push(Buffer.from([v ? 1 : 0]));
    return this;
  }

  stop(): this {
    this.#parts.push(Buffer.from([0]));
    return this;
  }

  /** Opens a nested struct value (after its field header or as a list element). */
  structBegin(): this {
    this.#lastIds.push(0);
    return this;
  }

  /** Ends a struct begun with {@link structBegin}: its STOP. */
  structEnd(): this {
    this.#lastIds.pop();
    return this.stop();
  }

  string(s: string | Buffer): this {
    const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
    if (this.#compact) this.#parts.push(varint32(b.length), b);
    else this.#parts.push(this.#i32Bytes(b.length), b);
    return this;
  }

  i32(v: number): this {
    this.#parts.push(this.#compact ? varint32(zigzag32(v)) : this.#i32Bytes(v));
    return this;
  }

  i64(v: bigint): this {
    if (this.#compact) this.#parts.push(varint64(BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))));
    else {
      const b = Buffer.alloc(8);
      b.writeBigInt64BE(BigInt.asIntN(64, v));
      this.#parts.push(b);
    }
    return this;
  }

  double(v: number): this {
    const b = Buffer.alloc(8);
    if (this.#compact) b.writeDoubleLE(v);
    else b.writeDoubleBE(v);
    this.#parts.push(b);
    return this;
  }

  /** A set is written as a list is (its own type code goes in the field head). */
  setBegin(elemType: number, size: number): this {
    return this.listBegin(elemType, size);
  }

  mapBegin(keyType: number, valueType: number, size: number): this {
    if (this.#compact) {
      if (size === 0) this.#parts.push(Buffer.from([0]));
      else this.#parts.push(varint32(size), Buffer.from([((TO_COMPACT[keyType] as number) << 4) | (TO_COMPACT[valueType] as number)]));
    } else {
      const b = Buffer.alloc(6);
      b[0] = keyType;
      b[1] = valueType;
      b.writeInt32BE(size, 2);
      this.#parts.push(b);
    }
    return this;
  }

  listBegin(elemType: number, size: number): this {
    if (this.#compact) {
      const t = TO_COMPACT[elemType] as number;
      if (size < 15) this.#parts.push(Buffer.from([(size << 4) | t]));
      else this.#parts.push(Buffer.from([0xf0 | t]), varint32(size));
    } else {
      const b = Buffer.alloc(5);
      b[0] = elemType;
      b.writeInt32BE(size, 1);
      this.#parts.push(b);
    }
    return this;
  }

  #i32Bytes(v: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeInt32BE(v | 0);
    return b;
  }

  /** Bytes already encoded in this writer's protocol (a struct written once for many messages). */
  raw(b: Buffer): this {
    this.#parts.push(b);
    return this;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.#parts);
  }
}

function zigzag32(v: number): number {
  return ((v << 1) ^ (v >> 31)) >>> 0;
}

function varint64(v: bigint): Buffer {
  const out: number[] = [];
  let x = v;
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return Buffer.from(out);
}

/** A field header as read: its (binary) type code and id; type STOP ends the struct. */
export interface FieldHead {
  readonly type: number;
  readonly id: number;
  /** Compact bools: the value carried in the field's type. */
  readonly bool?: boolean;
}

/**
 * Reads structs from a complete buffer (the caller has the whole message): out-of-bounds reads and
 * bad bytes throw {@link ThriftProtocolError}.
 */
export class ThriftReader {
  readonly #compact: boolean;
  readonly #buf: Buffer;
  pos: number;
  readonly #lastIds: number[] = [0];

  constructor(proto: ThriftProtocolName, buf: Buffer, pos = 0) {
    this.#compact = proto === 'compact';
    this.#buf = buf;
    this.pos = pos;
  }

  #take(n: number): number {
    const at = this.pos;
    if (n < 0 || at + n > this.#buf.length) throw new ThriftProtocolError('thrift struct cut short');
    this.pos = at + n;
    return at;
  }

  structBegin(): void {
    this.#lastIds.push(0);
  }

  structEnd(): void {
    this.#lastIds.pop();
  }

  fieldBegin(): FieldHead {
    const b = this.#buf[this.#take(1)] as number;
    if (b === 0) return { type: TType.STOP, id: 0 };
    if (!this.#compact) return { type: b, id: this.#buf.readInt16BE(this.#take(2)) };
    const ids = this.#lastIds;
    const delta = b >> 4;
    const ct = b & 0x0f;
    const id = delta === 0 ? unzigzag32(this.#varint()) : (ids[ids.length - 1] as number) + delta;
    ids[ids.length - 1] = id;
    const type = FROM_COMPACT[ct];
    if (type === undefined) throw new ThriftProtocolError(`unknown compact protocol type ${ct}`);
    return ct === 1 || ct === 2 ? { type, id, bool: ct === 1 } : { type, id };
  }

  string(): string {
    return this.binary().toString('utf8');
  }

  binary(): Buffer {
    const len = this.#compact ? this.#varint() : this.#buf.readInt32BE(this.#take(4));
    const at = this.#take(len);
    return this.#buf.subarray(at, at + len);
  }

  i32(): number {
    return this.#compact ? unzigzag32(this.#varint()) : this.#buf.readInt32BE(this.#take(4));
  }

  i64(): bigint {
    if (!this.#compact) return this.#buf.readBigInt64BE(this.#take(8));
    let v = 0n;
    for (let i = 0; i < 10; i++) {
      const b = this.#buf[this.#take(1)] as number;
      v |= BigInt(b & 0x7f) << BigInt(7 * i);
      if ((b & 0x80) === 0) return BigInt.asIntN(64, (v >> 1n) ^ -(v & 1n));
    }
    throw new ThriftProtocolError('varint longer than 10 bytes');
  }

  double(): number {
    const at = this.#take(8);
    return this.#compact ? this.#buf.readDoubleLE(at) : this.#buf.readDoubleBE(at);
  }

  /** A bool value: a field's (compact carries it in the head) or a collection element's. */
  bool(head?: FieldHead): boolean {
    if (head?.bool !== undefined) return head.bool;
    const b = this.#buf[this.#take(1)] as number;
    return this.#compact ? b === 1 : b !== 0;
  }

  listBegin(): { readonly elemType: number; readonly size: number } {
    if (!this.#compact) {
      const at = this.#take(5);
      const size = this.#buf.readInt32BE(at + 1);
      if (size < 0) throw new ThriftProtocolError(`negative list size ${size}`);
      return { elemType: this.#buf[at] as number, size };
    }
    const h = this.#buf[this.#take(1)] as number;
    const size = h >> 4 === 15 ? this.#varint() : h >> 4;
    if (size < 0) throw new ThriftProtocolError(`negative list size ${size}`);
    const t = FROM_COMPACT[h & 0x0f];
    if (t === undefined) throw new ThriftProtocolError(`unknown compact protocol type ${h & 0x0f}`);
    return { elemType: t, size };
  }

  /** A set's head: read as a list's. */
  setBegin(): { readonly elemType: number; readonly size: number } {
    return this.listBegin();
  }

  mapBegin(): { readonly keyType: number; readonly valueType: number; readonly size: number } {
    if (this.#compact) {
      const size = this.#varint();
      if (size < 0) throw new ThriftProtocolError(`negative map size ${size}`);
      if (size === 0) return { keyType: TType.STOP, valueType: TType.STOP, size };
      const kv = this.#buf[this.#take(1)] as number;
      const keyType = FROM_COMPACT[kv >> 4];
      const valueType = FROM_COMPACT[kv & 0x0f];
      if (keyType === undefined || valueType === undefined) throw new ThriftProtocolError(`unknown compact protocol map types ${kv}`);
      return { keyType, valueType, size };
    }
    const at = this.#take(6);
    const size = this.#buf.readInt32BE(at + 2);
    if (size < 0) throw new ThriftProtocolError(`negative map size ${size}`);
    return { keyType: this.#buf[at] as number, valueType: this.#buf[at + 1] as number, size };
  }

  /** Skips a value of `type` (a field whose head was read: pass it, for compact bools). */
  skip(type: number, head?: FieldHead, depth = 0): void {
    if (depth > MAX_SKIP_DEPTH) throw new ThriftProtocolError('thrift struct nested too deep');
    switch (type) {
      case TType.BOOL:
        this.bool(head);
        return;
      case TType.BYTE:
        this.#take(1);
        return;
      case TType.I16:
      case TType.I32:
        if (this.#compact) this.#varint();
        else this.#take(type === TType.I16 ? 2 : 4);
        return;
      case TType.I64:
        this.i64();
        return;
      case TType.DOUBLE:
        this.#take(8);
        return;
      case TType.UUID:
        this.#take(16);
        return;
      case TType.STRING:
        this.binary();
        return;
      case TType.STRUCT:
        this.structBegin();
        for (;;) {
          const f = this.fieldBegin();
          if (f.type === TType.STOP) break;
          this.skip(f.type, f, depth + 1);
        }
        this.structEnd();
        return;
      case TType.LIST:
      case TType.SET: {
        const l = this.listBegin();
        for (let i = 0; i < l.size; i++) this.skip(l.elemType, undefined, depth + 1);
        return;
      }
      case TType.MAP: {
        const m = this.mapBegin();
        for (let i = 0; i < m.size; i++) {
          this.skip(m.keyType, undefined, depth + 1);
          this.skip(m.valueType, undefined, depth + 1);
        }
        return;
      }
      default:
        throw new ThriftProtocolError(`unknown thrift type ${type}`);
    }
  }

  #varint(): number {
    let v = 0;
    for (let i = 0; i < 5; i++) {
      const b = this.#buf[this.#take(1)] as number;
      v |= (b & 0x7f) << (7 * i);
      if ((b & 0x80) === 0) return v | 0;
    }
    throw new ThriftProtocolError('varint longer than 5 bytes');
  }
}

function unzigzag32(n: number): number {
  return (n >>> 1) ^ -(n & 1);
}
