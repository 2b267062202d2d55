/**
 * The bodies of mux messages (Finagle's mux specification), after the frame's type and tag:
 *
 *   Tdispatch  nc:2 (ckey~2 cval~2){nc} dst~2 nd:2 (from~2 to~2){nd} body
 *   Rdispatch  status:1 nc:2 (ckey~2 cval~2){nc} body      status 0 ok, 1 error (body: why), 2 nack
 *   Treq       n:1 (key:1 value~1){n} body                   keys 1 traceid (24 bytes), 2 traceflag
 *   Rreq       status:1 body
 *   Tinit/Rinit version:2 (key~4 value~4)*
 *   Rerr       why                                           Tdiscarded  tag:3 why
 *   Tlease     unit:1 howlong:8                              (unit 0: milliseconds from now)
 *
 * Numbers are big-endian and unsigned; strings UTF-8. Context keys and values, and bodies, stay
 * the Buffers they were read as (slices): a proxy forwards them without looking inside.
 */
import { MuxBadMessageError } from './errors.js';

/** One request or response context (a broadcast context's key and its marshalled value). */
export interface MuxContextEntry {
  readonly key: Buffer;
  value: Buffer;
}

/** One delegation of a Tdispatch's dtab, as its two strings. */
export interface MuxDelegation {
  readonly prefix: string;
  readonly dst: string;
}

export interface Tdispatch {
  readonly contexts: MuxContextEntry[];
  /** The destination path as written (empty for none). */
  readonly dst: string;
  readonly dtab: readonly MuxDelegation[];
  readonly body: Buffer;
}

export const ReplyStatus = { Ok: 0, Error: 1, Nack: 2 } as const;
export type ReplyStatusCode = (typeof ReplyStatus)[keyof typeof ReplyStatus];

export interface Rdispatch {
  readonly status: ReplyStatusCode;
  readonly contexts: MuxContextEntry[];
  /** The reply (ok) or the UTF-8 reason (error); empty on a nack. */
  readonly body: Buffer;
}

export interface Treq {
  /** The 24-byte trace id (spanid:8 parentid:8 traceid:8), if the client sent one. */
  readonly traceId: Buffer | undefined;
  readonly traceFlags: number;
  readonly body: Buffer;
}

export interface Rreq {
  readonly status: ReplyStatusCode;
  readonly body: Buffer;
}

export interface MuxInit {
  readonly version: number;
  readonly headers: readonly (readonly [Buffer, Buffer])[];
}

export interface Tlease {
  /** 0: `howLong` milliseconds from now; 1: the lease ends at `howLong` ms since the epoch. */
  readonly unit: number;
  readonly howLong: bigint;
}

/** A bounds-checked reader over one message body. */
class BodyReader {
  readonly buf: Buffer;
  at = 0;
  readonly #what: string;
  constructor(buf: Buffer, what: string) {
    this.buf = buf;
    this.#what = what;
  }

  #need(n: number): void {
    if (this.buf.length - this.at < n) throw new MuxBadMessageError(`short ${this.#what}`);
  }

  u8(): number {
    this.#need(1);
    return this.buf[this.at++] as number;
  }

  u16(): number {
    this.#need(2);
    const v = this.buf.readUInt16BE(this.at);
    this.at += 2;
    return v;
  }

  u32(): number {
    this.#need(4);
    const v = this.buf.readUInt32BE(this.at);
    this.at += 4;
    return v;
  }

  bytes(n: number): Buffer {
    this.#need(n);
    const b = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return b;
  }

  string(n: number): string {
    return this.bytes(n).toString('utf8');
  }

  rest(): Buffer {
    const b = this.buf.subarray(this.at);
    this.at = this.buf.length;
    return b;
  }
}

function readContexts(r: BodyReader): MuxContextEntry[] {
  const n = r.u16();
  const out: MuxContextEntry[] = [];
  for (let i = 0; i < n; i++) {
    const key = r.bytes(r.u16());
    out.push({ key, value: r.bytes(r.u16()) });
  }
  return out;
}

function contextsBytes(contexts: readonly MuxContextEntry[]): number {
  let n = 2;
  for (const c of contexts) n += 4 + c.key.length + c.value.length;
  return n;
}

function writeContexts(out: Buffer, at: number, contexts: readonly MuxContextEntry[]): number {
  if (contexts.length > 0xffff) throw new MuxBadMessageError('too many contexts');
  at = out.writeUInt16BE(contexts.length, at);
  for (const c of contexts) {
    if (c.key.length > 0xffff || c.value.length > 0xffff) throw new MuxBadMessageError('context key or value over 65535 bytes');
    at = out.writeUInt16BE(c.key.length, at);
    at += c.key.copy(out, at);
    at = out.writeUInt16BE(c.value.length, at);
    at += c.value.copy(out, at);
  }
  return at;
}

export function decodeTdispatch(body: Buffer): Tdispatch {
  const r = new BodyReader(body, 'Tdispatch');
  const contexts = readContexts(r);
  const dst = r.string(r.u16());
  const nd = r.u16();
  const dtab: MuxDelegation[] = [];
  for (let i = 0; i < nd; i++) {
    const prefix = r.string(r.u16());
    dtab.push({ prefix, dst: r.string(r.u16()) });
  }
  return { contexts, dst, dtab, body: r.rest() };
}

/** A Tdispatch's head (everything before its body): the body is written after it as it is. */
export function encodeTdispatchHead(contexts: readonly MuxContextEntry[], dst: string, dtab: readonly MuxDelegation[]): Buffer {
  const dstBytes = Buffer.from(dst, 'utf8');
  const dtabBytes: Buffer[] = [];
  let n = contextsBytes(contexts) + 2 + dstBytes.length + 2;
  for (const d of dtab) {
    const p = Buffer.from(d.prefix, 'utf8');
    const t = Buffer.from(d.dst, 'utf8');
    dtabBytes.push(p, t);
    n += 4 + p.length + t.length;
  }
  if (dstBytes.length > 0xffff || dtab.length > 0xffff) throw new MuxBadMessageError('Tdispatch destination or dtab too long');
  const out = Buffer.allocUnsafe(n);
  let at = writeContexts(out, 0, contexts);
  at = out.writeUInt16BE(dstBytes.length, at);
  at += dstBytes.copy(out, at);
  at = out.writeUInt16BE(dtab.length, at);
  for (const b of dtabBytes) {
    if (b.length > 0xffff) throw new MuxBadMessageError('Tdispatch delegation too long');
    at = out.writeUInt16BE(b.length, at);
    at += b.copy(out, at);
  }
  return out;
}

function readStatus(r: BodyReader, what: string): ReplyStatusCode {
  const s = r.u8();
  if (s > 2) throw new MuxBadMessageError(`invalid ${what} status ${s}`);
  return s as ReplyStatusCode;
}

export function decodeRdispatch(body: Buffer): Rdispatch {
  const r = new BodyReader(body, 'Rdispatch');
  const status = readStatus(r, 'Rdispatch');
  const contexts = readContexts(r);
  return { status, contexts, body: r.rest() };
}

/** An Rdispatch's head (status and contexts); the body follows as it is. */
export function encodeRdispatchHead(status: ReplyStatusCode, contexts: readonly MuxContextEntry[]): Buffer {
  const out = Buffer.allocUnsafe(1 + contextsBytes(contexts));
  out[0] = status;
  writeContexts(out, 1, contexts);
  return out;
}

const TREQ_TRACE_ID = 1;
const TREQ_TRACE_FLAG = 2;

export function decodeTreq(body: Buffer): Treq {
  const r = new BodyReader(body, 'Treq');
  let n = r.u8();
  if (n > 127) throw new MuxBadMessageError('Treq: too many keys');
  let traceId: Buffer | undefined;
  let traceFlags = 0;
  while (n-- > 0) {
    const key = r.u8();
    const value = r.bytes(r.u8());
    if (key === TREQ_TRACE_ID) {
      if (value.length !== 24) throw new MuxBadMessageError(`bad traceid size ${value.length}`);
      traceId = value;
    } else if (key === TREQ_TRACE_FLAG && value.length > 0) traceFlags = value[value.length - 1] as number;
  }
  return { traceId, traceFlags, body: r.rest() };
}

/** A Treq's head: its keys (the trace id and flags when given). */
export function encodeTreqHead(traceId: Buffer | undefined, traceFlags: number): Buffer {
  if (traceId === undefined) return Buffer.from([0]);
  const out = Buffer.allocUnsafe(1 + 2 + 24 + 2 + 1);
  out[0] = 2;
  out[1] = TREQ_TRACE_ID;
  out[2] = 24;
  traceId.copy(out, 3, 0, 24);
  out[27] = TREQ_TRACE_FLAG;
  out[28] = 1;
  out[29] = traceFlags & 0xff;
  return out;
}

export function decodeRreq(body: Buffer): Rreq {
  const r = new BodyReader(body, 'Rreq');
  const status = readStatus(r, 'Rreq');
  return { status, body: r.rest() };
}

export function decodeInit(body: Buffer, what: string): MuxInit {
  const r = new BodyReader(body, what);
  const version = r.u16();
  const headers: [Buffer, Buffer][] = [];
  while (r.at < body.length) {
    const k = r.bytes(r.u32());
    headers.push([k, r.bytes(r.u32())]);
  }
  return { version, headers };
}

export function encodeInit(init: MuxInit): Buffer {
  let n = 2;
  for (const [k, v] of init.headers) n += 8 + k.length + v.length;
  const out = Buffer.allocUnsafe(n);
  let at = out.writeUInt16BE(init.version, 0);
  for (const [k, v] of init.headers) {
    at = out.writeUInt32BE(k.length, at);
    at += k.copy(out, at);
    at = out.writeUInt32BE(v.length, at);
    at += v.copy(out, at);
  }
  return out;
}

/** The value of an init header, by key. */
export function initHeader(init: MuxInit, key: string): Buffer | undefined {
  for (const [k, v] of init.headers) if (k.toString('utf8') === key) return v;
  return undefined;
}

export function decodeTdiscarded(body: Buffer): { readonly which: number; readonly why: string } {
  if (body.length < 3) throw new MuxBadMessageError('short Tdiscarded message');
  return { which: body.readUIntBE(0, 3), why: body.toString('utf8', 3) };
}

export function encodeTdiscarded(which: number, why: string): Buffer {
  const w = Buffer.from(why, 'utf8');
  const out = Buffer.allocUnsafe(3 + w.length);
  out.writeUIntBE(which, 0, 3);
  w.copy(out, 3);
  return out;
}

export function decodeTlease(body: Buffer): Tlease {
  if (body.length < 9) throw new MuxBadMessageError('short Tlease message');
  return { unit: body[0] as number, howLong: body.readBigInt64BE(1) };
}

export function encodeTlease(lease: Tlease): Buffer {
  const out = Buffer.allocUnsafe(9);
  out[0] = lease.unit;
  out.writeBigInt64BE(lease.howLong, 1);
  return out;
}

/** Finagle's Tinit header carrying the fragment size a peer wants to receive (4-byte big-endian). */
export const FRAMER_HEADER = 'mux-framer';
/** The session version prx speaks (Finagle's only one). */
export const MUX_VERSION = 1;
/** The Rerr a Finagle client sends first, on tag 1, to learn whether its peer understands Tinit (echoed if so). */
export const TINIT_CHECK = 'tinit check';
