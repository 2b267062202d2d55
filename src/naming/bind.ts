import { Activity, type State, Pending, failed, ok } from './activity.js';
import { type Addr, WEIGHT_META_KEY, addrBound } from './addr.js';
import { MaxDepthExceededError, type NamingBudgetError, NamingDepthBudgetError, NamingNodeBudgetError } from './errors.js';
import { DEFAULT_NAMING_LIMITS, type NamingLimits } from './limits.js';
import type { BoundName} from './name.js';
import { type Name } from './name.js';
import { type NameTree, type Weighted, Empty, Fail, Neg, leaf, simplifyTree, weighted } from './name-tree.js';
import { Path } from './path.js';
import { type Closable, Var, noopClosable } from './var.js';

/** Turns a path into a tree of names (Finagle `Namer`): a dtab rewrite, a namer, a system namer. */
export type Lookup = (path: Path) => Activity<NameTree<Name>>;

/** Finagle's default `namerMaxDepth`: lookups allowed along one chain before binding fails. */
export const DEFAULT_MAX_DEPTH = 100;

export interface BindOptions {
  /** The work budget of the binding (see `limits.ts`). */
  limits?: NamingLimits;
  /** Budget units one lookup costs (more for long dtabs, whose lookups scan more). */
  lookupCost?: number;
}

/**
 * Binds a tree of names to a tree of bound names, exactly as Finagle's `Namer.bind`: paths are
 * looked up and the results bound recursively; an Alt takes its first non-Neg alternative
 * sequentially (Pending, failure, Fail and Empty stop it); a Union binds every branch and keeps
 * those that are ok; the innermost union weight reaches each bound address's metadata. The
 * result is live: it changes when any lookup it depends on changes.
 *
 * Beyond Finagle, the nodes the binding keeps evaluated at any time (lookups, alternatives,
 * unions) and their nesting are bounded (`opts.limits`): past either bound the whole binding
 * fails with a {@link NamingBudgetError} and lets go of everything it observed.
 */
export function bindTree(
  lookup: Lookup,
  tree: NameTree<Name>,
  maxDepth = DEFAULT_MAX_DEPTH,
  opts: BindOptions = {},
): Activity<NameTree<BoundName>> {
  const limits = opts.limits ?? DEFAULT_NAMING_LIMITS;
  const cost = opts.lookupCost ?? 1;
  return new Activity(
    Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
      let sub: Closable | undefined;
      let done = false;
      const budget = new Budget(lookup, maxDepth, limits, cost, (e) => {
        if (done) return;
        done = true;
        set(failed(e));
        // Exhausted while the graph is still being built or updated: let go of it once that
        // synchronous walk has returned (closing it from inside would race with its callbacks).
        const s = sub;
        sub = undefined;
        if (s) queueMicrotask(() => s.close());
      });
      const s = bindNode(budget, 0, 0, undefined, tree).states.observe((st) => {
        if (!done) set(st);
      });
      if (done) s.close();
      else sub = s;
      return {
        close() {
          done = true;
          sub?.close();
          sub = undefined;
        },
      };
    }),
  );
}

/** Binds the unbound path `path` (a one-leaf tree). */
export function bindPath(lookup: Lookup, path: Path, maxDepth = DEFAULT_MAX_DEPTH, opts: BindOptions = {}): Activity<NameTree<BoundName>> {
  return bindTree(lookup, leaf(path), maxDepth, opts);
}

const NEG_STATE: State<NameTree<BoundName>> = ok(Neg);
const NEG_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Neg);
const FAIL_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Fail);
const EMPTY_ACTIVITY: Activity<NameTree<BoundName>> = Activity.value(Empty);

/**
 * One binding's shared budget: the nodes it currently keeps evaluated. A node is charged when it
 * starts being observed and refunded when it stops, so every re-evaluation (a lookup changing)
 * is held to the same bound as the first evaluation. While a lookup switches trees the new
 * subtree is built before the old one is let go of, so both count for that moment: stricter, never
 * looser.
 */
class Budget {
  readonly lookup: Lookup;
  readonly maxDepth: number;
  readonly limits: NamingLimits;
  readonly lookupCost: number;
  readonly #onExhausted: (e: NamingBudgetError) => void;
  #live = 0;
  #error: NamingBudgetError | undefined;
  #failure: State<never> | undefined;

  constructor(lookup: Lookup, maxDepth: number, limits: NamingLimits, lookupCost: number, onExhausted: (e: NamingBudgetError) => void) {
    this.lookup = lookup;
    this.maxDepth = maxDepth;
    this.limits = limits;
    this.lookupCost = lookupCost;
    this.#onExhausted = onExhausted;
  }

  /** An activity that is charged `units` while observed; built by `make` only when charged. */
  charged(units: number, make: () => Activity<NameTree<BoundName>>): Activity<NameTree<BoundName>> {
    return new Activity(
      Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
        if (this.#error === undefined && this.#live + units > this.limits.maxNodes) {
          this.#exhaust(new NamingNodeBudgetError(this.limits.maxNodes));
        }
        // Spent: every node still to start fails at once, without expanding anything.
        if (this.#error !== undefined) {
          set(this.#failure ??= failed(this.#error));
          return noopClosable;
        }
        this.#live += units;
        let sub: Closable;
        try {
          sub = make().states.observe(set);
        } catch (e) {
          // A namer that throws instead of failing its activity fails this branch, as before.
          this.#live -= units;
          set(failed(e));
          return noopClosable;
        }
        return {
          close: () => {
            sub.close();
            this.#live -= units;
          },
        };
      }),
    );
  }

  /** Fails the nesting past the depth budget (and so the whole binding). */
  tooDeep(): Activity<NameTree<BoundName>> {
    if (this.#error === undefined) this.#exhaust(new NamingDepthBudgetError(this.limits.maxDepth));
    return new Activity(Var.value((this.#failure ??= failed(this.#error))));
  }

  #exhaust(e: NamingBudgetError): void {
    this.#error = e;
    this.#onExhausted(e);
  }
}

function bindNode(
  b: Budget,
  depth: number,
  level: number,
  weight: number | undefined,
  tree: NameTree<Name>,
): Activity<NameTree<BoundName>> {
  if (depth > b.maxDepth) return Activity.exception(new MaxDepthExceededError(b.maxDepth));
  if (level > b.limits.maxDepth) return b.tooDeep();
  switch (tree.type) {
    case 'leaf': {
      const name = tree.value;
      if (name instanceof Path) {
        return b.charged(b.lookupCost, () => b.lookup(name).flatMap((t) => bindNode(b, depth + 1, level + 1, weight, t)));
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
        return bindNode(b, depth, level, only.weight, only.tree);
      }
      const trees = tree.trees;
      // Every branch of a union is bound at once: its width is charged up front.
      return b.charged(trees.length, () => bindUnion(b, depth, level + 1, trees));
    }
    case 'alt': {
      if (tree.trees.length === 0) return NEG_ACTIVITY;
      if (tree.trees.length === 1) return bindNode(b, depth, level, weight, tree.trees[0] as NameTree<Name>);
      const trees = tree.trees;
      return b.charged(1, () => bindAlt(b, depth, level + 1, weight, trees));
    }
  }
}

/**
 * Sequential and lazy: later alternatives are looked up only while earlier ones are Neg, and let
 * go of when an earlier one stops being Neg. One loop over the alternatives (no recursion per
 * alternative), so a dtab of thousands of dentries for one prefix costs no stack.
 */
function bindAlt(
  b: Budget,
  depth: number,
  level: number,
  weight: number | undefined,
  trees: readonly NameTree<Name>[],
): Activity<NameTree<BoundName>> {
  return new Activity(
    Var.async<State<NameTree<BoundName>>>(Pending, (set) => {
      const subs: (Closable | undefined)[] = [];
      const states: (State<NameTree<BoundName>> | undefined)[] = [];
      let running = false;
      let dirty = false;
      let closed = false;
      let subscribing = -1;
      const evaluate = (): void => {
        if (running) {
          dirty = true;
          return;
        }
        running = true;
        try {
          do {
            dirty = false;
            let result = NEG_STATE;
            let i = 0;
            for (; i < trees.length && !closed; i++) {
              if (subs[i] === undefined) {
                const at = i;
                subscribing = at;
                subs[at] = bindNode(b, depth, level, weight, trees[at] as NameTree<Name>).states.observe((s) => {
                  states[at] = s;
                  // The first value, delivered during observe(), is read right below.
                  if (subscribing !== at) evaluate();
                });
                subscribing = -1;
              }
              const s = states[i] ?? Pending;
              if (s.kind === 'ok' && s.value.type === 'neg') continue;
              result = s;
              break;
            }
            for (let j = i + 1; j < subs.length; j++) {
              subs[j]?.close();
              subs[j] = undefined;
              states[j] = undefined;
            }
            if (!dirty && !closed) set(result);
          } while (dirty && !closed);
        } finally {
          running = false;
        }
      };
      evaluate();
      return {
        close() {
          closed = true;
          for (const s of subs) s?.close();
          subs.length = 0;
        },
      };
    }),
  );
}

/** Every branch is bound; any ok branch makes the union ok (pending and failed siblings ignored). */
function bindUnion(
  b: Budget,
  depth: number,
  level: number,
  trees: readonly Weighted<Name>[],
): Activity<NameTree<BoundName>> {
  const branches = trees.map((w) => bindNode(b, depth, level, w.weight, w.tree).states);
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
