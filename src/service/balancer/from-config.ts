import {
  ConfigError,
  ConfigErrorCode,
  clientParamDefaults,
  kindSlot,
  lookupKind,
  validateOnce,
  type KindConfig,
  type KindDef,
  lazySchema,
} from '../../config/index.js';
import { apertureKind } from './aperture.js';
import { ewmaKind } from './ewma.js';
import { heapKind } from './heap.js';
import { p2cKind } from './p2c.js';
import { roundRobinKind } from './round-robin.js';
import type { BalancerContext, BalancerFactory } from './types.js';

/** The built-in balancer kinds; importing this module registers them. */
export const BALANCER_KINDS = [p2cKind, ewmaKind, apertureKind, heapKind, roundRobinKind] as const;

// Validates any registered kind (unknown kinds are listed, experimental ones gated).
const validLoadBalancer = validateOnce(lazySchema(() => kindSlot('loadBalancer')));

/**
 * The balancer factory for a `loadBalancer` config object (validated here; defaults filled),
 * `{kind: 'p2c'}` when absent. Throws a ConfigError naming the problem for an invalid object.
 */
export function balancerFromConfig(cfg: KindConfig | undefined, ctx: BalancerContext = {}): BalancerFactory {
  const valid = validLoadBalancer(cfg ?? clientParamDefaults.loadBalancer);
  const def = lookupKind('loadBalancer', valid.kind) as KindDef<KindConfig, BalancerContext, BalancerFactory> | undefined;
  if (def === undefined) {
    // Only reachable if the registry changed between validation and lookup.
    throw new ConfigError([{ path: ['kind'], message: `unknown loadBalancer kind ${JSON.stringify(valid.kind)}`, code: ConfigErrorCode.unknownKind }]);
  }
  return def.create(valid, ctx);
}
