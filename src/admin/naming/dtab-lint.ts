import { AnyElem, type Dentry, type Dtab, type NameTree, type Path, type Prefix, leavesOf } from '../../naming/index.js';
import type { LintIssue, Linter } from '../lint.js';

/** What the dtab linters look at: each router's dtab and dstPrefix, and the namers' prefixes. */
export interface RoutingSnapshot {
  readonly routers: readonly {
    readonly label: string;
    readonly dstPrefix: Path;
    readonly dtab: Dtab;
    /**
     * False when the router's interpreter binds `/#/` names elsewhere (a resolver), whose namers
     * are unknown here; true or absent when it binds them through the configured namers.
     */
    readonly localNamers?: boolean;
  }[];
  /** Full prefixes the configured namers serve, e.g. `/#/io.prx.fs`. */
  readonly namerPrefixes: readonly Path[];
}

/** True when `general` matches every path that `specific` matches. */
function covers(general: Prefix, specific: Prefix): boolean {
  if (general.size > specific.size) return false;
  for (let i = 0; i < general.size; i++) {
    const g = general.elems[i];
    if (g !== AnyElem && g !== specific.elems[i]) return false;
  }
  return true;
}

/** Whether some path can match both a prefix and the start of a path (or a longer path). */
function overlaps(prefix: Prefix, path: Path): boolean {
  const n = Math.min(prefix.size, path.size);
  for (let i = 0; i < n; i++) {
    const p = prefix.elems[i];
    if (p !== AnyElem && p !== path.elems[i]) return false;
  }
  return true;
}

/** A destination that can never be Neg never lets lookup fall back to an earlier dentry. */
function neverNeg(tree: NameTree<Path>): boolean {
  switch (tree.type) {
    case 'fail':
    case 'empty':
      return true;
    case 'neg':
      return false;
    case 'leaf':
      // Only literal addresses are known never to be Neg; any namer may answer Neg.
      return tree.value.elems[0] === '$' && (tree.value.elems[1] === 'inet' || tree.value.elems[1] === 'nil');
    case 'alt':
      return tree.trees.some(neverNeg);
    case 'union':
      return tree.trees.some((w) => neverNeg(w.tree));
  }
}

/**
 * Dentries that a later dentry always takes precedence over: the later prefix matches every path
 * the earlier one does and its destination can never be Neg, so the earlier rule is dead.
 */
export function shadowedDentries(snapshot: RoutingSnapshot): LintIssue[] {
  const issues: LintIssue[] = [];
  for (const r of snapshot.routers) {
    const ds = r.dtab.dentries;
    ds.forEach((d, i) => {
      for (let j = ds.length - 1; j > i; j--) {
        const later = ds[j] as Dentry;
        if (covers(later.prefix, d.prefix) && neverNeg(later.dst)) {
          issues.push({
            severity: 'warning',
            message: `router ${r.label}: dentry ${i + 1} '${d.show}' is shadowed by dentry ${j + 1} '${later.show}', which matches every path it does and never falls through`,
          });
          break;
        }
      }
    });
  }
  return issues;
}

/** Configured namers that no router's dtab sends any name to. */
export function unusedNamers(snapshot: RoutingSnapshot): LintIssue[] {
  const targets: Path[] = [];
  for (const r of snapshot.routers) for (const d of r.dtab.dentries) targets.push(...leavesOf(d.dst));
  return snapshot.namerPrefixes
    .filter((prefix) => !targets.some((t) => t.startsWith(prefix) || prefix.startsWith(t)))
    .map((prefix) => ({ severity: 'warning' as const, message: `namer ${prefix.show} is not used by any router's dtab` }));
}

/**
 * Dentries that send names to a `/#/` namer that is not configured (`/#/io.prx.consul/…` with no
 * consul namer): nothing binds them, so those names are Neg, which reads like a routing result.
 * A warning, not a config error: the dtab may be meant for another process, or a namer to come.
 */
export function unconfiguredNamers(snapshot: RoutingSnapshot): LintIssue[] {
  const issues: LintIssue[] = [];
  const configured = (leaf: Path): boolean => snapshot.namerPrefixes.some((p) => leaf.startsWith(p) || p.startsWith(leaf));
  for (const r of snapshot.routers) {
    if (r.localNamers === false) continue;
    r.dtab.dentries.forEach((d, i) => {
      const missing = new Set<string>();
      for (const leaf of leavesOf(d.dst)) {
        if (leaf.size >= 2 && leaf.elems[0] === '#' && !configured(leaf)) missing.add(`/#/${leaf.elems[1] as string}`);
      }
      for (const namer of missing) {
        issues.push({
          severity: 'warning',
          message: `router ${r.label}: dentry ${i + 1} '${d.show}' names the namer ${namer}, which is not configured (names bound through it are neg)`,
        });
      }
    });
  }
  return issues;
}

/**
 * Dentries no name can reach: their prefix overlaps neither the router's `dstPrefix` (where
 * identified names start) nor any destination of another dentry.
 */
export function unreachableDentries(snapshot: RoutingSnapshot): LintIssue[] {
  const issues: LintIssue[] = [];
  for (const r of snapshot.routers) {
    const ds = r.dtab.dentries;
    ds.forEach((d, i) => {
      if (overlaps(d.prefix, r.dstPrefix)) return;
      const fed = ds.some((other, j) => j !== i && leavesOf(other.dst).some((leaf) => overlaps(d.prefix, leaf)));
      if (!fed) {
        issues.push({
          severity: 'warning',
          message: `router ${r.label}: dentry ${i + 1} '${d.show}' is unreachable: names start with ${r.dstPrefix.show} and no other dentry leads to ${d.prefix.show}`,
        });
      }
    });
  }
  return issues;
}

/** The dtab linters, over a snapshot taken on each run (dtabs may change at run time). */
export function dtabLinters(snapshot: () => RoutingSnapshot): Linter[] {
  return [
    {
      name: 'dtab-shadowed-dentries',
      description: 'Dentries that a later dentry always overrides',
      run: () => ({ name: 'dtab-shadowed-dentries', issues: shadowedDentries(snapshot()) }),
    },
    {
      name: 'dtab-unused-namers',
      description: 'Configured namers that no dtab routes to',
      run: () => ({ name: 'dtab-unused-namers', issues: unusedNamers(snapshot()) }),
    },
    {
      name: 'dtab-unconfigured-namers',
      description: 'Dentries that name a namer that is not configured',
      run: () => ({ name: 'dtab-unconfigured-namers', issues: unconfiguredNamers(snapshot()) }),
    },
    {
      name: 'dtab-unreachable-dentries',
      description: 'Dentries that no identified name can reach',
      run: () => ({ name: 'dtab-unreachable-dentries', issues: unreachableDentries(snapshot()) }),
    },
  ];
}
