import { z } from 'zod';
import { addIssue } from './issues.js';
import {
  choice,
  durationMs,
  fraction,
  intInRange,
  kindShape,
  kindSlot,
  pathPattern,
} from './schema.js';
import { clientTls } from './tls.js';
import { lazySchema } from './lazy-schema.js';

// Client and service policies. A policy is `io.prx.global` (parameters inline, for every client or
// service) or `io.prx.static` (a list of `{prefix, …parameters}` configs; every matching config
// applies, later ones winning per parameter). Because configs layer, a parameter left out means
// "inherit": the schemas fill no top-level parameter defaults. The built-in bottom layer is
// `clientParamDefaults` / `serviceParamDefaults`. Nested objects, once given, do get defaults.

const INT32_MAX = 2147483647;

/** A backoff: `{kind: constant, ms}` or `{kind: jittered, minMs, maxMs}` (equal jitter). */
export const backoff = lazySchema(() => choice('kind', {
  constant: z.strictObject({ kind: z.literal('constant'), ms: durationMs }),
  jittered: z
    .strictObject({ kind: z.literal('jittered'), minMs: durationMs, maxMs: durationMs })
    .superRefine((b, ctx) => {
      if (b.minMs > b.maxMs) addIssue(ctx, ['minMs'], `must not exceed maxMs (${b.maxMs})`, { value: b.minMs });
    }),
}));

/** A validated backoff. */
export type BackoffConfig = z.output<typeof backoff>;

/** A retry budget (application retries and connection requeues); Finagle's defaults. */
export const retryBudget = lazySchema(() => z.strictObject({
  minRetriesPerSec: intInRange(0, INT32_MAX).default(10),
  percentCanRetry: fraction.default(0.2),
  ttlSecs: intInRange(1, 60).default(10),
}));

/** Connection pool per host (watermark pool). */
export const hostConnectionPool = lazySchema(() => z
  .strictObject({
    minSize: intInRange(0, INT32_MAX).default(0),
    maxSize: intInRange(1, INT32_MAX).default(INT32_MAX),
    idleTimeMs: durationMs.optional(),
    maxWaiters: intInRange(0, INT32_MAX).default(INT32_MAX),
  })
  .superRefine((p, ctx) => {
    if (p.minSize > p.maxSize) addIssue(ctx, ['minSize'], `must not exceed maxSize (${p.maxSize})`, { value: p.minSize });
  }));

/** Connection session limits; absent means forever. */
export const clientSession = lazySchema(() => z.strictObject({
  idleTimeMs: durationMs.optional(),
  lifeTimeMs: durationMs.optional(),
}));

const DEFAULT_ACCRUAL_BACKOFF = { kind: 'jittered', minMs: 5000, maxMs: 300000 } as const;

/**
 * Keys of every `failureAccrual` kind: a plugin spreads them,
 * `z.strictObject({...failureAccrualShape('io.prx.consecutiveFailures'), failures: positiveInt})`.
 * `backoff` defaults to jittered 5 s – 300 s.
 */
export function failureAccrualShape<K extends string>(kind: K) {
  return { ...kindShape(kind), backoff: backoff.prefault(DEFAULT_ACCRUAL_BACKOFF) };
}

/** Client parameters common to every protocol; protocols add theirs (see {@link clientPolicy}). */
export function clientParamsShape() {
  return {
    hostConnectionPool: hostConnectionPool.optional(),
    tls: clientTls.optional(),
    loadBalancer: kindSlot('loadBalancer').optional(),
    failFast: z.boolean().optional(),
    requeueBudget: retryBudget.optional(),
    failureAccrual: kindSlot('failureAccrual').optional(),
    requestAttemptTimeoutMs: durationMs.optional(),
    clientSession: clientSession.optional(),
    forwardClientCert: z.boolean().optional(),
  };
}

/** Application-level retries: a budget and an optional backoff between attempts. */
export const retries = lazySchema(() => z.strictObject({
  budget: retryBudget.prefault({}),
  backoff: backoff.optional(),
}));

/** Service parameters common to every protocol; protocols add theirs (see {@link servicePolicy}). */
export function serviceParamsShape() {
  return {
    retries: retries.optional(),
    totalTimeoutMs: durationMs.optional(),
    responseClassifier: kindSlot('responseClassifier').optional(),
  };
}

/**
 * The parameters a client gets when no config sets them (the bottom layer under every policy).
 * Kind objects here are raw config, validated by their kind's schema where they are used.
 */
export const clientParamDefaults = Object.freeze({
  hostConnectionPool: Object.freeze({ minSize: 0, maxSize: INT32_MAX, maxWaiters: INT32_MAX }),
  loadBalancer: Object.freeze({ kind: 'p2c' }),
  failFast: false,
  requeueBudget: Object.freeze({ minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 }),
  failureAccrual: Object.freeze({ kind: 'io.prx.consecutiveFailures', failures: 5, backoff: DEFAULT_ACCRUAL_BACKOFF }),
  clientSession: Object.freeze({}),
  forwardClientCert: false,
});

/**
 * The parameters a service gets when no config sets them. The response classifier's default is
 * protocol dependent (`io.prx.http.nonRetryable5XX`, `io.prx.h2.nonRetryable5XX`), so the protocol
 * supplies it.
 */
export const serviceParamDefaults = Object.freeze({
  retries: Object.freeze({ budget: Object.freeze({ minRetriesPerSec: 10, percentCanRetry: 0.2, ttlSecs: 10 }) }),
});

/**
 * A policy over `params`: `io.prx.global` (the default; parameters inline) or `io.prx.static`
 * (`configs`, each a `prefix` pattern plus parameters).
 */
export function policy<P extends z.core.$ZodLooseShape>(params: P) {
  return choice(
    'kind',
    {
      'io.prx.global': z.strictObject({ kind: z.literal('io.prx.global'), ...params }),
      'io.prx.static': z.strictObject({
        kind: z.literal('io.prx.static'),
        configs: z.array(z.strictObject({ prefix: pathPattern, ...params })),
      }),
    },
    { default: 'io.prx.global' },
  );
}

/** A router's `client` policy: the common client parameters plus a protocol's `extra` ones. */
export function clientPolicy<P extends z.core.$ZodLooseShape = Record<never, never>>(extra?: P) {
  return policy({ ...clientParamsShape(), ...(extra as P) });
}

/** A router's `service` policy: the common service parameters plus a protocol's `extra` ones. */
export function servicePolicy<P extends z.core.$ZodLooseShape = Record<never, never>>(extra?: P) {
  return policy({ ...serviceParamsShape(), ...(extra as P) });
}

/** A validated client policy with the common parameters. */
export type ClientPolicyConfig = z.output<ReturnType<typeof clientPolicy>>;

/** A validated service policy with the common parameters. */
export type ServicePolicyConfig = z.output<ReturnType<typeof servicePolicy>>;
