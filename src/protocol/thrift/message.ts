/**
 * The thrift message header in the binary (strict and old non-strict) and compact protocols:
 * read it (name, type, seqid and where the seqid lies) and rewrite the seqid. The proxy reads only
 * this of a message; the arguments pass through untouched.
 */
import { ThriftProtocolError } from './errors.js';

export type ThriftProtocolName = 'binary' | 'compact';

/** Thrift's message types. */
export const MessageType = { CALL: 1, REPLY: 2, EXCEPTION: 3, ONEWAY: 4 } as const;

/** Strict binary: the version word's high half (`0x8001`). */
const BINARY_VERSION_1 = 0x80010000 | 0;
const BINARY_VERSION_MASK = 0xffff0000 | 0;
const COMPACT_PROTOCOL_ID = 0x82;
const COMPACT_VERSION = 1;

/** Method names longer than this are refused: no real service has one, and it bounds re-reads. */
export const MAX_NAME_BYTES = 64 * 1024;

/** A message's header and where its parts lie (offsets from the message's first byte). */
export interface MessageHeader {
  readonly name: string;
  readonly type: number;
  readonly seqid: number;
  readonly seqidOffset: number;
  readonly seqidLength: number;
  /** Bytes of the header: the arguments (or result) struct starts here. */
  readonly length: number;
}

/**
 * Reads the message header at `buf[off..end)`; undefined when more bytes are needed. Throws
 * {@link ThriftProtocolError} on bytes that cannot start a message in `proto`.
 */
export function readMessageHeader(proto: ThriftProtocolName, buf: Buffer, off = 0, end = buf.length): MessageHeader | undefined {
  return proto === 'binary' ? readBinaryHeader(buf, off, end) : readCompactHeader(buf, off, end);
}

function readBinaryHeader(buf: Buffer, off: number, end: number): MessageHeader | undefined {
  if (end - off < 4) return undefined;
  const first = buf.readInt32BE(off);
  if (first < 0) {
    if ((first & BINARY_VERSION_MASK) !== BINARY_VERSION_1) throw new ThriftProtocolError(`bad binary protocol version 0x${(first >>> 0).toString(16)}`);
    if (end - off < 8) return undefined;
    const len = buf.readInt32BE(off + 4);
    checkNameLength(len);
    const seqidAt = off + 8 + len;
    if (end < seqidAt + 4) return undefined;
    const name = buf.toString('utf8', off + 8, seqidAt);
    return { name, type: first & 0xff, seqid: buf.readInt32BE(seqidAt), seqidOffset: seqidAt - off, seqidLength: 4, length: seqidAt + 4 - off };
  }
  // The old non-strict header: name length, name, type byte, seqid.
  checkNameLength(first);
  const typeAt = off + 4 + first;
  if (end < typeAt + 5) return undefined;
  const name = buf.toString('utf8', off + 4, typeAt);
  return { name, type: buf[typeAt] as number, seqid: buf.readInt32BE(typeAt + 1), seqidOffset: typeAt + 1 - off, seqidLength: 4, length: typeAt + 5 - off };
}

function readCompactHeader(buf: Buffer, off: number, end: number): MessageHeader | undefined {
  if (end - off < 2) return undefined;
  if (buf[off] !== COMPACT_PROTOCOL_ID) throw new ThriftProtocolError(`bad compact protocol id 0x${(buf[off] as number).toString(16)}`);
  const vt = buf[off + 1] as number;
  if ((vt & 0x1f) !== COMPACT_VERSION) throw new ThriftProtocolError(`bad compact protocol version ${vt & 0x1f}`);
  const seq = readVarint32(buf, off + 2, end);
  if (seq === undefined) return undefined;
  const seqLen = varintEnd - (off + 2);
  const nameLen = readVarint32(buf, varintEnd, end);
  if (nameLen === undefined) return undefined;
  checkNameLength(nameLen);
  const nameAt = varintEnd;
  if (end < nameAt + nameLen) return undefined;
  return {
    name: buf.toString('utf8', nameAt, nameAt + nameLen),
    type: (vt >> 5) & 0x07,
    seqid: seq,
    seqidOffset: 2,
    seqidLength: seqLen,
    length: nameAt + nameLen - off,
  };
}

function checkNameLength(len: number): void {
  if (len < 0 || len > MAX_NAME_BYTES) throw new ThriftProtocolError(`bad method name length ${len}`);
}

/** Where the last {@link readVarint32} stopped (a module-level cursor: no allocation per read). */
let varintEnd = 0;

/**
 * An unsigned 32-bit varint at `buf[at..end)`, as a signed int32 (thrift writes i32 seqids and
 * lengths this way); undefined when cut short. Sets {@link varintEnd}.
 */
function readVarint32(buf: Buffer, at: number, end: number): number | undefined {
  let v = 0;
  for (let i = 0; i < 5; i++) {
    if (at + i >= end) return undefined;
    const b = buf[at + i] as number;
    v |= (b & 0x7f) << (7 * i);
    if ((b & 0x80) === 0) {
      varintEnd = at + i + 1;
      return v | 0;
    }
  }
  throw new ThriftProtocolError('varint longer than 5 bytes');
}

/** The unsigned varint bytes of an int32 (compact seqids and lengths). */
export function varint32(value: number): Buffer {
  const out: number[] = [];
  let v = value >>> 0;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  out.push(v);
  return Buffer.from(out);
}

/**
 * `msg` with its seqid set to `seqid`. Binary rewrites in place (same buffer); compact's varint may
 * change length, so a differently sized seqid is spliced into a new buffer.
 */
export function withSeqid(proto: ThriftProtocolName, msg: Buffer, h: MessageHeader, seqid: number): Buffer {
  if (proto === 'binary') {
    msg.writeInt32BE(seqid | 0, h.seqidOffset);
    return msg;
  }
  const v = varint32(seqid);
  if (v.length === h.seqidLength) {
    v.copy(msg, h.seqidOffset);
    return msg;
  }
  return Buffer.concat([msg.subarray(0, h.seqidOffset), v, msg.subarray(h.seqidOffset + h.seqidLength)]);
}

/** The header of `msg` after {@link withSeqid} (only the seqid and its length change). */
export function headerWithSeqid(proto: ThriftProtocolName, h: MessageHeader, seqid: number): MessageHeader {
  if (proto === 'binary') return { ...h, seqid };
  const len = varint32(seqid).length;
  return { ...h, seqid: seqid | 0, seqidLength: len, length: h.length + len - h.seqidLength };
}
