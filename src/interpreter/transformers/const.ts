import { z } from 'zod';
import { pathText, lazySchema } from '../../config/index.js';
import { defineTransformer, type Transformer, type TransformerContext, transformerPrefix, transformerShape } from '../transformer.js';
import { bindThroughSystem } from './system-bind.js';

/**
 * `io.prx.const`: whatever the interpreter bound (Neg included), the result is `path` bound
 * through the `/$/` namer, with id `/%/io.prx.const` + `path`. A binding that is still pending
 * or failed stays so (Linkerd's transformer runs on bound trees only).
 */
export const constTransformerSchema = lazySchema(() => z.strictObject({
  ...transformerShape('io.prx.const'),
  path: pathText,
}));
export type ConstTransformerConfig = z.output<typeof constTransformerSchema>;

export function createConstTransformer(cfg: ConstTransformerConfig, ctx: TransformerContext): Transformer {
  const prefix = transformerPrefix(cfg.prefix, '/io.prx.const');
  const bound = bindThroughSystem(ctx.system, prefix, cfg.path);
  return { kind: cfg.kind, prefix, transform: (tree) => tree.flatMap(() => bound) };
}

defineTransformer({
  kind: 'io.prx.const',
  schema: constTransformerSchema,
  create: createConstTransformer,
});
