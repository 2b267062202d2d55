import { Activity, type State, Pending, ok } from './activity.js';
import { type Addr, WEIGHT_META_KEY, addrBound } from './addr.js';
import { MaxDepthExceededError } from './errors.js';
import type { BoundName} from './name.js';
import { type Name } from './name.js';
import { type NameTree, type Weighted, Empty, Fail, Neg, leaf, simplifyTree, weighted } from './name-tree.js';
import { Path } from './path.js';
import { Var } from './var.js';

/** Turns a path into a tree of names (Finagle `Namer`): a dtab rewrite, a namer, a system namer. */
export type Lookup = (path: Path) => Activity<NameTree<Name>>;

/** Finagle's default `namerMaxDepth`: lookups allowed along one chain before binding fails. */
export const DEFAULT_MAX_DEPTH = 100;

/**
 * Binds a tree of names to a tree of bound names, exactly as Finagle's `Namer.bind`: paths are
 * looked up and the results bound recursively; an Alt takes its first non-Neg alternative
 * sequentially (Pending, failure, Fail and Empty stop it); a Union binds every branch and keeps
 * those that are ok; the innermost union weight reaches each bound address's metadata. The
 * result is live: it changes when any lookup it depends on changes.
 */
export function bindTree(lookup: Lookup, tree: NameTree<Name>, maxDepth = DEFAULT_MAX_DEPTH): Activity<NameTree<BoundName>> {
  return bindNode(lookup, maxDepth, 0, undefined, tree);
}

/** Binds the unbound path `path` (a one-leaf tree). */
export function bindPath(lookup: Lookup, path: Path, maxDepth = DEFAULT_MAX_DEPTH): Activity<NameTree<BoundName>> {
  return bindTree(lookup, leaf(path), maxDepth);
}

const NEG_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Neg);
const FAIL_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Fail);
const EMPTY_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Empty);

function bindNode(
  lookup: Lookup,
  maxDepth: number,
  depth: number,
  weight: number | undefined,
  tree: NameTree<Name>,
): Activity<NameTree<BoundName>> {
  if (depth > maxDepth) return Activity.exception(new MaxDepthExceededError(maxDepth));
  switch (tree.type) {
    case 'leaf': {
      const name = tree.value;
      if (name instanceof Path) {
        return lookup(name).flatMap((t) => bindNode(lookup, maxDepth, depth + 1, weight, t));
      }
      return Activity.value(leaf(weight === undefined ? name : withWeight(name, weight)));
    }
    case 'fail':
      return FAIL_ACTIVITY;
    case 'neg':
      return NEG_ACTIVITY;
    case 'empty':
      return EMPTY_ACTIVITY;
    case 'union': {
      if (tree.trees.length === 0) return NEG_ACTIVITY;
      if (tree.trees.length === 1) {
        const only = tree.trees[0] as Weighted<Name>;
        return bindNode(lookup, maxDepth, depth, only.weight, only.tree);
      }
      return bindUnion(lookup, maxDepth, depth, tree.trees);
    }
    case 'alt': {
      if (tree.trees.length === 0) return NEG_ACTIVITY;
      if (tree.trees.length === 1) return bindNode(lookup, maxDepth, depth, weight, tree.trees[0] as NameTree<Name>);
      return bindAlt(lookup, maxDepth, depth, weight, tree.trees, 0);
    }
  }
}

/** Sequential and lazy: later alternatives are looked up only while earlier ones are Neg. */
function bindAlt(
  lookup: Lookup,
  maxDepth: number,
  depth: number,
  weight: number | undefined,
  trees: readonly NameTree<Name>[],
  i: number,
): Activity<NameTree<BoundName>> {
  if (i >= trees.length) return NEG_ACTIVITY;
  return bindNode(lookup, maxDepth, depth, weight, trees[i] as NameTree<Name>).transform((s) => {
    if (s.kind === 'ok' && s.value.type === 'neg') return bindAlt(lookup, maxDepth, depth, weight, trees, i + 1);
    return new Activity(Var.value(s));
  });
}

/** Every branch is bound; any ok branch makes the union ok (pending and failed siblings ignored). */
function bindUnion(
  lookup: Lookup,
  maxDepth: number,
  depth: number,
  trees: readonly Weighted<Name>[],
): Activity<NameTree<BoundName>> {
  const branches = trees.map((w) => bindNode(lookup, maxDepth, depth, w.weight, w.tree).states);
  return new Activity(
    Var.collect(branches).map((states): State<NameTree<BoundName>> => {
      const oks: Weighted<BoundName>[] = [];
      let firstFailure: State<NameTree<BoundName>> | undefined;
      states.forEach((s, i) => {
        if (s.kind === 'ok') oks.push(weighted((trees[i] as Weighted<Name>).weight, s.value));
        else if (s.kind === 'failed') firstFailure ??= s;
      });
      if (oks.length > 0) return ok(simplifyTree({ type: 'union', trees: oks }));
      return firstFailure ?? Pending;
    }),
  );
}

/** The bound name with the union weight recorded in its address metadata (bound addrs only). */
function withWeight(name: BoundName, weight: number): BoundName {
  const addr = name.addr.map((a): Addr => (a.kind === 'bound' ? addrBound(a.addresses, { ...a.meta, [WEIGHT_META_KEY]: weight }) : a));
  return name.with({ addr });
}
