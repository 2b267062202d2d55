import type { z } from 'zod';
import { type KindDef, registerKind } from '../config/registry.js';
import type { Activity, BoundName, Name, NameTree, Namer, Path, State } from '../naming/index.js';
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

/** A namer with internal state to show at `/namer_state/<prefix>.json` (its watches, their health). */
export interface StatefulNamer extends Namer {
  adminState(): unknown;
}

/** Whether `namer` shows a `/namer_state` view. */
export function isStateful(namer: Namer): namer is StatefulNamer {
  return typeof (namer as Partial<StatefulNamer>).adminState === 'function';
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

/** Equal lookup results (a bound leaf: same id, residual and address var), so unchanged re-lookups do not churn bindings. */
export function sameLookup(a: State<NameTree<Name>>, b: State<NameTree<Name>>): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === 'failed') return a.error.message === (b as typeof a).error.message;
  if (a.kind === 'pending') return true;
  const x = a.value;
  const y = (b as typeof a).value;
  if (x.type !== y.type) return false;
  if (x.type !== 'leaf' || y.type !== 'leaf') return true; // both Neg
  const bx = x.value as BoundName;
  const by = y.value as BoundName;
  return bx.idStr === by.idStr && bx.residual.equals(by.residual) && bx.addr === by.addr;
}
