// The bounds on naming work. Finagle bounds only the lookups along one chain (100); a dtab of a few
// hundred bytes can still ask for 2^20 alternatives, so every evaluation also has a budget of
// expanded nodes and of nesting depth, shared by alternatives, unions and weights, and dtabs have
// a size limit where they enter (headers, config, resolver storage, request parameters).

/**
 * Name-tree nodes (lookups, alternatives, unions) one bind or delegation may expand. Each costs a
 * few microseconds of live binding, so this keeps a request that exhausts it near 1 ms (and
 * legitimate traffic's p99 under 5 ms while such requests keep coming: scripts/attack-soak).
 */
export const MAX_NAMING_NODES = 500;

/**
 * Nesting of one evaluation: lookups plus alternative/union levels along any branch. Above
 * Finagle's 100-lookup chain limit (that error, with its own message, comes first for chains),
 * low enough that every walk over the resulting trees stays far from the stack's limit.
 */
export const MAX_NAMING_DEPTH = 200;

/** Parentheses nesting the dtab parser accepts. */
export const MAX_NAME_TREE_NESTING = 100;

/** Dentries in one dtab (a header, a config `dtab`, a stored namespace, a `dtab` parameter). */
export const MAX_DTAB_DENTRIES = 20_000;

/** Characters of one dtab's text (2 MiB). */
export const MAX_DTAB_CHARS = 2 * 1024 * 1024;

/**
 * Each lookup scans the dtab; it costs 1 node, plus 1 per this many dentries, so a long dtab
 * cannot multiply the budget by its length. A chain of Finagle's 100 lookups in a dtab of up to
 * ~8,000 dentries still ends with Finagle's depth error before the budget runs out, and one
 * evaluation scans at most ~1M dentries.
 */
export const DENTRIES_PER_NODE = 2000;

/** The budget of one evaluation. */
export interface NamingLimits {
  readonly maxNodes: number;
  readonly maxDepth: number;
}

export const DEFAULT_NAMING_LIMITS: NamingLimits = Object.freeze({ maxNodes: MAX_NAMING_NODES, maxDepth: MAX_NAMING_DEPTH });

/** What one lookup in `dtabSize` dentries costs. */
export function lookupCost(dtabSize: number): number {
  return 1 + Math.floor(dtabSize / DENTRIES_PER_NODE);
}
