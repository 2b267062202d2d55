// Registration helpers shared by the balancer kinds (family `loadBalancer`).
import { z } from 'zod';
import { kindShape, positiveInt, registerKind, type KindDef, lazySchema } from '../../config/index.js';
import type { BaseOptions } from './base.js';
import type { BalancerContext, BalancerFactory } from './types.js';

/** Keys every balancer kind accepts: `kind`, `experimental`, and `enableProbation` (default false). */
export function balancerShape<K extends string>(kind: K) {
  return { ...kindShape(kind), enableProbation: z.boolean().default(false) };
}

/** Re-picks when a pick lands on an unavailable node (Finagle's default is 5). */
export const maxEffort = lazySchema(() => positiveInt.default(5));

/** A balancer kind: its schema (with defaults) and its factory. */
export interface BalancerDef<Cfg> {
  readonly kind: string;
  readonly schema: z.ZodType<Cfg>;
  readonly create: (cfg: Cfg, ctx: BalancerContext) => BalancerFactory;
}

/** Registers a balancer kind in the config registry and returns its definition. */
export function defineBalancer<Cfg>(def: BalancerDef<Cfg>): KindDef<Cfg, BalancerContext, BalancerFactory> {
  return registerKind<Cfg, BalancerContext, BalancerFactory>({ family: 'loadBalancer', ...def });
}

/** The options of the shared base from a validated config and the context. */
export function baseOptions(
  cfg: { readonly enableProbation: boolean; readonly maxEffort?: number },
  ctx: BalancerContext,
  defaultEffort = 5,
): BaseOptions {
  return { maxEffort: cfg.maxEffort ?? defaultEffort, enableProbation: cfg.enableProbation, random: ctx.random ?? Math.random };
}

/** The default clock of time-smoothed kinds: monotonic, so wall-clock steps cannot skew averages. */
export function monotonicMs(): number {
  return performance.now();
}
