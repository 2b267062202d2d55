import { formatJavaFixed2 } from './java-format.js';
import { BoundName } from './name.js';
import { Path } from './path.js';

/**
 * A tree of names, Finagle's `NameTree[T]`: Leaf (a name), Alt (`a | b`, fail-over in order),
 * Union (`0.3*a & 0.7*b`, weighted load-balance), Neg (`~`, no such name: fall through), Fail
 * (`!`, stop), Empty (`$`, exists with no endpoints). Nodes are immutable plain objects.
 */
export type NameTree<T> = Leaf<T> | Alt<T> | Union<T> | NegNode | FailNode | EmptyNode;

export interface Leaf<T> {
  readonly type: 'leaf';
  readonly value: T;
}
export interface Alt<T> {
  readonly type: 'alt';
  readonly trees: readonly NameTree<T>[];
}
export interface Weighted<T> {
  readonly weight: number;
  readonly tree: NameTree<T>;
}
export interface Union<T> {
  readonly type: 'union';
  readonly trees: readonly Weighted<T>[];
}
export interface NegNode {
  readonly type: 'neg';
}
export interface FailNode {
  readonly type: 'fail';
}
export interface EmptyNode {
  readonly type: 'empty';
}

export const Neg: NegNode = Object.freeze({ type: 'neg' });
export const Fail: FailNode = Object.freeze({ type: 'fail' });
export const Empty: EmptyNode = Object.freeze({ type: 'empty' });

/** Default union weight (Finagle `NameTree.Weighted.defaultWeight`). */
export const DEFAULT_WEIGHT = 1.0;

export function leaf<T>(value: T): Leaf<T> {
  return { type: 'leaf', value };
}

export function alt<T>(...trees: NameTree<T>[]): Alt<T> {
  return { type: 'alt', trees };
}

export function union<T>(...trees: Weighted<T>[]): Union<T> {
  return { type: 'union', trees };
}

export function weighted<T>(weight: number, tree: NameTree<T>): Weighted<T> {
  return { weight, tree };
}

/** Maps every leaf value, keeping structure, weights and the `~ ! $` nodes. */
export function mapTree<T, U>(tree: NameTree<T>, f: (t: T) => U): NameTree<U> {
  switch (tree.type) {
    case 'leaf':
      return leaf(f(tree.value));
    case 'alt':
      return { type: 'alt', trees: tree.trees.map((t) => mapTree(t, f)) };
    case 'union':
      return { type: 'union', trees: tree.trees.map((w) => weighted(w.weight, mapTree(w.tree, f))) };
    case 'neg':
    case 'fail':
    case 'empty':
      return tree;
  }
}

/** Every leaf value, depth first. */
export function leavesOf<T>(tree: NameTree<T>, out: T[] = []): T[] {
  switch (tree.type) {
    case 'leaf':
      out.push(tree.value);
      break;
    case 'alt':
      for (const t of tree.trees) leavesOf(t, out);
      break;
    case 'union':
      for (const w of tree.trees) leavesOf(w.tree, out);
      break;
    case 'neg':
    case 'fail':
    case 'empty':
      break;
  }
  return out;
}

/**
 * Finagle's `simplified`: a fixpoint that drops Neg alternatives, cuts an Alt after a Fail,
 * drops Neg and Fail union branches, and collapses single children (dropping a lone weight).
 * Nested Alts and Unions are never flattened.
 */
export function simplifyTree<T>(tree: NameTree<T>): NameTree<T> {
  switch (tree.type) {
    case 'alt': {
      if (tree.trees.length === 0) return Neg;
      if (tree.trees.length === 1) return simplifyTree(tree.trees[0] as NameTree<T>);
      const kept: NameTree<T>[] = [];
      for (const child of tree.trees) {
        const s = simplifyTree(child);
        if (s.type === 'fail') {
          kept.push(s);
          break;
        }
        if (s.type !== 'neg') kept.push(s);
      }
      if (kept.length === 0) return Neg;
      if (kept.length === 1) return kept[0] as NameTree<T>;
      return { type: 'alt', trees: kept };
    }
    case 'union': {
      if (tree.trees.length === 0) return Neg;
      if (tree.trees.length === 1) return simplifyTree((tree.trees[0] as Weighted<T>).tree);
      const kept: Weighted<T>[] = [];
      for (const w of tree.trees) {
        const s = simplifyTree(w.tree);
        if (s.type !== 'neg' && s.type !== 'fail') kept.push(weighted(w.weight, s));
      }
      if (kept.length === 0) return Neg;
      if (kept.length === 1) return (kept[0] as Weighted<T>).tree;
      return { type: 'union', trees: kept };
    }
    case 'leaf':
    case 'neg':
    case 'fail':
    case 'empty':
      return tree;
  }
}

const EVAL_FAIL = 1;
const EVAL_NEG = 2;
type EvalResult<T> = typeof EVAL_FAIL | typeof EVAL_NEG | Set<T>;

/**
 * Finagle's `eval`: the set of leaves the tree currently selects, or `undefined` when it selects
 * nothing (Neg or Fail). Alt takes the first non-Neg child (a Fail stops it); Union merges every
 * child that is neither Neg nor Fail. Weights are ignored.
 */
export function evalTree<T>(tree: NameTree<T>, keyOf: (t: T) => unknown = defaultKey): Set<T> | undefined {
  const r = evalNode(tree);
  if (typeof r === 'number') return undefined;
  // Leaves are a set by value (paths by their text, bound names by id), not by object identity.
  const byKey = new Map<unknown, T>();
  for (const v of r) {
    const k = keyOf(v);
    if (!byKey.has(k)) byKey.set(k, v);
  }
  return new Set(byKey.values());
}

function defaultKey(v: unknown): unknown {
  if (v instanceof Path) return v.show;
  if (v instanceof BoundName) return v.idStr;
  return v;
}

function evalNode<T>(tree: NameTree<T>): EvalResult<T> {
  switch (tree.type) {
    case 'fail':
      return EVAL_FAIL;
    case 'neg':
      return EVAL_NEG;
    case 'empty':
      return new Set();
    case 'leaf':
      return new Set([tree.value]);
    case 'alt': {
      for (const child of tree.trees) {
        const r = evalNode(child);
        if (r === EVAL_NEG) continue;
        return r;
      }
      return EVAL_NEG;
    }
    case 'union': {
      let acc: Set<T> | undefined;
      for (const w of tree.trees) {
        const r = evalNode(w.tree);
        if (typeof r === 'number') continue;
        if (acc === undefined) acc = new Set(r);
        else for (const v of r) acc.add(v);
      }
      return acc ?? EVAL_NEG;
    }
  }
}

/**
 * Canonical text with Finagle's three-level printer: `&` binds tighter than `|`, nested Alts and
 * Unions get parentheses, weights print as Java `%.2f` and only when not 1.0.
 */
export function showTree<T>(tree: NameTree<T>, showLeaf: (t: T) => string): string {
  return showTop(tree, showLeaf);
}

function showTop<T>(t: NameTree<T>, s: (t: T) => string): string {
  if (t.type === 'union' && t.trees.length === 1) return showTop((t.trees[0] as Weighted<T>).tree, s);
  if (t.type === 'alt') {
    if (t.trees.length === 1) return showTop(t.trees[0] as NameTree<T>, s);
    return t.trees.map((c) => showMid(c, s)).join(' | ');
  }
  return showMid(t, s);
}

function showMid<T>(t: NameTree<T>, s: (t: T) => string): string {
  if (t.type === 'union') {
    if (t.trees.length === 1) return showMid((t.trees[0] as Weighted<T>).tree, s);
    return t.trees
      .map((w) => (w.weight === DEFAULT_WEIGHT ? '' : formatJavaFixed2(w.weight) + '*') + showSimple(w.tree, s))
      .join(' & ');
  }
  if (t.type === 'alt') {
    if (t.trees.length === 1) return showMid(t.trees[0] as NameTree<T>, s);
    return '(' + showTop(t, s) + ')';
  }
  return showSimple(t, s);
}

function showSimple<T>(t: NameTree<T>, s: (t: T) => string): string {
  switch (t.type) {
    case 'union':
      if (t.trees.length === 1) return showSimple((t.trees[0] as Weighted<T>).tree, s);
      return '(' + showTop(t, s) + ')';
    case 'alt':
      if (t.trees.length === 1) return showSimple(t.trees[0] as NameTree<T>, s);
      return '(' + showTop(t, s) + ')';
    case 'leaf':
      return s(t.value);
    case 'fail':
      return '!';
    case 'neg':
      return '~';
    case 'empty':
      return '$';
  }
}
