/**
 * A small schema-driven thrift struct codec: a struct is described once by its fields (id, key,
 * type) and values are plain objects. It serves the resolver's name interface, whose dozen
 * structs would otherwise each need a hand-written reader and writer that must agree. Unknown
 * fields are skipped, as thrift requires; a value of the wrong wire type is a protocol error.
 */
import { ThriftProtocolError } from '../errors.js';
import { TType, type ThriftReader, ThriftWriter } from '../struct-codec.js';

/** A field's type: a scalar, a struct (or union), or a container of types. */
export type FieldType =
  | 'string'
  | 'binary'
  | 'i32'
  | 'double'
  | { readonly struct: StructDesc }
  | { readonly list: FieldType }
  | { readonly set: FieldType }
  | { readonly map: readonly [FieldType, FieldType] };

export interface FieldDesc {
  readonly id: number;
  readonly key: string;
  readonly type: FieldType;
  /** An `optional` field: left absent when not on the wire (others read as their zero value). */
  readonly optional?: boolean;
}

/** A struct, exception or union (a union sets exactly one field). */
export interface StructDesc {
  readonly name: string;
  readonly fields: readonly FieldDesc[];
  readonly union?: boolean;
}

/** A struct already encoded (binary protocol), written as is where a struct of its type goes. */
export class EncodedStruct {
  readonly bytes: Buffer;
  constructor(bytes: Buffer) {
    this.bytes = bytes;
  }
}

/** Encodes a struct once, for values written to many replies (a change every watcher is told of). */
export function encodeStruct(desc: StructDesc, value: Readonly<Record<string, unknown>>): EncodedStruct {
  const w = new ThriftWriter('binary');
  writeStruct(w, desc, value);
  return new EncodedStruct(w.toBuffer());
}

/** Deepest nesting read (trees are flattened on the wire, so real messages stay shallow). */
const MAX_DEPTH = 32;

/** The wire type code of a field type. */
export function wireType(t: FieldType): number {
  if (t === 'string' || t === 'binary') return TType.STRING;
  if (t === 'i32') return TType.I32;
  if (t === 'double') return TType.DOUBLE;
  if ('struct' in t) return TType.STRUCT;
  if ('list' in t) return TType.LIST;
  if ('set' in t) return TType.SET;
  return TType.MAP;
}

/** Writes `value` (an object with the descriptor's keys; undefined fields are left out) as a struct. */
export function writeStruct(w: ThriftWriter, desc: StructDesc, value: Readonly<Record<string, unknown>>): void {
  w.structBegin();
  for (const f of desc.fields) {
    const v = value[f.key];
    if (v === undefined) continue;
    w.field(wireType(f.type), f.id);
    writeValue(w, f.type, v);
  }
  w.structEnd();
}

function writeValue(w: ThriftWriter, t: FieldType, v: unknown): void {
  if (t === 'string') w.string(v as string);
  else if (t === 'binary') w.string(v as Buffer);
  else if (t === 'i32') w.i32(v as number);
  else if (t === 'double') w.double(v as number);
  else if ('struct' in t) {
    if (v instanceof EncodedStruct) w.raw(v.bytes);
    else writeStruct(w, t.struct, v as Record<string, unknown>);
  }
  else if ('list' in t || 'set' in t) {
    const elem = 'list' in t ? t.list : t.set;
    const items = v as readonly unknown[];
    if ('list' in t) w.listBegin(wireType(elem), items.length);
    else w.setBegin(wireType(elem), items.length);
    for (const item of items) writeValue(w, elem, item);
  } else {
    const [kt, vt] = t.map;
    const entries = v as ReadonlyMap<unknown, unknown>;
    w.mapBegin(wireType(kt), wireType(vt), entries.size);
    for (const [k, x] of entries) {
      writeValue(w, kt, k);
      writeValue(w, vt, x);
    }
  }
}

/** Reads a struct described by `desc`; fields absent on the wire are absent from the result. */
export function readStruct(r: ThriftReader, desc: StructDesc, depth = 0): Record<string, unknown> {
  if (depth > MAX_DEPTH) throw new ThriftProtocolError(`thrift struct ${desc.name} nested too deep`);
  const out: Record<string, unknown> = {};
  r.structBegin();
  for (;;) {
    const head = r.fieldBegin();
    if (head.type === TType.STOP) break;
    const f = desc.fields.find((x) => x.id === head.id);
    if (f === undefined || !sameWireType(wireType(f.type), head.type)) {
      r.skip(head.type, head);
      continue;
    }
    out[f.key] = readValue(r, f.type, depth + 1);
  }
  r.structEnd();
  if (desc.union === true) {
    if (Object.keys(out).length !== 1) throw new ThriftProtocolError(`thrift union ${desc.name} must set exactly one field, not ${Object.keys(out).length}`);
    return out;
  }
  for (const f of desc.fields) if (out[f.key] === undefined && f.optional !== true) setZero(out, f);
  return out;
}

/**
 * A field of default requiredness may be absent on the wire: it reads as its zero value (an empty
 * string, stamp, path or map; 0). Structs stay absent: whoever reads one checks it is there.
 */
function setZero(out: Record<string, unknown>, f: FieldDesc): void {
  const t = f.type;
  if (t === 'binary') out[f.key] = EMPTY;
  else if (t === 'string') out[f.key] = '';
  else if (t === 'i32' || t === 'double') out[f.key] = 0;
  else if ('list' in t || 'set' in t) out[f.key] = [];
  else if ('map' in t) out[f.key] = new Map();
}

const EMPTY = Buffer.alloc(0);

// Old writers put a set where a list is declared and the reverse: both read alike.
function sameWireType(declared: number, actual: number): boolean {
  if (declared === actual) return true;
  return (declared === TType.LIST || declared === TType.SET) && (actual === TType.LIST || actual === TType.SET);
}

function readValue(r: ThriftReader, t: FieldType, depth: number): unknown {
  if (t === 'string') return r.string();
  if (t === 'binary') return Buffer.from(r.binary());
  if (t === 'i32') return r.i32();
  if (t === 'double') return r.double();
  if ('struct' in t) return readStruct(r, t.struct, depth);
  if ('list' in t || 'set' in t) {
    const elem = 'list' in t ? t.list : t.set;
    const head = r.listBegin();
    const items: unknown[] = [];
    for (let i = 0; i < head.size; i++) {
      if (!sameWireType(wireType(elem), head.elemType)) {
        r.skip(head.elemType, undefined, depth);
        continue;
      }
      items.push(readValue(r, elem, depth));
    }
    return items;
  }
  const [kt, vt] = t.map;
  const head = r.mapBegin();
  const entries = new Map<unknown, unknown>();
  const fits = head.size === 0 || (sameWireType(wireType(kt), head.keyType) && sameWireType(wireType(vt), head.valueType));
  for (let i = 0; i < head.size; i++) {
    if (!fits) {
      r.skip(head.keyType, undefined, depth);
      r.skip(head.valueType, undefined, depth);
      continue;
    }
    const k = readValue(r, kt, depth);
    entries.set(k, readValue(r, vt, depth));
  }
  return entries;
}
