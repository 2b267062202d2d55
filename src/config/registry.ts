import type { z } from 'zod';
import { PrxError } from '../core/errors.js';

/**
 * Plugin families. A config slot holding `{kind: ...}` (or `protocol: ...` for routers) is resolved
 * against the kinds registered in its family.
 */
export type Family =
  | 'protocol'
  | 'namer'
  | 'identifier'
  | 'h2Identifier'
  | 'interpreter'
  | 'transformer'
  | 'responseClassifier'
  | 'failureAccrual'
  | 'loadBalancer'
  | 'telemeter'
  | 'tracePropagator'
  | 'requestAuthorizer'
  | 'logger'
  | 'announcer'
  | 'clientTls'
  | 'storage'
  | 'iface';

/**
 * One plugin kind: its config schema (carrying the defaults) and its factory. The factory's
 * context and product are typed by the family's own layer (e.g. `namer/` defines `defineNamer`),
 * so this registry stays generic and free of upward imports.
 */
export interface KindDef<Cfg = unknown, Ctx = never, Out = unknown> {
  readonly family: Family;
  readonly kind: string;
  /** Validates one config object of this kind (including its `kind` key) and fills defaults. */
  readonly schema: z.ZodType<Cfg>;
  /** The kind is refused unless its config object sets `experimental: true`. */
  readonly experimental?: boolean;
  readonly create: (cfg: Cfg, ctx: Ctx) => Out;
}

export class ConflictingKindError extends PrxError {
  constructor(family: Family, kind: string) {
    super('PRX_ERR_CONFIG_CONFLICTING_KIND', `kind '${kind}' is registered twice in family '${family}'`);
  }
}

// The registry is keyed by family then kind. Registration happens when a plugin module is
// imported (the executables import the built-in plugin list before loading config).
const families = new Map<Family, Map<string, KindDef<unknown, never, unknown>>>();

/** Registers a kind; registering the same family+kind twice is a programming error. */
export function registerKind<Cfg, Ctx, Out>(def: KindDef<Cfg, Ctx, Out>): KindDef<Cfg, Ctx, Out> {
  let kinds = families.get(def.family);
  if (!kinds) {
    kinds = new Map();
    families.set(def.family, kinds);
  }
  const existing = kinds.get(def.kind);
  if (existing && existing !== (def as unknown)) throw new ConflictingKindError(def.family, def.kind);
  kinds.set(def.kind, def as unknown as KindDef<unknown, never, unknown>);
  return def;
}

/** The definition of `kind` in `family`, if registered. */
export function lookupKind(family: Family, kind: string): KindDef<unknown, never, unknown> | undefined {
  return families.get(family)?.get(kind);
}

/** The registered kinds of a family, sorted (used in "unknown kind" messages). */
export function kindsOf(family: Family): string[] {
  return [...(families.get(family)?.keys() ?? [])].sort();
}
