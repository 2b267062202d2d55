import type { z } from 'zod';
import { type KindConfig, type KindDef, kindShape, lookupKind, pathText, registerKind } from '../config/index.js';
import type { Logger } from '../core/log.js';
import {
  type Activity, type Addr, BoundName, type DelegateTree, type Dtab, type NameInterpreter, type NameTree, type Namer, Path,
  type Var, addrEquals, mapTree, readPath,
} from '../naming/index.js';
import { UnknownTransformerError } from './errors.js';

/** What a transformer factory receives from the process. */
export interface TransformerContext {
  /** The `/$/` namer: `io.prx.replace` and `io.prx.const` bind their path through it alone. */
  readonly system: Namer;
  readonly log?: Logger;
}

/**
 * A post-processing step on an interpreter's bound trees (Linkerd's `NameTreeTransformer`).
 * Transformed bound ids carry the transformer's prefix, `/%/io.prx.port/4141/#/io.prx.fs/hello`,
 * so a transformed destination is a distinct client (its own stats and static client config).
 */
export interface Transformer {
  readonly kind: string;
  /** The full prefix of rewritten ids, starting with `/%`. */
  readonly prefix: Path;
  transform(tree: Activity<NameTree<BoundName>>): Activity<NameTree<BoundName>>;
  /**
   * The per-leaf rewrite of transformers that map each bound name on its own (the address
   * transformers). Delegation explanations can show it as a `transformation` node; transformers
   * without it (replace, const) make an interpreter unable to explain delegations, as in Linkerd.
   */
  readonly mapBound?: (bound: BoundName) => BoundName;
}

/**
 * Keys of every transformer kind: a kind's schema spreads them. `prefix` (optional) replaces the
 * kind's default prefix; `/%` is always put in front of it (Linkerd's `TransformerConfig`).
 */
export function transformerShape<K extends string>(kind: K) {
  return { ...kindShape(kind), prefix: pathText.optional() };
}

/** `/%` followed by the configured prefix, or by the kind's default when none is configured. */
export function transformerPrefix(configured: string | undefined, defaultPrefix: string): Path {
  return TRANSFORMER_MARK.concat(readPath(configured ?? defaultPrefix));
}

const TRANSFORMER_MARK = Path.of('%');

/** Registers a transformer kind (its schema and factory) with the config registry. */
export function defineTransformer<Cfg>(def: {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly create: (cfg: Cfg, ctx: TransformerContext) => Transformer;
}): KindDef<Cfg, TransformerContext, Transformer> {
  return registerKind<Cfg, TransformerContext, Transformer>({ family: 'transformer', ...def });
}

/** Builds a router's validated `transformers` list, in order. */
export function buildTransformers(configs: readonly KindConfig[], ctx: TransformerContext): Transformer[] {
  return configs.map((cfg) => {
    const def = lookupKind('transformer', cfg.kind) as KindDef<KindConfig, TransformerContext, Transformer> | undefined;
    if (def === undefined) throw new UnknownTransformerError(cfg.kind);
    return def.create(cfg, ctx);
  });
}

/**
 * An interpreter whose bindings pass through transformers, first to last. `underlying` is the
 * interpreter itself, for what transformers do not change (its state, its dtab, delegation).
 */
export class TransformedInterpreter implements NameInterpreter {
  readonly underlying: NameInterpreter;
  readonly transformers: readonly Transformer[];

  constructor(underlying: NameInterpreter, transformers: readonly Transformer[]) {
    this.underlying = underlying;
    this.transformers = transformers;
  }

  bind(dtab: Dtab, path: Path): Activity<NameTree<BoundName>> {
    let tree = this.underlying.bind(dtab, path);
    for (const t of this.transformers) tree = t.transform(tree);
    return tree;
  }
}

/** `interpreter` with `transformers` applied in order; the interpreter itself when there are none. */
export function withTransformers(interpreter: NameInterpreter, transformers: readonly Transformer[]): NameInterpreter {
  return transformers.length === 0 ? interpreter : new TransformedInterpreter(interpreter, transformers);
}

/** The interpreter under any transformer wrapping. */
export function underlyingInterpreter(interpreter: NameInterpreter): NameInterpreter {
  return interpreter instanceof TransformedInterpreter ? interpreter.underlying : interpreter;
}

/**
 * A per-leaf transformer's rewrite: the id gets `prefix` (string ids are left alone, as Linkerd
 * does for non-path ids) and the address var is replaced by `mapAddr` of the original one.
 * Unchanged address sets are not re-published.
 */
export function prefixingMapBound(prefix: Path, mapAddr: (addr: Var<Addr>) => Var<Addr>): (bound: BoundName) => BoundName {
  return (b) => new BoundName(b.id instanceof Path ? prefix.concat(b.id) : b.id, mapAddr(b.addr).dedup(addrEquals), b.residual);
}

/** A transformer that rewrites every bound leaf with `mapBound`. */
export function perLeafTransformer(kind: string, prefix: Path, mapBound: (bound: BoundName) => BoundName): Transformer {
  const mapLeaves = (tree: NameTree<BoundName>): NameTree<BoundName> => mapTree(tree, mapBound);
  return { kind, prefix, mapBound, transform: (tree) => tree.map(mapLeaves) };
}

/**
 * A delegation explanation with the transformers' effect shown (Linkerd's
 * `DelegatingNameTreeTransformer`): each bound leaf becomes a `transformation` node holding the
 * original name and the rewritten leaf. Undefined when a transformer cannot be shown this way.
 */
export function transformDelegateTree(
  tree: DelegateTree<BoundName>,
  transformers: readonly Transformer[],
): DelegateTree<BoundName> | undefined {
  let out = tree;
  for (const t of transformers) {
    if (t.mapBound === undefined) return undefined;
    out = mapDelegateLeaves(out, t.kind, t.mapBound);
  }
  return out;
}

function mapDelegateLeaves(
  tree: DelegateTree<BoundName>,
  kind: string,
  mapBound: (bound: BoundName) => BoundName,
): DelegateTree<BoundName> {
  switch (tree.type) {
    case 'leaf': {
      const bound = mapBound(tree.value);
      const path = bound.id instanceof Path ? bound.id : tree.path;
      return { type: 'transformation', path: tree.path, dentry: tree.dentry, name: kind, value: tree.value, tree: { ...tree, value: bound, path } };
    }
    case 'delegate':
      return { ...tree, tree: mapDelegateLeaves(tree.tree, kind, mapBound) };
    case 'transformation':
      return { ...tree, tree: mapDelegateLeaves(tree.tree, kind, mapBound) };
    case 'alt':
      return { ...tree, trees: tree.trees.map((t) => mapDelegateLeaves(t, kind, mapBound)) };
    case 'union':
      return { ...tree, trees: tree.trees.map((w) => ({ weight: w.weight, tree: mapDelegateLeaves(w.tree, kind, mapBound) })) };
    case 'neg':
    case 'fail':
    case 'empty':
    case 'exception':
      return tree;
  }
}
