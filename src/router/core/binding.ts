import { BindingFailedError, BindingTimeoutError } from '../../service/failures.js';
import { NamingBudgetError, type Activity, type BoundName, type Closable, type Dtab, type NameTree, type State } from '../../naming/index.js';

/**
 * A bound tree prepared for per-request picks (Finagle `NameTreeFactory`): Alt takes its first
 * branch that can serve, Union picks a branch at random by weight. Built once per tree version.
 */
export type Pick = { readonly kind: 'leaf'; readonly name: BoundName } | { readonly kind: 'neg' } | { readonly kind: 'fail' };

const NEG: Pick = Object.freeze({ kind: 'neg' });
const FAIL: Pick = Object.freeze({ kind: 'fail' });

export function pickLeaf(tree: NameTree<BoundName>, random: () => number = Math.random): Pick {
  switch (tree.type) {
    case 'leaf':
      return { kind: 'leaf', name: tree.value };
    case 'neg':
    case 'empty':
      return NEG;
    case 'fail':
      return FAIL;
    case 'alt': {
      let sawFail = false;
      for (const t of tree.trees) {
        const p = pickLeaf(t, random);
        if (p.kind === 'leaf') return p;
        if (p.kind === 'fail') sawFail = true;
      }
      return sawFail ? FAIL : NEG;
    }
    case 'union': {
      let total = 0;
      for (const w of tree.trees) total += w.weight > 0 ? w.weight : 0;
      if (total <= 0) return NEG;
      let r = random() * total;
      for (const w of tree.trees) {
        if (w.weight <= 0) continue;
        r -= w.weight;
        if (r < 0) return pickLeaf(w.tree, random);
      }
      const last = tree.trees[tree.trees.length - 1];
      return last ? pickLeaf(last.tree, random) : NEG;
    }
  }
}

/**
 * The live binding of one logical name (plus request dtab): observes the interpreter's bind
 * activity for as long as the binding is cached, so requests usually find the tree ready and pay
 * no wait. While pending, requests wait up to the binding timeout.
 */
export class PathBinding implements Closable {
  readonly dst: string;
  #state: State<NameTree<BoundName>> = { kind: 'pending' };
  #waiters: (() => void)[] = [];
  readonly #observation: Closable;
  /** Called with each new tree (after the first), so owners can refresh derived state. */
  onChange: ((tree: NameTree<BoundName>) => void) | undefined;

  constructor(dst: string, activity: Activity<NameTree<BoundName>>) {
    this.dst = dst;
    this.#observation = activity.observe((s) => {
      this.#state = s;
      if (s.kind === 'ok') this.onChange?.(s.value);
      if (s.kind !== 'pending' && this.#waiters.length > 0) {
        const ws = this.#waiters;
        this.#waiters = [];
        for (const w of ws) w();
      }
    });
  }

  get state(): State<NameTree<BoundName>> {
    return this.#state;
  }

  /**
   * The bound tree; waits while pending until `deadline` (epoch ms), then fails with
   * {@link BindingTimeoutError}. A failed binding rejects with {@link BindingFailedError}.
   */
  tree(deadline: number, timeoutMs: number): NameTree<BoundName> | Promise<NameTree<BoundName>> {
    const s = this.#state;
    if (s.kind === 'ok') return s.value;
    if (s.kind === 'failed') throw new BindingFailedError(this.dst, s.error);
    return new Promise((resolve, reject) => {
      const wait = deadline - Date.now();
      if (wait <= 0) {
        reject(new BindingTimeoutError(timeoutMs, this.dst));
        return;
      }
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== wake);
        reject(new BindingTimeoutError(timeoutMs, this.dst));
      }, wait);
      const wake = (): void => {
        clearTimeout(timer);
        const now = this.#state;
        if (now.kind === 'ok') resolve(now.value);
        else if (now.kind === 'failed') reject(new BindingFailedError(this.dst, now.error));
      };
      this.#waiters.push(wake);
    });
  }

  close(): void {
    this.#observation.close();
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w();
  }
}

/**
 * The naming-budget error of a binding that failed because of the request's own dtab (a client
 * can send a new one each time): the request's fault, like an unparsable dtab, answered as such and
 * never kept in the path cache. Undefined for any other failure.
 */
export function requestDtabFailure(err: unknown, localDtab: Dtab | undefined): NamingBudgetError | undefined {
  if (err instanceof BindingFailedError && err.cause instanceof NamingBudgetError && (localDtab?.size ?? 0) > 0) return err.cause;
  return undefined;
}
