/**
 * Conversions between prx's naming values and the thrift name interface's shapes. Trees travel
 * flattened: a root node and a table of numbered nodes that alt, weighted, delegate and
 * transformation nodes point to (ids given depth-first from 0; readers only follow them).
 */
import { bytesToIp, ipToBytes } from '../../../core/ip.js';
import {
  type Addr, AddrNeg, type Address, type BoundName, type DelegateTree, Dentry, Empty, Fail, type NameTree, Neg, Path, address, addrBound, alt,
  leaf, readDentry, union, weighted,
} from '../../../naming/index.js';
import { ThriftNamerMessageError } from '../errors.js';
import type {
  AddrMeta, AddrVal, BoundNameT, BoundNode, BoundTree, DelegateContents, DelegateNode, DelegateTreeT, TPath, TransportAddress, WeightedNodeId,
} from './messages.js';

/** Finagle's address-metadata keys that have a field of their own on the wire. */
const AUTHORITY_KEY = 'authority';
const NODE_NAME_KEY = 'nodeName';

/** Deepest tree read back: a table whose ids loop or nest without end is refused. */
const MAX_TREE_DEPTH = 100;

export function pathToThrift(p: Path): Buffer[] {
  return p.elems.map((e) => Buffer.from(e, 'latin1'));
}

/** A path read back; an empty segment is refused (paths have none). */
export function pathFromThrift(p: TPath): Path {
  if (p.length === 0) return Path.empty;
  return Path.fromElems(
    p.map((e) => {
      if (e.length === 0) throw new ThriftNamerMessageError('a path segment is empty');
      return e.toString('latin1');
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Bound trees

/** A bound tree, flattened. Leaves whose id is not a path (a failed transformer's) are Neg, as in namerd. */
export function boundTreeToThrift(tree: NameTree<BoundName>): BoundTree {
  const nodes = new Map<number, BoundNode>();
  let next = 0;
  const visit = (t: NameTree<BoundName>): BoundNode => {
    switch (t.type) {
      case 'neg':
        return { neg: {} };
      case 'empty':
        return { empty: {} };
      case 'fail':
        return { fail: {} };
      case 'leaf':
        return t.value.id instanceof Path ? { leaf: boundName(t.value.id, t.value.residual) } : { neg: {} };
      case 'alt':
        return { alt: t.trees.map((c) => place(c)) };
      case 'union':
        return { weighted: t.trees.map((w): WeightedNodeId => ({ weight: w.weight, id: place(w.tree) })) };
    }
  };
  const place = (t: NameTree<BoundName>): number => {
    const id = next++;
    nodes.set(id, visit(t));
    return id;
  };
  return { root: visit(tree), nodes };
}

function boundName(id: Path, residual: Path): BoundNameT {
  return { id: pathToThrift(id), residual: pathToThrift(residual) };
}

/** A bound tree read back; `bound` makes each leaf's name (with its live address). */
export function boundTreeFromThrift(t: BoundTree, bound: (id: Path, residual: Path) => BoundName): NameTree<BoundName> {
  const node = (id: number, depth: number): NameTree<BoundName> => {
    const n = t.nodes.get(id);
    if (n === undefined) throw new ThriftNamerMessageError(`a bound tree refers to node ${id}, which it does not have`);
    return read(n, depth + 1);
  };
  const read = (n: BoundNode, depth: number): NameTree<BoundName> => {
    if (depth > MAX_TREE_DEPTH) throw new ThriftNamerMessageError('a bound tree nests too deep (or its node ids loop)');
    if ('neg' in n) return Neg;
    if ('empty' in n) return Empty;
    if ('fail' in n) return Fail;
    if ('leaf' in n) {
      const id = pathFromThrift(n.leaf.id);
      if (id.isEmpty) throw new ThriftNamerMessageError('a bound leaf has an empty id');
      return leaf(bound(id, pathFromThrift(n.leaf.residual ?? [])));
    }
    if ('alt' in n) return alt(...n.alt.map((id) => node(id, depth)));
    return union(...n.weighted.map((w) => weighted(w.weight, node(w.id, depth))));
  };
  if (t.root === undefined) throw new ThriftNamerMessageError('a bound tree has no root');
  return read(t.root, 0);
}

// ---------------------------------------------------------------------------------------------
// Addresses

function metaToThrift(meta: Readonly<Record<string, unknown>>, weight?: number): AddrMeta | undefined {
  const authority = meta[AUTHORITY_KEY];
  const nodeName = meta[NODE_NAME_KEY];
  const out: { authority?: string; nodeName?: string; endpoint_addr_weight?: number } = {};
  if (typeof authority === 'string') out.authority = authority;
  if (typeof nodeName === 'string') out.nodeName = nodeName;
  if (weight !== undefined && weight !== 1) out.endpoint_addr_weight = weight;
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * A bound address set or Neg. Only IP endpoints have a wire form (namerd sends no others); a
 * host name a namer did not resolve is left out.
 */
export function addrToThrift(addr: Addr & { readonly kind: 'bound' | 'neg' }): AddrVal {
  if (addr.kind === 'neg') return { neg: {} };
  const addresses: TransportAddress[] = [];
  for (const a of addr.addresses) {
    const ip = ipToBytes(a.host);
    if (ip === undefined) continue;
    const meta = metaToThrift(a.meta, a.weight);
    addresses.push(meta === undefined ? { ip: ip.bytes, port: a.port } : { ip: ip.bytes, port: a.port, meta });
  }
  const meta = metaToThrift(addr.meta);
  return { bound: meta === undefined ? { addresses } : { addresses, meta } };
}

function metaFromThrift(m: AddrMeta | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (m?.authority !== undefined) out[AUTHORITY_KEY] = m.authority;
  if (m?.nodeName !== undefined) out[NODE_NAME_KEY] = m.nodeName;
  return out;
}

export function addrFromThrift(v: AddrVal): Addr {
  if ('neg' in v) return AddrNeg;
  const addresses: Address[] = v.bound.addresses.map((t) => {
    const host = bytesToIp(t.ip);
    if (host === undefined || t.port <= 0 || t.port > 65535) throw new ThriftNamerMessageError(`an address has a bad ip (${t.ip.length} bytes) or port (${t.port})`);
    const w = t.meta?.endpoint_addr_weight;
    return address(host, t.port, w !== undefined && Number.isFinite(w) && w >= 0 ? w : 1, metaFromThrift(t.meta));
  });
  return addrBound(addresses, metaFromThrift(v.bound.meta));
}

// ---------------------------------------------------------------------------------------------
// Delegation

/** The request tree of a delegation: one path, reached by no dentry. */
export function delegationRequestTree(path: Path): DelegateTreeT {
  return { root: { path: pathToThrift(path), dentry: Dentry.nop.show, contents: { pathLeaf: pathToThrift(path) } }, nodes: new Map() };
}

/** The name tree a delegation request asks about (clients send a single path leaf; trees are read whole). */
export function delegationRequestPaths(t: DelegateTreeT): NameTree<Path> {
  const node = (id: number, depth: number): NameTree<Path> => {
    const n = t.nodes.get(id);
    if (n === undefined) throw new ThriftNamerMessageError(`a delegate tree refers to node ${id}, which it does not have`);
    return read(n, depth + 1);
  };
  const read = (n: DelegateNode, depth: number): NameTree<Path> => {
    if (depth > MAX_TREE_DEPTH) throw new ThriftNamerMessageError('a delegate tree nests too deep (or its node ids loop)');
    const c = n.contents;
    if (c === undefined) throw new ThriftNamerMessageError('a delegate node has no contents');
    if ('pathLeaf' in c) return leaf(pathFromThrift(c.pathLeaf));
    if ('neg' in c) return Neg;
    if ('fail' in c) return Fail;
    if ('empty' in c) return Empty;
    if ('delegate' in c) return node(c.delegate, depth);
    if ('alt' in c) return alt(...c.alt.map((id) => node(id, depth)));
    if ('weighted' in c) return union(...c.weighted.map((w) => weighted(w.weight, node(w.id, depth))));
    throw new ThriftNamerMessageError('a delegation request may hold paths only, not bound names, transformations or errors');
  };
  if (t.root === undefined) throw new ThriftNamerMessageError('a delegation request has no tree');
  return read(t.root, 0);
}

/** A delegation's explanation, flattened. */
export function delegateTreeToThrift(tree: DelegateTree<BoundName>): DelegateTreeT {
  const nodes = new Map<number, DelegateNode>();
  let next = 0;
  const place = (t: DelegateTree<BoundName>): number => {
    const id = next++;
    nodes.set(id, visit(t));
    return id;
  };
  const visit = (t: DelegateTree<BoundName>): DelegateNode => {
    const path = pathToThrift(t.path);
    const dentry = t.dentry.show;
    const at = (contents: DelegateContents): DelegateNode => ({ path, dentry, contents });
    switch (t.type) {
      case 'neg':
      case 'fail':
      case 'empty':
        return at(t.type === 'neg' ? { neg: {} } : t.type === 'fail' ? { fail: {} } : { empty: {} });
      case 'exception':
        return at({ error: t.error.message });
      case 'leaf':
        return at(t.value.id instanceof Path ? { boundLeaf: boundName(t.value.id, t.value.residual) } : { neg: {} });
      case 'delegate':
        return at({ delegate: place(t.tree) });
      case 'alt':
        return at({ alt: t.trees.map((c) => place(c)) });
      case 'union':
        return at({ weighted: t.trees.map((w) => ({ weight: w.weight, id: place(w.tree) })) });
      case 'transformation': {
        const value = t.value.id instanceof Path ? boundName(t.value.id, t.value.residual) : { id: [] };
        // namerd puts the transformer's name where other nodes have their dentry.
        return { path, dentry: t.name, contents: { transformation: { value, tree: place(t.tree) } } };
      }
    }
  };
  return { root: visit(tree), nodes };
}

/** A delegation's explanation read back; `bound` makes each leaf's name. */
export function delegateTreeFromThrift(t: DelegateTreeT, bound: (id: Path, residual: Path) => BoundName): DelegateTree<BoundName> {
  const node = (id: number, depth: number): DelegateTree<BoundName> => {
    const n = t.nodes.get(id);
    if (n === undefined) throw new ThriftNamerMessageError(`a delegate tree refers to node ${id}, which it does not have`);
    return read(n, depth + 1);
  };
  const read = (n: DelegateNode, depth: number): DelegateTree<BoundName> => {
    if (depth > MAX_TREE_DEPTH) throw new ThriftNamerMessageError('a delegate tree nests too deep (or its node ids loop)');
    const c = n.contents;
    if (c === undefined) throw new ThriftNamerMessageError('a delegate node has no contents');
    const path = pathFromThrift(n.path);
    if ('transformation' in c) {
      const { value, tree } = c.transformation;
      return { type: 'transformation', path, dentry: Dentry.nop, name: n.dentry, value: bound(pathFromThrift(value.id), pathFromThrift(value.residual ?? [])), tree: node(tree, depth) };
    }
    const dentry = dentryFromThrift(n.dentry);
    if ('error' in c) return { type: 'exception', path, dentry, error: new Error(c.error) };
    if ('neg' in c) return { type: 'neg', path, dentry };
    if ('fail' in c) return { type: 'fail', path, dentry };
    if ('empty' in c) return { type: 'empty', path, dentry };
    if ('delegate' in c) return { type: 'delegate', path, dentry, tree: node(c.delegate, depth) };
    if ('boundLeaf' in c) return { type: 'leaf', path, dentry, value: bound(pathFromThrift(c.boundLeaf.id), pathFromThrift(c.boundLeaf.residual ?? [])) };
    if ('alt' in c) return { type: 'alt', path, dentry, trees: c.alt.map((id) => node(id, depth)) };
    if ('weighted' in c) return { type: 'union', path, dentry, trees: c.weighted.map((w) => ({ weight: w.weight, tree: node(w.id, depth) })) };
    throw new ThriftNamerMessageError('a delegation answer holds an unbound path leaf');
  };
  if (t.root === undefined) throw new ThriftNamerMessageError('a delegation answer has no tree');
  return read(t.root, 0);
}

function dentryFromThrift(text: string): Dentry {
  if (text === '' || text === Dentry.nop.show) return Dentry.nop;
  try {
    return readDentry(text);
  } catch (e) {
    throw new ThriftNamerMessageError(`a delegate node's dentry does not parse: ${text}`, { cause: e });
  }
}
