/** Load balancers (family `loadBalancer`): p2c, ewma, aperture, heap, roundRobin. */
export type { Balancer, BalancerContext, BalancerFactory, BalancerNode } from './types.js';
export { BALANCER_KINDS, balancerFromConfig } from './from-config.js';
export { balancerShape, defineBalancer, maxEffort, type BalancerDef } from './kind.js';
export { p2cSchema, type P2cConfig } from './p2c.js';
export { ewmaSchema, type EwmaConfig } from './ewma.js';
export { ApertureBalancer, apertureSchema, type ApertureConfig } from './aperture.js';
export { heapSchema, type HeapConfig } from './heap.js';
export { roundRobinSchema, type RoundRobinConfig } from './round-robin.js';
