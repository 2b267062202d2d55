/**
 * Finagle's TTwitter protocol upgrade: a client's first call on a connection is
 * `__can__finagle__trace__v3__` (arguments: a ConnectionOptions struct); a server that knows it
 * replies with an empty UpgradeReply, and from then on every request is preceded by a
 * RequestHeader struct and every reply by a ResponseHeader (Finagle's `tracing.thrift`). A server
 * that does not know it answers a TApplicationException and the connection stays plain.
 *
 * RequestHeader fields: 1 trace_id i64, 2 span_id i64, 3 parent_span_id i64, 5 sampled bool,
 * 6 client_id ClientId{1 name string}, 7 flags i64, 8 contexts list<RequestContext{1 key, 2 value
 * binary}>, 9 dest string, 10 delegations list<Delegation{1 src, 2 dst string}>, 11 trace_id_high
 * i64. ResponseHeader: 1 spans list<Span>, 2 contexts list<RequestContext>.
 */
import { MessageType, type ThriftProtocolName } from './message.js';
import { ThriftReader, ThriftWriter, TType } from './struct-codec.js';

export const UPGRADE_METHOD = '__can__finagle__trace__v3__';

/** What the proxy reads from, and writes into, a RequestHeader. */
export interface RequestHeader {
  traceId?: bigint;
  spanId?: bigint;
  parentSpanId?: bigint;
  sampled?: boolean;
  clientId?: string;
  flags?: bigint;
  /** Broadcast contexts, kept as they came (key, value). */
  contexts?: readonly (readonly [Buffer, Buffer])[];
  dest?: string;
  delegations?: readonly (readonly [string, string])[];
  traceIdHigh?: bigint;
}

/** The upgrade call a client sends (ConnectionOptions is an empty struct). */
export function encodeUpgradeCall(proto: ThriftProtocolName, seqid: number): Buffer {
  return new ThriftWriter(proto).messageBegin(UPGRADE_METHOD, MessageType.CALL, seqid).stop().toBuffer();
}

/** The server's acceptance: a REPLY carrying an empty UpgradeReply. */
export function encodeUpgradeReply(proto: ThriftProtocolName, seqid: number): Buffer {
  return new ThriftWriter(proto).messageBegin(UPGRADE_METHOD, MessageType.REPLY, seqid).stop().toBuffer();
}

/** An empty ResponseHeader (no spans, no contexts): what precedes each reply on an upgraded connection. */
export function emptyResponseHeader(): Buffer {
  // A struct with only its STOP byte is the same in both protocols.
  return EMPTY_STRUCT;
}

const EMPTY_STRUCT = Buffer.from([0]);

export function encodeRequestHeader(proto: ThriftProtocolName, h: RequestHeader): Buffer {
  const w = new ThriftWriter(proto);
  w.field(TType.I64, 1).i64(h.traceId ?? 0n);
  w.field(TType.I64, 2).i64(h.spanId ?? 0n);
  if (h.parentSpanId !== undefined) w.field(TType.I64, 3).i64(h.parentSpanId);
  if (h.sampled !== undefined) w.boolField(5, h.sampled);
  if (h.clientId !== undefined) w.field(TType.STRUCT, 6).structBegin().field(TType.STRING, 1).string(h.clientId).structEnd();
  if (h.flags !== undefined) w.field(TType.I64, 7).i64(h.flags);
  const contexts = h.contexts ?? [];
  w.field(TType.LIST, 8).listBegin(TType.STRUCT, contexts.length);
  for (const [k, v] of contexts) w.structBegin().field(TType.STRING, 1).string(k).field(TType.STRING, 2).string(v).structEnd();
  if (h.dest !== undefined && h.dest !== '') w.field(TType.STRING, 9).string(h.dest);
  const d = h.delegations ?? [];
  if (d.length > 0) {
    w.field(TType.LIST, 10).listBegin(TType.STRUCT, d.length);
    for (const [src, dst] of d) w.structBegin().field(TType.STRING, 1).string(src).field(TType.STRING, 2).string(dst).structEnd();
  }
  if (h.traceIdHigh !== undefined) w.field(TType.I64, 11).i64(h.traceIdHigh);
  return w.stop().toBuffer();
}

/** Reads the RequestHeader at the start of `buf` (fields the proxy does not use are skipped). */
export function decodeRequestHeader(proto: ThriftProtocolName, buf: Buffer): RequestHeader {
  const r = new ThriftReader(proto, buf);
  const h: RequestHeader = {};
  r.structBegin();
  for (;;) {
    const f = r.fieldBegin();
    if (f.type === TType.STOP) break;
    switch (`${f.id}:${f.type}`) {
      case '1:10':
        h.traceId = r.i64();
        break;
      case '2:10':
        h.spanId = r.i64();
        break;
      case '3:10':
        h.parentSpanId = r.i64();
        break;
      case '5:2':
        h.sampled = r.bool(f);
        break;
      case '6:12': {
        const id = readClientId(r);
        if (id !== undefined) h.clientId = id;
        break;
      }
      case '7:10':
        h.flags = r.i64();
        break;
      case '8:15':
        h.contexts = readPairs(r, (x) => x.binary());
        break;
      case '9:11':
        h.dest = r.string();
        break;
      case '10:15':
        h.delegations = readPairs(r, (x) => x.string());
        break;
      case '11:10':
        h.traceIdHigh = r.i64();
        break;
      default:
        r.skip(f.type, f);
    }
  }
  return h;
}

function readClientId(r: ThriftReader): string | undefined {
  let name: string | undefined;
  r.structBegin();
  for (;;) {
    const f = r.fieldBegin();
    if (f.type === TType.STOP) break;
    if (f.id === 1 && f.type === TType.STRING) name = r.string();
    else r.skip(f.type, f);
  }
  r.structEnd();
  return name;
}

/** A list of two-field structs (RequestContext, Delegation) as pairs of field 1 and field 2. */
function readPairs<T>(r: ThriftReader, read: (r: ThriftReader) => T): [T, T][] {
  const l = r.listBegin();
  const out: [T, T][] = [];
  if (l.elemType !== TType.STRUCT) {
    for (let i = 0; i < l.size; i++) r.skip(l.elemType);
    return out;
  }
  for (let i = 0; i < l.size; i++) {
    let a: T | undefined;
    let b: T | undefined;
    r.structBegin();
    for (;;) {
      const f = r.fieldBegin();
      if (f.type === TType.STOP) break;
      if (f.type === TType.STRING && f.id === 1) a = read(r);
      else if (f.type === TType.STRING && f.id === 2) b = read(r);
      else r.skip(f.type, f);
    }
    r.structEnd();
    if (a !== undefined && b !== undefined) out.push([a, b]);
  }
  return out;
}

/** The byte length of the struct (a TTwitter header) at the start of `buf`. */
export function structLength(proto: ThriftProtocolName, buf: Buffer): number {
  const r = new ThriftReader(proto, buf);
  r.skip(TType.STRUCT);
  return r.pos;
}
