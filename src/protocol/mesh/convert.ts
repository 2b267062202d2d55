import {
  type Addr, AddrNeg, AddrPending, type Address, AnyElem, type BoundName, type DelegateTree, Dentry, Dtab, Empty, Fail, type NameTree, Neg,
  Path, Prefix, type PrefixElem, address, addrBound, addrFailed, leaf, weighted,
} from '../../naming/index.js';
import { MeshMessageError, MeshRemoteFailureError } from './errors.js';
import { bytesToIp, ipToBytes } from '../../core/ip.js';

// Conversions between prx's naming values and the mesh API's messages. Encoders build plain
// objects for protobufjs; decoders read what protobufjs decoded (unset message fields are null).

/** Finagle's address-metadata key for an endpoint's load-balancing weight. */
export const ENDPOINT_WEIGHT_KEY = 'endpoint_addr_weight';
/** The metadata key Linkerd's namers use for an endpoint's node. */
const NODE_NAME_KEY = 'nodeName';

type Maybe<T> = T | null | undefined;
export interface PPath { readonly elems?: Maybe<readonly Uint8Array[]> }
interface PWeighted<T> { readonly weight?: Maybe<number>; readonly tree?: Maybe<T> }
interface PTreeNodes<T> {
  readonly neg?: Maybe<object>;
  readonly fail?: Maybe<object>;
  readonly empty?: Maybe<object>;
  readonly alt?: Maybe<{ readonly trees?: Maybe<readonly T[]> }>;
  readonly union?: Maybe<{ readonly trees?: Maybe<readonly PWeighted<T>[]> }>;
}
export interface PPathNameTree extends PTreeNodes<PPathNameTree> { readonly leaf?: Maybe<{ readonly id?: Maybe<PPath> }> }
export interface PBoundNameTree extends PTreeNodes<PBoundNameTree> {
  readonly leaf?: Maybe<{ readonly id?: Maybe<PPath>; readonly residual?: Maybe<PPath> }>;
}
interface PPrefixElem { readonly label?: Maybe<Uint8Array>; readonly wildcard?: Maybe<object> }
export interface PDentry { readonly prefix?: Maybe<{ readonly elems?: Maybe<readonly PPrefixElem[]> }>; readonly dst?: Maybe<PPathNameTree> }
export interface PDtab { readonly dentries?: Maybe<readonly PDentry[]> }
interface PEndpoint {
  readonly inet_af?: Maybe<number>;
  readonly address?: Maybe<Uint8Array>;
  readonly port?: Maybe<number>;
  readonly meta?: Maybe<{ readonly nodeName?: Maybe<string> }>;
  readonly metadata?: Maybe<Readonly<Record<string, string>>>;
}
export interface PReplicas {
  readonly pending?: Maybe<object>;
  readonly neg?: Maybe<object>;
  readonly failed?: Maybe<{ readonly message?: Maybe<string> }>;
  readonly bound?: Maybe<{ readonly endpoints?: Maybe<readonly PEndpoint[]>; readonly metadata?: Maybe<Readonly<Record<string, string>>> }>;
}

// ---------------------------------------------------------------------------------------------
// Paths and dtabs

export function pathToProto(p: Path): { elems: Buffer[] } {
  return { elems: p.elems.map((e) => Buffer.from(e, 'latin1')) };
}

/** A path; absent reads as the empty path. An empty segment is refused (paths have none). */
export function pathFromProto(p: Maybe<PPath>): Path {
  const elems = p?.elems ?? [];
  if (elems.length === 0) return Path.empty;
  return Path.fromElems(
    elems.map((e) => {
      if (e.length === 0) throw new MeshMessageError('a path segment is empty');
      return Buffer.from(e.buffer, e.byteOffset, e.byteLength).toString('latin1');
    }),
  );
}

export function pathTreeToProto(tree: NameTree<Path>): object {
  switch (tree.type) {
    case 'neg':
      return { neg: {} };
    case 'fail':
      return { fail: {} };
    case 'empty':
      return { empty: {} };
    case 'leaf':
      return { leaf: { id: pathToProto(tree.value) } };
    case 'alt':
      return { alt: { trees: tree.trees.map(pathTreeToProto) } };
    case 'union':
      return { union: { trees: tree.trees.map((w) => ({ weight: w.weight, tree: pathTreeToProto(w.tree) })) } };
  }
}

export function pathTreeFromProto(p: Maybe<PPathNameTree>): NameTree<Path> {
  return treeFromProto(p, (l) => {
    if (l.id == null) throw new MeshMessageError('a leaf has no id');
    return leaf(pathFromProto(l.id));
  });
}

function treeFromProto<P extends PTreeNodes<P> & { readonly leaf?: Maybe<object> }, T>(
  p: Maybe<P>,
  leafOf: (l: NonNullable<P['leaf']>) => NameTree<T>,
): NameTree<T> {
  if (p == null) throw new MeshMessageError('a name tree is missing');
  if (p.neg != null) return Neg;
  if (p.fail != null) return Fail;
  if (p.empty != null) return Empty;
  if (p.leaf != null) return leafOf(p.leaf);
  if (p.alt != null) return { type: 'alt', trees: (p.alt.trees ?? []).map((t) => treeFromProto(t, leafOf)) };
  if (p.union != null) {
    return { type: 'union', trees: (p.union.trees ?? []).map((w) => weighted(w.weight ?? 0, treeFromProto(w.tree, leafOf))) };
  }
  throw new MeshMessageError('a name tree node has no value');
}

export function dentryToProto(d: Dentry): object {
  const elems = d.prefix.elems.map((e) => (e === AnyElem ? { wildcard: {} } : { label: Buffer.from(e, 'latin1') }));
  return { prefix: { elems }, dst: pathTreeToProto(d.dst) };
}

export function dtabToProto(dtab: Dtab): object {
  return { dentries: dtab.dentries.map(dentryToProto) };
}

export function dentryFromProto(p: PDentry): Dentry {
  if (p.prefix == null || p.dst == null) throw new MeshMessageError('a dentry needs a prefix and a destination');
  const elems = (p.prefix.elems ?? []).map((e): PrefixElem => {
    if (e.wildcard != null) return AnyElem;
    if (e.label != null && e.label.length > 0) return Buffer.from(e.label.buffer, e.label.byteOffset, e.label.byteLength).toString('latin1');
    throw new MeshMessageError('a dentry prefix element is neither a label nor a wildcard');
  });
  return new Dentry(new Prefix(elems), pathTreeFromProto(p.dst));
}

/** A dtab; absent reads as the empty dtab. */
export function dtabFromProto(p: Maybe<PDtab>): Dtab {
  const dentries = p?.dentries ?? [];
  return dentries.length === 0 ? Dtab.empty : new Dtab(dentries.map(dentryFromProto));
}

// ---------------------------------------------------------------------------------------------
// Bound trees

/** A tree of bound names; a leaf whose id is not a path (an opaque id) is sent as Neg, as Linkerd does. */
export function boundTreeToProto(tree: NameTree<BoundName>): object {
  switch (tree.type) {
    case 'neg':
      return { neg: {} };
    case 'fail':
      return { fail: {} };
    case 'empty':
      return { empty: {} };
    case 'leaf': {
      const b = tree.value;
      return b.id instanceof Path ? { leaf: { id: pathToProto(b.id), residual: pathToProto(b.residual) } } : { neg: {} };
    }
    case 'alt':
      return { alt: { trees: tree.trees.map(boundTreeToProto) } };
    case 'union':
      return { union: { trees: tree.trees.map((w) => ({ weight: w.weight, tree: boundTreeToProto(w.tree) })) } };
  }
}

/** A bound tree read back; `bound` makes each leaf's name (with its live address). */
export function boundTreeFromProto(p: Maybe<PBoundNameTree>, bound: (id: Path, residual: Path) => BoundName): NameTree<BoundName> {
  return treeFromProto(p, (l) => {
    if (l.id == null) throw new MeshMessageError('a bound leaf has no id');
    const id = pathFromProto(l.id);
    if (id.isEmpty) throw new MeshMessageError('a bound leaf has an empty id');
    return leaf(bound(id, pathFromProto(l.residual)));
  });
}

// ---------------------------------------------------------------------------------------------
// Replicas

function metaToStrings(meta: Readonly<Record<string, unknown>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(meta)) {
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') out[k] = String(v);
    else if (v !== undefined && v !== null && typeof v === 'object') out[k] = JSON.stringify(v);
  }
  return out;
}

function endpointToProto(a: Address): object | undefined {
  const ip = ipToBytes(a.host);
  // Linkerd sends only IP endpoints; a host name a namer did not resolve has no wire form.
  if (ip === undefined) return undefined;
  const metadata = metaToStrings(a.meta);
  if (a.weight !== 1) metadata[ENDPOINT_WEIGHT_KEY] = String(a.weight);
  const nodeName = a.meta[NODE_NAME_KEY];
  return {
    inet_af: ip.family === 4 ? 0 : 1,
    address: ip.bytes,
    port: a.port,
    ...(typeof nodeName === 'string' ? { meta: { nodeName } } : {}),
    metadata,
  };
}

export function addrToReplicas(addr: Addr): object {
  switch (addr.kind) {
    case 'pending':
      return { pending: {} };
    case 'neg':
      return { neg: {} };
    case 'failed':
      return { failed: { message: addr.error.message } };
    case 'bound': {
      const endpoints: object[] = [];
      for (const a of addr.addresses) {
        const e = endpointToProto(a);
        if (e !== undefined) endpoints.push(e);
      }
      return { bound: { endpoints, metadata: metaToStrings(addr.meta) } };
    }
  }
}

function endpointFromProto(e: PEndpoint): Address {
  const host = e.address == null ? undefined : bytesToIp(e.address);
  const port = e.port ?? 0;
  if (host === undefined || port <= 0 || port > 65535) throw new MeshMessageError(`an endpoint has a bad address or port (${port})`);
  const meta: Record<string, unknown> = { ...e.metadata };
  let weight = 1;
  const w = meta[ENDPOINT_WEIGHT_KEY];
  if (typeof w === 'string') {
    const n = Number(w);
    if (Number.isFinite(n) && n >= 0) weight = n;
    delete meta[ENDPOINT_WEIGHT_KEY];
  }
  const nodeName = e.meta?.nodeName;
  if (typeof nodeName === 'string' && nodeName !== '') meta[NODE_NAME_KEY] = nodeName;
  return address(host, port, weight, meta);
}

/** The address set a Replicas message describes; no result at all reads as Neg (as in Linkerd). */
export function replicasToAddr(p: PReplicas): Addr {
  if (p.pending != null) return AddrPending;
  if (p.failed != null) return addrFailed(new MeshRemoteFailureError(p.failed.message || 'the resolver failed to resolve the name'));
  if (p.bound != null) return addrBound((p.bound.endpoints ?? []).map(endpointFromProto), { ...p.bound.metadata });
  return AddrNeg;
}

// ---------------------------------------------------------------------------------------------
// Delegation

function delegateLeaf(b: BoundName): object | undefined {
  return b.id instanceof Path ? { id: pathToProto(b.id), residual: pathToProto(b.residual) } : undefined;
}

/** A delegation as a BoundDelegateTree (Linkerd's shape: transformations carry no dentry). */
export function delegateTreeToProto(t: DelegateTree<BoundName>): object {
  const base = { path: pathToProto(t.path), ...(t.type === 'transformation' ? {} : { dentry: dentryToProto(t.dentry) }) };
  switch (t.type) {
    case 'neg':
      return { ...base, neg: {} };
    case 'fail':
      return { ...base, fail: {} };
    case 'empty':
      return { ...base, empty: {} };
    case 'leaf': {
      const l = delegateLeaf(t.value);
      return l === undefined ? { ...base, neg: {} } : { ...base, leaf: l };
    }
    case 'alt':
      return { ...base, alt: { trees: t.trees.map(delegateTreeToProto) } };
    case 'union':
      return { ...base, union: { trees: t.trees.map((w) => ({ weight: w.weight, tree: delegateTreeToProto(w.tree) })) } };
    case 'delegate':
      return { ...base, delegate: delegateTreeToProto(t.tree) };
    case 'exception':
      return { ...base, exception: `BoundDelegateTree Exception: ${t.error.message || 'No underlying exception message'}` };
    case 'transformation': {
      const l = delegateLeaf(t.value);
      return { ...base, transformation: { name: t.name, ...(l === undefined ? {} : { leaf: l }), tree: delegateTreeToProto(t.tree) } };
    }
  }
}

/** A stored dtab with its version, as a DtabRsp. */
export function dtabRsp(dtab: Dtab, version: Uint8Array): object {
  return { dtab: { version: { id: version }, dtab: dtabToProto(dtab) } };
}

