import { z } from 'zod';
import { interpreterShape } from '../config/index.js';
import { registerKind } from '../config/registry.js';
import { ConfiguredNamersInterpreter, type MountedNamer, type Namer } from '../naming/index.js';

/** What building an interpreter needs from the process: its namers and the `/$/` namer. */
export interface InterpreterContext {
  readonly namers: readonly MountedNamer[];
  readonly system: Namer;
}

/**
 * `default`: binds through the router's dtab, the configured namers (`/#/<prefix>/…`) and the
 * built-in system namer (`/$/inet/…`, `/$/nil`, `/$/fail`).
 */
export const defaultInterpreterSchema = z.strictObject({ ...interpreterShape('default') });

registerKind({
  family: 'interpreter',
  kind: 'default',
  schema: defaultInterpreterSchema,
  create: (_cfg: z.output<typeof defaultInterpreterSchema>, ctx: InterpreterContext) =>
    new ConfiguredNamersInterpreter(ctx.namers, { system: ctx.system }),
});
