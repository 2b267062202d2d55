import { Activity } from './activity.js';
import { DEFAULT_MAX_DEPTH, type Lookup, bindPath } from './bind.js';
import { DEFAULT_NAMING_LIMITS, type NamingLimits, lookupCost } from './limits.js';
import type { Dtab } from './dtab.js';
import type { BoundName, Name } from './name.js';
import type { NameTree } from './name-tree.js';
import type { Path } from './path.js';
import { type Namer, SystemNamer } from './system-namer.js';

/** Binds a path through a dtab to live destinations. Routers talk to interpreters only. */
export interface NameInterpreter {
  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>>;
}

/** A namer mounted at a prefix such as `/#/io.prx.fs`. */
export interface MountedNamer {
  readonly prefix: Path;
  readonly namer: Namer;
}

export interface InterpreterOptions {
  /** The `/$/…` namer; defaults to a system namer that binds IP literals only. */
  system?: Namer;
  maxDepth?: number;
  /** The work budget of each bind and delegation (see `limits.ts`). */
  limits?: NamingLimits;
}

/**
 * The default interpreter (Linkerd's `ConfiguredNamersInterpreter`): a path is rewritten by the
 * dtab; a path no dentry matches (or only a single `~` dentry matches) goes to the configured
 * namers whose prefix it starts with, in order (a Neg answer moves on), and finally to the
 * system namer.
 */
export class ConfiguredNamersInterpreter implements NameInterpreter {
  readonly namers: readonly MountedNamer[];
  readonly system: Namer;
  readonly maxDepth: number;
  readonly limits: NamingLimits;

  constructor(namers: readonly MountedNamer[] = [], opts: InterpreterOptions = {}) {
    this.namers = namers;
    this.system = opts.system ?? new SystemNamer();
    this.maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.limits = opts.limits ?? DEFAULT_NAMING_LIMITS;
  }

  /** The lookup function binding uses for `dtab`. */
  lookupIn(dtab: Dtab): Lookup {
    return (path) => {
      const rewritten = dtab.lookup(path);
      return rewritten.type === 'neg' ? this.namerLookup(path) : Activity.value(rewritten);
    };
  }

  /** Asks the namers mounted on a prefix of `path`, then the system namer. */
  namerLookup(path: Path, from = 0): Activity<NameTree<Name>> {
    for (let i = from; i < this.namers.length; i++) {
      const { prefix, namer } = this.namers[i] as MountedNamer;
      if (!path.startsWith(prefix)) continue;
      return namer
        .lookup(path.drop(prefix.size))
        .flatMap((tree) => (tree.type === 'neg' ? this.namerLookup(path, i + 1) : Activity.value(tree)));
    }
    return this.system.lookup(path);
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    return bindPath(this.lookupIn(dtab), path, this.maxDepth, { limits: this.limits, lookupCost: lookupCost(dtab.size) });
  }

  /** Binds against a changing dtab (e.g. one read from a watched file or the resolver). */
  bindDynamic(dtab: Activity<Dtab>, path: Path): Activity<NameTree<BoundName>> {
    return dtab.flatMap((d) => this.bind(d, path));
  }
}
