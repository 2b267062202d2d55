import type { EnumeratingNamer } from '../namer/namer-kind.js';
import {
  Activity,
  type Addr,
  AddrNeg,
  type BoundName,
  ConfiguredNamersInterpreter,
  type DelegateTree,
  Dtab,
  type MountedNamer,
  type NameTree,
  type Namer,
  Path,
  Pending,
  type State,
  addrBound,
  delegate,
  ok,
} from '../naming/index.js';
import { NameTreeFailedError, NotConcreteNameError } from './errors.js';
import type { DtabStore, VersionedDtab } from './storage/types.js';

/** What the resolver's name resolution is built from. */
export interface ResolverNamingOptions {
  /** The configured namers, mounted at `/#/<prefix>`, in config order. */
  readonly namers: readonly MountedNamer[];
  /** The `/$/…` namer (with DNS for `/$/inet` host names); defaults to IP literals only. */
  readonly system?: Namer;
  /** Namers that can list their names (`/api/1/bound-names`). */
  readonly enumerating?: readonly EnumeratingNamer[];
}

/**
 * Name resolution of the resolver service: every namespace is a {@link ConfiguredNamersInterpreter}
 * over the configured namers, bound dynamically to the namespace's stored dtab (an absent
 * namespace binds through the empty dtab, i.e. the namers alone). A request's own dtab entries
 * are appended to the stored dtab, so they take precedence.
 */
export class ResolverNaming {
  readonly interpreter: ConfiguredNamersInterpreter;
  readonly #store: DtabStore;
  readonly #enumerating: readonly EnumeratingNamer[];

  constructor(store: DtabStore, options: ResolverNamingOptions) {
    this.#store = store;
    this.interpreter = new ConfiguredNamersInterpreter(options.namers, options.system ? { system: options.system } : {});
    this.#enumerating = options.enumerating ?? [];
  }

  /**
   * The stored dtab of `ns` (empty while absent), updating as it changes. Version bumps that leave
   * the dtab's text unchanged are suppressed so they do not rebind every name of the namespace.
   */
  dtab(ns: string): Activity<Dtab> {
    const dtabs = this.#store.observe(ns).states.map(toDtabState);
    return new Activity(dtabs.dedup(sameDtabState));
  }

  /** Binds `path` through the stored dtab of `ns` followed by `extra`. */
  bind(ns: string, extra: Dtab, path: Path): Activity<NameTree<BoundName>> {
    const dtab = extra.isEmpty ? this.dtab(ns) : this.dtab(ns).map((d) => d.concat(extra));
    return this.interpreter.bindDynamic(dtab, path);
  }

  /**
   * The address set of a concrete name such as `/#/io.prx.fs/users` or `/$/inet/10.0.0.1/80`,
   * bound by the namers alone (no dtab). Leading transformer segments (`/%/io.prx.port/4141/…`)
   * are dropped first. Pending while the namer has no answer; Fail and trees that are not a single
   * name fail.
   */
  addr(id: Path): Activity<Addr> {
    const path = stripTransformerPrefix(id);
    return this.interpreter.bind(Dtab.empty, path).flatMap((tree): Activity<Addr> => {
      switch (tree.type) {
        case 'leaf':
          return addrActivity(tree.value);
        case 'empty':
          return Activity.value(addrBound([]));
        case 'neg':
          return Activity.value(AddrNeg);
        case 'fail':
          return Activity.exception(new NameTreeFailedError());
        case 'alt':
        case 'union':
          return Activity.exception(new NotConcreteNameError(path.show));
      }
    });
  }

  /**
   * Bind, then the address of the tree's first usable name (an Alt's first branch that yields one;
   * a Union's branch picked at random by weight); Neg when there is none.
   */
  resolve(ns: string, extra: Dtab, path: Path): Activity<Addr> {
    return this.bind(ns, extra, path).flatMap((tree): Activity<Addr> => {
      const chosen = pickBound(tree);
      return chosen ? addrActivity(chosen) : Activity.value(AddrNeg);
    });
  }

  /** Every name the enumerating namers serve, sorted and without duplicates. */
  boundNames(): Activity<string[]> {
    return Activity.collect(this.#enumerating.map((n) => n.boundNames())).map((lists) => {
      const names = new Set<string>();
      for (const list of lists) for (const p of list) names.add(p.show);
      return [...names].sort();
    });
  }

  /**
   * Explains how `path` delegates through the stored dtab of `ns` followed by `extra` (pending
   * namers keep the promise pending until `signal` aborts).
   */
  async delegate(ns: string, extra: Dtab, path: Path, signal?: AbortSignal): Promise<DelegateTree<BoundName>> {
    const stored = await this.dtab(ns).toPromise(signal);
    return this.delegateWith(stored.concat(extra), path, signal);
  }

  /** Explains how `path` delegates through `dtab` (the caller already combined it). */
  delegateWith(dtab: Dtab, path: Path | NameTree<Path>, signal?: AbortSignal): Promise<DelegateTree<BoundName>> {
    return delegate(this.interpreter, dtab, path, signal);
  }
}

function toDtabState(s: State<VersionedDtab | undefined>): State<Dtab> {
  if (s.kind !== 'ok') return s;
  return ok(s.value?.dtab ?? Dtab.empty);
}

function sameDtabState(a: State<Dtab>, b: State<Dtab>): boolean {
  if (a.kind === 'ok' && b.kind === 'ok') return a.value.show === b.value.show;
  return a.kind === 'pending' && b.kind === 'pending';
}

/** A bound name's address as an activity: Pending until the namer knows it. */
function addrActivity(name: BoundName): Activity<Addr> {
  return new Activity(name.addr.map((a): State<Addr> => (a.kind === 'pending' ? Pending : ok(a))));
}

const TRANSFORMER_MARK = '%';

/**
 * `/%/<transformer>/<args…>/#/…` → `/#/…`: transformers prefix the ids they produce, but the
 * namers know the original ids only. Everything up to the first `#` or `$` segment is dropped.
 */
export function stripTransformerPrefix(id: Path): Path {
  if (id.elems[0] !== TRANSFORMER_MARK) return id;
  const start = id.elems.findIndex((e) => e === '#' || e === '$');
  return start < 0 ? id : id.drop(start);
}

/** The name a resolve request uses: see {@link ResolverNaming.resolve}. */
export function pickBound(tree: NameTree<BoundName>, random: () => number = Math.random): BoundName | undefined {
  switch (tree.type) {
    case 'leaf':
      return tree.value.id instanceof Path ? tree.value : undefined;
    case 'alt':
      for (const t of tree.trees) {
        const found = pickBound(t, random);
        if (found) return found;
      }
      return undefined;
    case 'union': {
      const total = tree.trees.reduce((sum, w) => sum + w.weight, 0);
      if (tree.trees.length === 0) return undefined;
      let r = random() * total;
      for (const w of tree.trees) {
        r -= w.weight;
        if (r < 0) return pickBound(w.tree, random);
      }
      // Rounding (or all-zero weights): the last branch.
      return pickBound((tree.trees[tree.trees.length - 1] as { tree: NameTree<BoundName> }).tree, random);
    }
    case 'neg':
    case 'fail':
    case 'empty':
      return undefined;
  }
}
