import { z } from 'zod';
import { interpreterShape, lazySchema } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import { ConfiguredNamersInterpreter, type NameInterpreter } from '../naming/index.js';
import type { InterpreterContext } from './context.js';
import { buildTransformers, withTransformers } from './transformer.js';
// Every interpreter kind accepts `transformers`; their kinds must be known before config is read.
import './transformers/index.js';

export type { InterpreterContext } from './context.js';

/**
 * `default`: binds through the router's dtab, the configured namers (`/#/<prefix>/…`) and the
 * built-in system namer (`/$/inet/…`, `/$/nil`, `/$/fail`), then through the router's
 * `transformers`, in order.
 */
export const defaultInterpreterSchema = lazySchema(() => z.strictObject({ ...interpreterShape('default') }));

registerKind({
  family: 'interpreter',
  kind: 'default',
  schema: defaultInterpreterSchema,
  create: (cfg: z.output<typeof defaultInterpreterSchema>, ctx: InterpreterContext): NameInterpreter =>
    withTransformers(new ConfiguredNamersInterpreter(ctx.namers, { system: ctx.system }), buildTransformers(cfg.transformers, ctx)),
});
