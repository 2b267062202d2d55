// The `failureAccrual` kinds: config schemas (with defaults) and factories of per-endpoint
// policies. Every kind takes `backoff` (default jittered 5 s – 300 s) from `failureAccrualShape`.
import { z } from 'zod';
import {
  ConfigError,
  ConfigErrorCode,
  clientParamDefaults,
  failureAccrualShape,
  fraction,
  kindSlot,
  lookupKind,
  positiveInt,
  registerKind,
  validateOnce,
  type KindConfig,
  type KindDef,
  lazySchema,
} from '../../config/index.js';
import { backoffFromConfig, type Random } from './backoff.js';
import {
  consecutiveFailures,
  none,
  successRate,
  successRateWindowed,
  type FailureAccrualPolicyFactory,
} from './failure-accrual.js';
import type { Clock } from './windowed-adder.js';

/** Injected randomness (backoff jitter) and time (windowed success rate); tests pass fixed ones. */
export interface AccrualContext {
  readonly random?: Random;
  readonly now?: Clock;
}

/** `io.prx.consecutiveFailures`: marks a node dead after `failures` failures in a row. */
export const consecutiveFailuresSchema = lazySchema(() => z.strictObject({
  ...failureAccrualShape('io.prx.consecutiveFailures'),
  failures: positiveInt,
}));

/** `io.prx.successRate`: success rate as an EMA over `requests` results, dead below `successRate`. */
export const successRateSchema = lazySchema(() => z.strictObject({
  ...failureAccrualShape('io.prx.successRate'),
  successRate: fraction,
  requests: positiveInt,
}));

/** `io.prx.successRateWindowed`: success rate as an EMA over `window` seconds, dead below `successRate`. */
export const successRateWindowedSchema = lazySchema(() => z.strictObject({
  ...failureAccrualShape('io.prx.successRateWindowed'),
  successRate: fraction,
  window: positiveInt,
}));

/** `none`: failure accrual disabled (`backoff` is accepted and unused, as in Linkerd). */
export const noAccrualSchema = lazySchema(() => z.strictObject({ ...failureAccrualShape('none') }));

function defineAccrual<Cfg>(
  kind: string,
  schema: z.ZodType<Cfg>,
  create: (cfg: Cfg, ctx: AccrualContext) => FailureAccrualPolicyFactory,
): KindDef<Cfg, AccrualContext, FailureAccrualPolicyFactory> {
  return registerKind<Cfg, AccrualContext, FailureAccrualPolicyFactory>({ family: 'failureAccrual', kind, schema, create });
}

// A Backoff is an immutable recipe: one per config, shared by every endpoint's policy, each of
// which starts its own stream.
export const consecutiveFailuresKind = defineAccrual('io.prx.consecutiveFailures', consecutiveFailuresSchema, (cfg, ctx) => {
  const backoff = backoffFromConfig(cfg.backoff, ctx.random);
  return () => consecutiveFailures(cfg.failures, backoff);
});

export const successRateKind = defineAccrual('io.prx.successRate', successRateSchema, (cfg, ctx) => {
  const backoff = backoffFromConfig(cfg.backoff, ctx.random);
  return () => successRate(cfg.successRate, cfg.requests, backoff);
});

export const successRateWindowedKind = defineAccrual('io.prx.successRateWindowed', successRateWindowedSchema, (cfg, ctx) => {
  const backoff = backoffFromConfig(cfg.backoff, ctx.random);
  return () => successRateWindowed(cfg.successRate, cfg.window, backoff, ctx.now);
});

export const noAccrualKind = defineAccrual('none', noAccrualSchema, () => none);

// Validates any registered kind (unknown kinds are listed, experimental ones gated).
const validFailureAccrual = validateOnce(lazySchema(() => kindSlot('failureAccrual')));

/**
 * The per-endpoint policy factory for a `failureAccrual` config object (validated here; defaults
 * filled). Absent: `clientParamDefaults.failureAccrual`, 5 consecutive failures with jittered
 * 5 s – 300 s backoff. Throws a ConfigError naming the problem for an invalid object.
 */
export function accrualFromConfig(cfg: KindConfig | undefined, ctx: AccrualContext = {}): FailureAccrualPolicyFactory {
  const valid = validFailureAccrual(cfg ?? clientParamDefaults.failureAccrual);
  const def = lookupKind('failureAccrual', valid.kind) as KindDef<KindConfig, AccrualContext, FailureAccrualPolicyFactory> | undefined;
  if (def === undefined) {
    // Only reachable if the registry changed between validation and lookup.
    throw new ConfigError([{ path: ['kind'], message: `unknown failureAccrual kind ${JSON.stringify(valid.kind)}`, code: ConfigErrorCode.unknownKind }]);
  }
  return def.create(valid, ctx);
}
