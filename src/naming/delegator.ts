import type { Activity } from './activity.js';
import { type Address, type Addr } from './addr.js';
import { type DelegateTree, fromNameTree, isNopDentry, simplifyDelegateTree } from './delegate-tree.js';
import { Dentry, type Dtab, showPathTree } from './dtab.js';
import { DelegationDepthError, NamingBudgetError, NamingDepthBudgetError, NamingNodeBudgetError } from './errors.js';
import { DEFAULT_NAMING_LIMITS, type NamingLimits, lookupCost } from './limits.js';
import { BoundName, type Name } from './name.js';
import { type NameTree, leaf, mapTree } from './name-tree.js';
import { Path } from './path.js';

/** Linkerd's fixed delegation depth limit (independent of the binding `maxDepth`). */
const MAX_DELEGATION_DEPTH = 100;

/** What delegation needs from an interpreter: the namer chain for paths no dentry matches. */
export interface DelegationSource {
  namerLookup(path: Path): Activity<NameTree<Name>>;
}

/**
 * Explains how `path` (or each path of a tree) delegates through `dtab` (Linkerd's `ConfiguredNamersInterpreter.delegate`):
 * unlike binding, every alternative is followed, namer failures become `exception` nodes, and a
 * dentry whose destination is `~` shows as Neg instead of falling through to the namers. Namer
 * lookups that stay pending keep the promise pending until `signal` aborts.
 */
export async function delegate(
  source: DelegationSource,
  dtab: Dtab,
  path: Path | NameTree<Path>,
  signal?: AbortSignal,
  limits: NamingLimits = DEFAULT_NAMING_LIMITS,
): Promise<DelegateTree<BoundName>> {
  const walk = new DelegationWalk(source, dtab, signal, limits);
  // A tree of paths (the mesh API's GetDelegateTree) delegates every leaf under one root.
  const root = fromNameTree(Path.empty, Dentry.nop, path instanceof Path ? leaf(path) : path);
  const bound = await walk.bind(0, 0, root);
  return simplifyDelegateTree(bound);
}

class DelegationWalk {
  readonly #source: DelegationSource;
  readonly #dtab: Dtab;
  readonly #signal: AbortSignal | undefined;
  readonly #limits: NamingLimits;
  readonly #lookupCost: number;
  /** Nodes expanded so far: unlike binding, delegation follows every alternative. */
  #nodes = 0;
  #exhausted: NamingBudgetError | undefined;

  constructor(source: DelegationSource, dtab: Dtab, signal: AbortSignal | undefined, limits: NamingLimits) {
    this.#source = source;
    this.#dtab = dtab;
    this.#signal = signal;
    this.#limits = limits;
    this.#lookupCost = lookupCost(dtab.size);
  }

  /** Charges `units` of the walk's budget; throws (for the whole walk) once it is spent. */
  #charge(units: number, level: number): void {
    if (this.#exhausted === undefined) {
      if (level > this.#limits.maxDepth) this.#exhausted = new NamingDepthBudgetError(this.#limits.maxDepth);
      else if ((this.#nodes += units) > this.#limits.maxNodes) this.#exhausted = new NamingNodeBudgetError(this.#limits.maxNodes);
    }
    if (this.#exhausted !== undefined) throw this.#exhausted;
  }

  async #lookup(dentry: Dentry, path: Path): Promise<DelegateTree<Name>> {
    const matches: DelegateTree<Name>[] = [];
    const ds = this.#dtab.dentries;
    for (let i = ds.length - 1; i >= 0; i--) {
      const d = ds[i] as Dentry;
      if (!d.prefix.matches(path)) continue;
      const suffix = path.drop(d.prefix.size);
      matches.push(fromNameTree(path, d, mapTree(d.dst, (p): Name => p.concat(suffix))));
    }
    if (matches.length === 1) return { type: 'delegate', path, dentry, tree: matches[0] as DelegateTree<Name> };
    if (matches.length > 1) return { type: 'alt', path, dentry, trees: matches };
    // No dentry at all: only now are the namers consulted.
    try {
      const tree = await this.#source.namerLookup(path).toPromise(this.#signal);
      return tree.type === 'neg' ? { type: 'neg', path, dentry } : fromNameTree(path, dentry, tree);
    } catch (e) {
      if (this.#signal?.aborted) throw e;
      return { type: 'exception', path, dentry, error: e instanceof Error ? e : new Error(String(e)) };
    }
  }

  /** `depth` counts lookups along the chain (Linkerd's limit); `level` all nesting (the budget's). */
  async bind(depth: number, level: number, node: DelegateTree<Name>): Promise<DelegateTree<BoundName>> {
    if (depth > MAX_DELEGATION_DEPTH) throw new DelegationDepthError();
    switch (node.type) {
      case 'exception':
      case 'empty':
      case 'fail':
      case 'neg':
        return node;
      case 'leaf': {
        if (node.value instanceof BoundName) return { ...node, value: node.value };
        this.#charge(this.#lookupCost, level);
        return this.bind(depth + 1, level + 1, await this.#lookup(node.dentry, node.value));
      }
      // One wrapper per lookup or transformer: not a level of its own, so a chain of Finagle's 100
      // lookups still ends with the chain's depth error, not the budget's.
      case 'delegate':
        this.#charge(1, level);
        return { ...node, tree: await this.bind(depth, level, node.tree) };
      case 'transformation':
        this.#charge(1, level);
        return { ...node, value: node.value as BoundName, tree: await this.bind(depth, level, node.tree) };
      case 'alt': {
        if (node.trees.length === 0) return { type: 'neg', path: node.path, dentry: node.dentry };
        this.#charge(node.trees.length, level);
        if (node.trees.length === 1) {
          return { type: 'delegate', path: node.path, dentry: node.dentry, tree: await this.bind(depth, level + 1, node.trees[0] as DelegateTree<Name>) };
        }
        const trees = await Promise.all(node.trees.map((t) => this.#bindBranch(depth, level + 1, node, t)));
        return { ...node, trees };
      }
      case 'union': {
        if (node.trees.length === 0) return { type: 'neg', path: node.path, dentry: node.dentry };
        this.#charge(node.trees.length, level);
        if (node.trees.length === 1) {
          const only = (node.trees[0] as { tree: DelegateTree<Name> }).tree;
          return { type: 'delegate', path: node.path, dentry: node.dentry, tree: await this.bind(depth, level + 1, only) };
        }
        const trees = await Promise.all(
          node.trees.map(async (w) => ({ weight: w.weight, tree: await this.#bindBranch(depth, level + 1, node, w.tree) })),
        );
        return { ...node, trees };
      }
    }
  }

  /** A branch's failure becomes an exception node at its parent's path and dentry (not a spent budget: that ends the walk). */
  async #bindBranch(depth: number, level: number, parent: DelegateTree<Name>, child: DelegateTree<Name>): Promise<DelegateTree<BoundName>> {
    try {
      return await this.bind(depth, level, child);
    } catch (e) {
      if (this.#signal?.aborted || e instanceof NamingBudgetError) throw e;
      return { type: 'exception', path: parent.path, dentry: parent.dentry, error: e instanceof Error ? e : new Error(String(e)) };
    }
  }
}

/** JSON of an address (`/delegator.json` shape). */
export type AddrJson =
  | { type: 'bound'; addrs: { ip: string; port: number; meta: Record<string, unknown> }[]; meta: Record<string, unknown> }
  | { type: 'neg' }
  | { type: 'pending' }
  | { type: 'failed'; cause: string };

export function addrJson(a: Addr): AddrJson {
  switch (a.kind) {
    case 'bound':
      return {
        type: 'bound',
        addrs: a.addresses.map((x: Address) => ({ ip: x.host, port: x.port, meta: { ...x.meta } })),
        meta: { ...a.meta },
      };
    case 'neg':
      return { type: 'neg' };
    case 'pending':
      return { type: 'pending' };
    case 'failed':
      return { type: 'failed', cause: a.error.message };
  }
}

/**
 * The first address of `name` that is not pending (what a delegation view shows for a leaf);
 * rejects, and stops observing, when `signal` aborts first.
 */
export function firstAddr(name: BoundName, signal: AbortSignal): Promise<Addr> {
  return new Promise<Addr>((resolve, reject) => {
    let done = false;
    const onAbort = (): void => {
      if (done) return;
      done = true;
      sub.close();
      reject(new Error('aborted'));
    };
    const sub = name.addr.observe((a) => {
      if (done || a.kind === 'pending') return;
      done = true;
      signal.removeEventListener('abort', onAbort);
      // The observer may be called during observe(), before `sub` exists.
      queueMicrotask(() => sub.close());
      resolve(a);
    });
    if (!done) {
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
}

export interface DelegateJsonOptions {
  /** Leaves carry `bound.addr` (the first non-pending address set) when given. */
  resolveAddr?: (name: BoundName) => Promise<Addr>;
}

/**
 * The `/delegator.json` body: each node an object whose first key is `type`; `dentry` omitted
 * for the nop marker; Neg at the empty path shows `~`; Fail shows `!` unless under `/$/fail`.
 */
export async function delegateTreeJson(tree: DelegateTree<BoundName>, opts: DelegateJsonOptions = {}): Promise<unknown> {
  const dentryOf = (d: Dentry): Record<string, unknown> =>
    isNopDentry(d) ? {} : { dentry: { prefix: d.prefix.show, dst: showPathTree(d.dst) } };
  const boundJson = async (path: Path, b: BoundName): Promise<Record<string, unknown>> => {
    const json: Record<string, unknown> = {};
    if (opts.resolveAddr) json['addr'] = addrJson(await opts.resolveAddr(b));
    json['id'] = b.id instanceof Path ? b.id.show : path.show;
    json['path'] = b.residual.show;
    return json;
  };
  const render = async (t: DelegateTree<BoundName>): Promise<unknown> => {
    switch (t.type) {
      case 'delegate':
        return { type: 'delegate', path: t.path.show, ...dentryOf(t.dentry), delegate: await render(t.tree) };
      case 'alt':
        return { type: 'alt', path: t.path.show, ...dentryOf(t.dentry), alt: await Promise.all(t.trees.map(render)) };
      case 'union':
        return {
          type: 'union',
          path: t.path.show,
          ...dentryOf(t.dentry),
          union: await Promise.all(t.trees.map(async (w) => ({ weight: w.weight, tree: await render(w.tree) }))),
        };
      case 'leaf':
        return { type: 'leaf', path: t.path.show, ...dentryOf(t.dentry), bound: await boundJson(t.path, t.value) };
      case 'neg':
        return { type: 'neg', path: t.path.isEmpty ? '~' : t.path.show, ...dentryOf(t.dentry) };
      case 'fail':
        return { type: 'fail', path: t.path.startsWith(FAIL_PREFIX) ? t.path.show : '!', ...dentryOf(t.dentry) };
      case 'empty':
        return { type: 'empty', path: t.path.show, ...dentryOf(t.dentry) };
      case 'exception':
        return { type: 'exception', path: t.path.show, ...dentryOf(t.dentry), message: t.error.message };
      case 'transformation':
        return { type: 'transformation', path: t.path.show, name: t.name, bound: await boundJson(t.path, t.value), tree: await render(t.tree) };
    }
  };
  return render(tree);
}

const FAIL_PREFIX = Path.of('$', 'fail');
