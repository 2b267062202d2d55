import { z } from 'zod';
import { pathText, lazySchema } from '../../config/index.js';
import { Activity, type BoundName, type NameTree, leavesOf, weighted } from '../../naming/index.js';
import { defineTransformer, type Transformer, type TransformerContext, transformerPrefix, transformerShape } from '../transformer.js';
import { bindThroughSystem } from './system-bind.js';

/**
 * `io.prx.replace`: every bound leaf of the tree is replaced by `path`, bound through the `/$/`
 * namer (`/$/inet/127.0.0.1/4141`); the tree's shape (alternatives, weights) stays, so a Neg
 * tree stays Neg and a Fail stays Fail. The replacement's id is `/%/io.prx.replace` + `path`.
 */
export const replaceTransformerSchema = lazySchema(() => z.strictObject({
  ...transformerShape('io.prx.replace'),
  path: pathText,
}));
export type ReplaceTransformerConfig = z.output<typeof replaceTransformerSchema>;

/** `tree` with every leaf replaced by `replacement`. */
export function replaceLeaves<T>(tree: NameTree<T>, replacement: NameTree<T>): NameTree<T> {
  switch (tree.type) {
    case 'leaf':
      return replacement;
    case 'alt':
      return { type: 'alt', trees: tree.trees.map((t) => replaceLeaves(t, replacement)) };
    case 'union':
      return { type: 'union', trees: tree.trees.map((w) => weighted(w.weight, replaceLeaves(w.tree, replacement))) };
    case 'neg':
    case 'fail':
    case 'empty':
      return tree;
  }
}

export function createReplaceTransformer(cfg: ReplaceTransformerConfig, ctx: TransformerContext): Transformer {
  const prefix = transformerPrefix(cfg.prefix, '/io.prx.replace');
  const replacement = bindThroughSystem(ctx.system, prefix, cfg.path);
  return {
    kind: cfg.kind,
    prefix,
    // A tree without leaves needs no replacement: it is returned without waiting on the binding.
    transform: (tree) =>
      tree.flatMap((t) => (leavesOf(t).length === 0 ? Activity.value(t) : replacement.map((r: NameTree<BoundName>) => replaceLeaves(t, r)))),
  };
}

defineTransformer({
  kind: 'io.prx.replace',
  schema: replaceTransformerSchema,
  create: createReplaceTransformer,
});
