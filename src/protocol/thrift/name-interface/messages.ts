/**
 * The messages of the resolver's thrift name interface (`namer.thrift` beside this file: the
 * names and field ids namerd's clients use) and the calls and replies of its `Namer` service, in
 * the binary protocol ThriftMux carries. Values are plain objects shaped as the IDL says.
 */
import { ThriftProtocolError } from '../errors.js';
import { AppExceptionType, decodeAppException, encodeAppException, type AppException } from '../app-exception.js';
import { MessageType, readMessageHeader } from '../message.js';
import { ThriftReader, ThriftWriter, TType } from '../struct-codec.js';
import { type EncodedStruct, encodeStruct, readStruct, type StructDesc, writeStruct } from './schema-codec.js';

export type TPath = readonly Buffer[];

export interface NameRef { readonly stamp: Buffer; readonly name: TPath; readonly ns: string }
export interface BindReq { readonly dtab: string; readonly name?: NameRef | undefined; readonly clientId: TPath }
export interface BoundNameT { readonly id: TPath; readonly residual?: TPath | undefined }
export interface WeightedNodeId { readonly weight: number; readonly id: number }
export type BoundNode =
  | { readonly neg: object }
  | { readonly empty: object }
  | { readonly fail: object }
  | { readonly leaf: BoundNameT }
  | { readonly alt: readonly number[] }
  | { readonly weighted: readonly WeightedNodeId[] };
export interface BoundTree { readonly root?: BoundNode | undefined; readonly nodes: ReadonlyMap<number, BoundNode> }
export interface Bound { readonly stamp: Buffer; readonly tree?: BoundTree | undefined; readonly ns: string }
export interface BindFailure { readonly reason: string; readonly retryInSeconds: number; readonly name?: NameRef | undefined; readonly ns?: string | undefined }

export interface AddrReq { readonly name?: NameRef | undefined; readonly clientId: TPath }
export interface AddrMeta { readonly authority?: string; readonly nodeName?: string; readonly endpoint_addr_weight?: number }
export interface TransportAddress { readonly ip: Buffer; readonly port: number; readonly meta?: AddrMeta | undefined }
export interface BoundAddr { readonly addresses: readonly TransportAddress[]; readonly meta?: AddrMeta | undefined }
export type AddrVal = { readonly bound: BoundAddr } | { readonly neg: object };
export interface AddrT { readonly stamp: Buffer; readonly value?: AddrVal | undefined }
export interface AddrFailure { readonly reason: string; readonly retryInSeconds: number; readonly name?: NameRef | undefined }

export type DelegateContents =
  | { readonly error: string }
  | { readonly empty: object }
  | { readonly fail: object }
  | { readonly neg: object }
  | { readonly delegate: number }
  | { readonly boundLeaf: BoundNameT }
  | { readonly pathLeaf: TPath }
  | { readonly alt: readonly number[] }
  | { readonly weighted: readonly WeightedNodeId[] }
  | { readonly transformation: { readonly value: BoundNameT; readonly tree: number } };
export interface DelegateNode { readonly path: TPath; readonly dentry: string; readonly contents?: DelegateContents | undefined }
export interface DelegateTreeT { readonly root?: DelegateNode | undefined; readonly nodes: ReadonlyMap<number, DelegateNode> }
export interface Delegation { readonly stamp: Buffer; readonly tree?: DelegateTreeT | undefined; readonly ns: string }
export interface DelegateReq { readonly dtab: string; readonly delegation?: Delegation | undefined; readonly clientId: TPath }
export interface DelegationFailure { readonly reason: string }

export interface DtabReq { readonly stamp: Buffer; readonly ns: string; readonly clientId: TPath }
export interface DtabRef { readonly stamp: Buffer; readonly dtab: string }
export interface DtabFailure { readonly reason: string }

// Descriptors, in the IDL's order.
const PATH = { list: 'binary' } as const;
const VOID: StructDesc = { name: 'Void', fields: [] };
const NAME_REF: StructDesc = { name: 'NameRef', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'name', type: PATH }, { id: 3, key: 'ns', type: 'string' }] };
const BIND_REQ: StructDesc = { name: 'BindReq', fields: [{ id: 1, key: 'dtab', type: 'string' }, { id: 2, key: 'name', type: { struct: NAME_REF } }, { id: 3, key: 'clientId', type: PATH }] };
const BOUND_NAME: StructDesc = { name: 'BoundName', fields: [{ id: 1, key: 'id', type: PATH }, { id: 2, key: 'residual', type: PATH }] };
const WEIGHTED_NODE_ID: StructDesc = { name: 'WeightedNodeId', fields: [{ id: 1, key: 'weight', type: 'double' }, { id: 2, key: 'id', type: 'i32' }] };
const BOUND_NODE: StructDesc = {
  name: 'BoundNode',
  union: true,
  fields: [
    { id: 1, key: 'neg', type: { struct: VOID } },
    { id: 2, key: 'empty', type: { struct: VOID } },
    { id: 3, key: 'fail', type: { struct: VOID } },
    { id: 4, key: 'leaf', type: { struct: BOUND_NAME } },
    { id: 5, key: 'alt', type: { list: 'i32' } },
    { id: 6, key: 'weighted', type: { list: { struct: WEIGHTED_NODE_ID } } },
  ],
};
const BOUND_TREE: StructDesc = { name: 'BoundTree', fields: [{ id: 1, key: 'root', type: { struct: BOUND_NODE } }, { id: 2, key: 'nodes', type: { map: ['i32', { struct: BOUND_NODE }] } }] };
const BOUND: StructDesc = { name: 'Bound', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'tree', type: { struct: BOUND_TREE } }, { id: 3, key: 'ns', type: 'string' }] };
const BIND_FAILURE: StructDesc = {
  name: 'BindFailure',
  fields: [{ id: 1, key: 'reason', type: 'string' }, { id: 2, key: 'retryInSeconds', type: 'i32' }, { id: 3, key: 'name', type: { struct: NAME_REF } }, { id: 4, key: 'ns', type: 'string' }],
};
const ADDR_REQ: StructDesc = { name: 'AddrReq', fields: [{ id: 1, key: 'name', type: { struct: NAME_REF } }, { id: 2, key: 'clientId', type: PATH }] };
const ADDR_META: StructDesc = {
  name: 'AddrMeta',
  fields: [
    { id: 1, key: 'authority', type: 'string', optional: true },
    { id: 2, key: 'nodeName', type: 'string', optional: true },
    { id: 3, key: 'endpoint_addr_weight', type: 'double', optional: true },
  ],
};
const TRANSPORT_ADDRESS: StructDesc = {
  name: 'TransportAddress',
  fields: [{ id: 1, key: 'ip', type: 'binary' }, { id: 2, key: 'port', type: 'i32' }, { id: 3, key: 'meta', type: { struct: ADDR_META } }],
};
const BOUND_ADDR: StructDesc = { name: 'BoundAddr', fields: [{ id: 1, key: 'addresses', type: { set: { struct: TRANSPORT_ADDRESS } } }, { id: 2, key: 'meta', type: { struct: ADDR_META } }] };
const ADDR_VAL: StructDesc = { name: 'AddrVal', union: true, fields: [{ id: 1, key: 'bound', type: { struct: BOUND_ADDR } }, { id: 2, key: 'neg', type: { struct: VOID } }] };
const ADDR: StructDesc = { name: 'Addr', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'value', type: { struct: ADDR_VAL } }] };
const ADDR_FAILURE: StructDesc = {
  name: 'AddrFailure',
  fields: [{ id: 1, key: 'reason', type: 'string' }, { id: 2, key: 'retryInSeconds', type: 'i32' }, { id: 3, key: 'name', type: { struct: NAME_REF } }],
};
const TRANSFORMATION: StructDesc = { name: 'Transformation', fields: [{ id: 1, key: 'value', type: { struct: BOUND_NAME } }, { id: 2, key: 'tree', type: 'i32' }] };
const DELEGATE_CONTENTS: StructDesc = {
  name: 'DelegateContents',
  union: true,
  fields: [
    { id: 1, key: 'error', type: 'string' },
    { id: 2, key: 'empty', type: { struct: VOID } },
    { id: 3, key: 'fail', type: { struct: VOID } },
    { id: 4, key: 'neg', type: { struct: VOID } },
    { id: 5, key: 'delegate', type: 'i32' },
    { id: 6, key: 'boundLeaf', type: { struct: BOUND_NAME } },
    { id: 7, key: 'pathLeaf', type: PATH },
    { id: 8, key: 'alt', type: { list: 'i32' } },
    { id: 9, key: 'weighted', type: { list: { struct: WEIGHTED_NODE_ID } } },
    { id: 10, key: 'transformation', type: { struct: TRANSFORMATION } },
  ],
};
const DELEGATE_NODE: StructDesc = {
  name: 'DelegateNode',
  fields: [{ id: 1, key: 'path', type: PATH }, { id: 2, key: 'dentry', type: 'string' }, { id: 3, key: 'contents', type: { struct: DELEGATE_CONTENTS } }],
};
const DELEGATE_TREE: StructDesc = { name: 'DelegateTree', fields: [{ id: 1, key: 'root', type: { struct: DELEGATE_NODE } }, { id: 2, key: 'nodes', type: { map: ['i32', { struct: DELEGATE_NODE }] } }] };
const DELEGATION: StructDesc = { name: 'Delegation', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'tree', type: { struct: DELEGATE_TREE } }, { id: 3, key: 'ns', type: 'string' }] };
const DELEGATE_REQ: StructDesc = { name: 'DelegateReq', fields: [{ id: 1, key: 'dtab', type: 'string' }, { id: 2, key: 'delegation', type: { struct: DELEGATION } }, { id: 3, key: 'clientId', type: PATH }] };
const REASON_ONLY = (name: string): StructDesc => ({ name, fields: [{ id: 1, key: 'reason', type: 'string' }] });
const DTAB_REQ: StructDesc = { name: 'DtabReq', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'ns', type: 'string' }, { id: 3, key: 'clientId', type: PATH }] };
const DTAB_REF: StructDesc = { name: 'DtabRef', fields: [{ id: 1, key: 'stamp', type: 'binary' }, { id: 2, key: 'dtab', type: 'string' }] };

/** Each method: its request, its answer and its declared exception. */
interface MethodTypes {
  bind: { req: BindReq; rep: Bound; failure: BindFailure };
  addr: { req: AddrReq; rep: AddrT; failure: AddrFailure };
  delegate: { req: DelegateReq; rep: Delegation; failure: DelegationFailure };
  dtab: { req: DtabReq; rep: DtabRef; failure: DtabFailure };
}
export type NamerMethod = keyof MethodTypes;
export type NamerRequest<M extends NamerMethod> = MethodTypes[M]['req'];
export type NamerReply<M extends NamerMethod> = MethodTypes[M]['rep'];
export type NamerFailure<M extends NamerMethod> = MethodTypes[M]['failure'];

const METHODS: Readonly<Record<NamerMethod, { readonly req: StructDesc; readonly rep: StructDesc; readonly failure: StructDesc }>> = {
  bind: { req: BIND_REQ, rep: BOUND, failure: BIND_FAILURE },
  addr: { req: ADDR_REQ, rep: ADDR, failure: ADDR_FAILURE },
  delegate: { req: DELEGATE_REQ, rep: DELEGATION, failure: REASON_ONLY('DelegationFailure') },
  dtab: { req: DTAB_REQ, rep: DTAB_REF, failure: REASON_ONLY('DtabFailure') },
};

export function isNamerMethod(name: string): name is NamerMethod {
  return Object.hasOwn(METHODS, name);
}

/** A decoded call: its method, sequence id and request (or, for a method the service lacks, its name). */
export type NamerCall =
  | { readonly [M in NamerMethod]: { readonly method: M; readonly seqid: number; readonly req: NamerRequest<M> } }[NamerMethod]
  | { readonly method: undefined; readonly name: string; readonly seqid: number };

/** A call message: `method(1: req)`. */
export function encodeNamerCall<M extends NamerMethod>(method: M, seqid: number, req: NamerRequest<M>): Buffer {
  const w = new ThriftWriter('binary').messageBegin(method, MessageType.CALL, seqid);
  w.structBegin().field(TType.STRUCT, 1);
  writeStruct(w, METHODS[method].req, req as unknown as Record<string, unknown>);
  return w.structEnd().toBuffer();
}

/** Reads a call message; throws ThriftProtocolError on a message that is not a readable call. */
export function decodeNamerCall(msg: Buffer): NamerCall {
  const h = readMessageHeader('binary', msg);
  if (h === undefined) throw new ThriftProtocolError('thrift message cut short');
  if (h.type !== MessageType.CALL) throw new ThriftProtocolError(`expected a thrift CALL, got message type ${h.type}`);
  if (!isNamerMethod(h.name)) return { method: undefined, name: h.name, seqid: h.seqid };
  const desc = METHODS[h.name].req;
  const r = new ThriftReader('binary', msg, h.length);
  let req: Record<string, unknown> | undefined;
  r.structBegin();
  for (;;) {
    const f = r.fieldBegin();
    if (f.type === TType.STOP) break;
    if (f.id === 1 && f.type === TType.STRUCT) req = readStruct(r, desc);
    else r.skip(f.type, f);
  }
  if (req === undefined) throw new ThriftProtocolError(`thrift call ${h.name} has no request`);
  return { method: h.name, seqid: h.seqid, req } as unknown as NamerCall;
}

/** The answer to a call: a value, the method's declared exception, or a TApplicationException. */
export type NamerResult<M extends NamerMethod> =
  | { readonly ok: NamerReply<M> }
  | { readonly failure: NamerFailure<M> }
  | { readonly appException: AppException };

/** A reply message to `method`/`seqid`. */
export function encodeNamerReply<M extends NamerMethod>(method: M, seqid: number, result: NamerResult<M>): Buffer {
  if ('appException' in result) return encodeAppException('binary', method, seqid, result.appException);
  const w = new ThriftWriter('binary').messageBegin(method, MessageType.REPLY, seqid).structBegin();
  const d = METHODS[method];
  if ('ok' in result) writeStruct(w.field(TType.STRUCT, 0), d.rep, result.ok as unknown as Record<string, unknown>);
  else writeStruct(w.field(TType.STRUCT, 1), d.failure, result.failure as unknown as Record<string, unknown>);
  return w.structEnd().toBuffer();
}

/** A bound tree encoded once, for every bind reply that carries it. */
export function encodeBoundTree(tree: BoundTree): EncodedStruct {
  return encodeStruct(BOUND_TREE, tree as unknown as Record<string, unknown>);
}

/** An address value encoded once, for every addr reply that carries it. */
export function encodeAddrVal(value: AddrVal): EncodedStruct {
  return encodeStruct(ADDR_VAL, value);
}

/** A bind reply around a tree encoded by {@link encodeBoundTree}. */
export function encodeBindReply(seqid: number, stamp: Buffer, tree: EncodedStruct, ns: string): Buffer {
  const w = new ThriftWriter('binary').messageBegin('bind', MessageType.REPLY, seqid).structBegin().field(TType.STRUCT, 0);
  writeStruct(w, BOUND, { stamp, tree, ns });
  return w.structEnd().toBuffer();
}

/** An addr reply around a value encoded by {@link encodeAddrVal}. */
export function encodeAddrReply(seqid: number, stamp: Buffer, value: EncodedStruct): Buffer {
  const w = new ThriftWriter('binary').messageBegin('addr', MessageType.REPLY, seqid).structBegin().field(TType.STRUCT, 0);
  writeStruct(w, ADDR, { stamp, value });
  return w.structEnd().toBuffer();
}

/** An EXCEPTION reply for a call to a method the service does not have. */
export function encodeUnknownMethod(name: string, seqid: number): Buffer {
  return encodeAppException('binary', name, seqid, { type: AppExceptionType.UNKNOWN_METHOD, message: `Invalid method name: '${name}'` });
}

/** Reads the reply to a call of `method`; throws ThriftProtocolError on one that does not fit. */
export function decodeNamerReply<M extends NamerMethod>(method: M, msg: Buffer): { readonly seqid: number; readonly result: NamerResult<M> } {
  const h = readMessageHeader('binary', msg);
  if (h === undefined) throw new ThriftProtocolError('thrift message cut short');
  if (h.name !== method) throw new ThriftProtocolError(`reply names method ${h.name}, expected ${method}`);
  if (h.type === MessageType.EXCEPTION) return { seqid: h.seqid, result: { appException: decodeAppException('binary', msg, h) } };
  if (h.type !== MessageType.REPLY) throw new ThriftProtocolError(`expected a thrift REPLY, got message type ${h.type}`);
  const d = METHODS[method];
  const r = new ThriftReader('binary', msg, h.length);
  let result: NamerResult<M> | undefined;
  r.structBegin();
  for (;;) {
    const f = r.fieldBegin();
    if (f.type === TType.STOP) break;
    if (f.id === 0 && f.type === TType.STRUCT) result = { ok: readStruct(r, d.rep) as unknown as NamerReply<M> };
    else if (f.id === 1 && f.type === TType.STRUCT) result = { failure: readStruct(r, d.failure) as unknown as NamerFailure<M> };
    else r.skip(f.type, f);
  }
  if (result === undefined) throw new ThriftProtocolError(`reply to ${method} has no result (MISSING_RESULT)`);
  return { seqid: h.seqid, result };
}
