import { z } from 'zod';
import { numberInRange, positiveInt, lazySchema } from '../config/index.js';

/**
 * `failureThreshold`: the liveness check of a proxy's link to the resolver (`io.prx.resolver`,
 * `io.prx.mesh`, `io.prx.resolver.http`). The link proves itself every `minPeriodMs` — an answered
 * mux Tping on the thrift link, an answered HTTP/2 PING on the mesh link, a heartbeat or update on
 * an HTTP watch stream — and one that stays silent `closeTimeoutMs` past that is torn down and
 * rebuilt. `threshold` and `windowSize` are Finagle's threshold detector, used by the thrift link
 * (a Tping out longer than `threshold` × the slowest of the last `windowSize` answers marks the
 * session busy); the mesh and HTTP links accept them for Linkerd compatibility and judge by
 * `closeTimeoutMs` alone.
 */
export const failureThresholdSchema = lazySchema(() => z.strictObject({
  minPeriodMs: positiveInt.default(5000),
  threshold: numberInRange(0, Number.MAX_SAFE_INTEGER).default(2),
  windowSize: positiveInt.default(100),
  closeTimeoutMs: positiveInt.default(4000),
}));
export type FailureThresholdConfig = z.output<typeof failureThresholdSchema>;
