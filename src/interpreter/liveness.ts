import { z } from 'zod';
import { numberInRange, positiveInt } from '../config/index.js';

/**
 * `failureThreshold`: the liveness check of a proxy's link to the resolver (`io.prx.mesh`,
 * `io.prx.resolver.http`). The link proves itself every `minPeriodMs` — an answered HTTP/2 PING on
 * the mesh link, a heartbeat or update on an HTTP watch stream — and one that stays silent
 * `closeTimeoutMs` past that is torn down and rebuilt. (`threshold` and `windowSize` are accepted
 * for Linkerd compatibility and select nothing: the links judge by `closeTimeoutMs` alone.)
 */
export const failureThresholdSchema = z.strictObject({
  minPeriodMs: positiveInt.default(5000),
  threshold: numberInRange(0, Number.MAX_SAFE_INTEGER).default(2),
  windowSize: positiveInt.default(100),
  closeTimeoutMs: positiveInt.default(4000),
});
export type FailureThresholdConfig = z.output<typeof failureThresholdSchema>;
