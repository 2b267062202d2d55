import { type Path, showElem } from './path.js';
import { type NameTree, Neg, alt, mapTree, showTree, simplifyTree } from './name-tree.js';

/** The `*` element of a dentry prefix: matches any one path element. */
export const AnyElem: unique symbol = Symbol('*');
export type PrefixElem = string | typeof AnyElem;

/** The left side of a dentry: labels that must match exactly, and `*` wildcards. */
export class Prefix {
  static readonly empty: Prefix = new Prefix([]);
  readonly elems: readonly PrefixElem[];

  constructor(elems: readonly PrefixElem[]) {
    this.elems = elems;
  }

  get size(): number {
    return this.elems.length;
  }

  /** True when this prefix matches the first `size` elements of `path`. */
  matches(path: Path): boolean {
    const pe = this.elems;
    const e = path.elems;
    if (pe.length > e.length) return false;
    for (let i = 0; i < pe.length; i++) {
      const p = pe[i];
      if (p !== AnyElem && p !== e[i]) return false;
    }
    return true;
  }

  equals(other: Prefix): boolean {
    if (this.elems.length !== other.elems.length) return false;
    return this.elems.every((e, i) => e === other.elems[i]);
  }

  get show(): string {
    if (this.elems.length === 0) return '/';
    return '/' + this.elems.map((e) => (e === AnyElem ? '*' : showElem(e))).join('/');
  }

  toString(): string {
    return this.show;
  }
}

/** Shows a tree of paths, e.g. `/a | /b & /c`. */
export function showPathTree(tree: NameTree<Path>): string {
  return showTree(tree, (p) => p.show);
}

/** One dtab rule, `prefix => dst`. */
export class Dentry {
  /** Linkerd's "no dentry" marker (`/\x2f=>~`), used on nodes that no dtab rule produced. */
  static readonly nop: Dentry = new Dentry(new Prefix(['/']), Neg);

  readonly prefix: Prefix;
  readonly dst: NameTree<Path>;
  #show: string | undefined;

  constructor(prefix: Prefix, dst: NameTree<Path>) {
    this.prefix = prefix;
    this.dst = dst;
  }

  get show(): string {
    this.#show ??= this.prefix.show + '=>' + showPathTree(this.dst);
    return this.#show;
  }

  /** Same prefix, and destinations equal after simplification (Finagle's dentry equivalence). */
  equiv(other: Dentry): boolean {
    return (
      this.prefix.equals(other.prefix) &&
      showPathTree(simplifyTree(this.dst)) === showPathTree(simplifyTree(other.dst))
    );
  }

  toString(): string {
    return this.show;
  }
}

/**
 * A delegation table: an ordered list of dentries. Later dentries take precedence; every
 * matching dentry contributes an alternative (see `lookup`).
 */
export class Dtab {
  static readonly empty: Dtab = new Dtab([]);
  readonly dentries: readonly Dentry[];
  #show: string | undefined;

  constructor(dentries: readonly Dentry[]) {
    this.dentries = dentries;
  }

  get size(): number {
    return this.dentries.length;
  }

  get isEmpty(): boolean {
    return this.dentries.length === 0;
  }

  concat(other: Dtab): Dtab {
    if (other.isEmpty) return this;
    if (this.isEmpty) return other;
    return new Dtab([...this.dentries, ...other.dentries]);
  }

  append(dentry: Dentry): Dtab {
    return new Dtab([...this.dentries, dentry]);
  }

  /**
   * Rewrites `path` by every matching dentry, last to first: each match maps the leaves of its
   * destination to `leaf ++ unmatched suffix`. No match is Neg; one match its tree; several an
   * Alt (latest first). Specificity plays no part: later rules win.
   */
  lookup(path: Path): NameTree<Path> {
    const matches: NameTree<Path>[] = [];
    for (let i = this.dentries.length - 1; i >= 0; i--) {
      const d = this.dentries[i] as Dentry;
      if (!d.prefix.matches(path)) continue;
      const suffix = path.drop(d.prefix.size);
      matches.push(suffix.isEmpty ? d.dst : mapTree(d.dst, (p) => p.concat(suffix)));
    }
    if (matches.length === 0) return Neg;
    if (matches.length === 1) return matches[0] as NameTree<Path>;
    return alt(...matches);
  }

  /** `/a=>/b;/c=>/d` (no spaces); the empty dtab shows as the empty string. */
  get show(): string {
    this.#show ??= this.dentries.map((d) => d.show).join(';');
    return this.#show;
  }

  toString(): string {
    return this.show;
  }

  toJSON(): string {
    return this.show;
  }
}
