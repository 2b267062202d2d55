import type { z } from 'zod';
import { type KindDef, registerKind } from '../config/registry.js';
import type { Activity, Namer, Path } from '../naming/index.js';
import type { Logger } from 'pino';

/** What a namer factory receives besides its config. */
export interface NamerContext {
  /** The full prefix the namer serves, e.g. `/#/io.prx.fs`; its bound ids start with it. */
  readonly prefix: Path;
  readonly log: Logger;
}

/** A namer that can list every name it serves (`/bound-names.json`). */
export interface EnumeratingNamer extends Namer {
  boundNames(): Activity<Path[]>;
}

/** A namer instance with a lifecycle (closes its watches and timers). */
export interface RunningNamer extends Namer {
  close(): void;
}

/** Registers a namer kind (its schema and factory) with the config registry. */
export function defineNamer<Cfg>(def: {
  kind: string;
  schema: z.ZodType<Cfg>;
  experimental?: boolean;
  create: (cfg: Cfg, ctx: NamerContext) => RunningNamer;
}): KindDef<Cfg, NamerContext, RunningNamer> {
  return registerKind({ family: 'namer', ...def });
}
