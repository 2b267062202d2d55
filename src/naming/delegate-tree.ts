import { Dentry } from './dtab.js';
import type { Name } from './name.js';
import type { NameTree } from './name-tree.js';
import { Path } from './path.js';

/**
 * A step-by-step explanation of a delegation (Linkerd's `DelegateTree`): every node carries the
 * path being looked up at that step and the dentry that produced it (`Dentry.nop` if none).
 */
export type DelegateTree<T> =
  | { readonly type: 'delegate'; readonly path: Path; readonly dentry: Dentry; readonly tree: DelegateTree<T> }
  | { readonly type: 'leaf'; readonly path: Path; readonly dentry: Dentry; readonly value: T }
  | { readonly type: 'alt'; readonly path: Path; readonly dentry: Dentry; readonly trees: readonly DelegateTree<T>[] }
  | {
      readonly type: 'union';
      readonly path: Path;
      readonly dentry: Dentry;
      readonly trees: readonly { readonly weight: number; readonly tree: DelegateTree<T> }[];
    }
  | { readonly type: 'neg' | 'fail' | 'empty'; readonly path: Path; readonly dentry: Dentry }
  | { readonly type: 'exception'; readonly path: Path; readonly dentry: Dentry; readonly error: Error }
  | {
      readonly type: 'transformation';
      readonly path: Path;
      readonly dentry: Dentry;
      /** The transformer's kind, e.g. `io.prx.port`. */
      readonly name: string;
      readonly value: T;
      readonly tree: DelegateTree<T>;
    };

/**
 * Converts a name tree into delegate-tree form, giving every node `path` and `dentry`. A Neg
 * gets the empty path (shown as `~`), as in Linkerd.
 */
export function fromNameTree(path: Path, dentry: Dentry, tree: NameTree<Name>): DelegateTree<Name> {
  switch (tree.type) {
    case 'leaf':
      return { type: 'leaf', path, dentry, value: tree.value };
    case 'alt':
      return { type: 'alt', path, dentry, trees: tree.trees.map((t) => fromNameTree(path, dentry, t)) };
    case 'union':
      return {
        type: 'union',
        path,
        dentry,
        trees: tree.trees.map((w) => ({ weight: w.weight, tree: fromNameTree(path, dentry, w.tree) })),
      };
    case 'neg':
      return { type: 'neg', path: Path.empty, dentry };
    case 'fail':
      return { type: 'fail', path, dentry };
    case 'empty':
      return { type: 'empty', path, dentry };
  }
}

const isTerminal = (t: DelegateTree<unknown>): boolean => t.type === 'neg' || t.type === 'fail' || t.type === 'empty';

/**
 * Linkerd's `DelegateTree.simplified`: a Delegate whose child sits at the same path collapses
 * into the child (which takes the Delegate's dentry); an Alt splices child Alts at its own path.
 * Neg nodes are never pruned: the explanation shows every branch.
 */
export function simplifyDelegateTree<T>(tree: DelegateTree<T>): DelegateTree<T> {
  switch (tree.type) {
    case 'delegate': {
      const child = simplifyDelegateTree(tree.tree);
      if (!isTerminal(child) && child.path.equals(tree.path)) return { ...child, dentry: tree.dentry };
      return { ...tree, tree: child };
    }
    case 'alt': {
      if (tree.trees.length === 0) return { type: 'neg', path: tree.path, dentry: tree.dentry };
      if (tree.trees.length === 1) {
        return simplifyDelegateTree({ type: 'delegate', path: tree.path, dentry: tree.dentry, tree: tree.trees[0] as DelegateTree<T> });
      }
      const trees: DelegateTree<T>[] = [];
      for (const c of tree.trees) {
        const s = simplifyDelegateTree(c);
        if (s.type === 'alt' && s.path.equals(tree.path)) trees.push(...s.trees);
        else trees.push(s);
      }
      return { ...tree, trees };
    }
    case 'union': {
      if (tree.trees.length === 0) return { type: 'neg', path: tree.path, dentry: tree.dentry };
      if (tree.trees.length === 1) {
        const only = tree.trees[0] as { tree: DelegateTree<T> };
        return simplifyDelegateTree({ type: 'delegate', path: tree.path, dentry: tree.dentry, tree: only.tree });
      }
      return { ...tree, trees: tree.trees.map((w) => ({ weight: w.weight, tree: simplifyDelegateTree(w.tree) })) };
    }
    case 'transformation':
      return { ...tree, tree: simplifyDelegateTree(tree.tree) };
    case 'leaf':
    case 'neg':
    case 'fail':
    case 'empty':
    case 'exception':
      return tree;
  }
}

/** True when `d` is (equivalent to) Linkerd's "no dentry" marker. */
export function isNopDentry(d: Dentry): boolean {
  return d === Dentry.nop || d.equiv(Dentry.nop);
}
