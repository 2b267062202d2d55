/**
 * Trace propagation over HTTP headers. The router's `tracePropagator` (default `io.prx.default`)
 * reads the caller's trace context on ingress and writes the outgoing request's on egress:
 *
 * ```yaml
 * tracePropagator:
 *   kind: io.prx.default   # prx-ctx-trace + prx-sample in, prx-ctx-trace + prx-reqid out
 * ```
 *
 * `prx-ctx-trace` carries Finagle's binary trace id in base64; `prx-sample` (a rate in [0, 1])
 * overrides the sampling decision of the request; `prx-reqid` tells the service the root trace id
 * (16 lower-case hex digits) for correlating logs.
 */
import { z } from 'zod';
import { kindShape, lookupKind, registerKind, type KindConfig, lazySchema } from '../../../config/index.js';
import { randomSpanId, sampleByRate, TraceId, type Tracer } from '../../../service/tracing.js';
import { readSampleHeader } from './context.js';
import { PRX_CTX_TRACE, PRX_REQID } from './names.js';
import type { HeaderMap } from './types.js';
import { firstHeaderValue } from './values.js';

/** How a router carries trace context in request headers (Linkerd's TracePropagator). */
export interface TracePropagator {
  readonly kind: string;
  /** Ingress: the caller's trace id, if it sent a valid one; the trace headers are removed. */
  traceId(headers: HeaderMap): TraceId | undefined;
  /** Ingress: the caller's sample rate for this request, if any; the header is removed. */
  sampleRate(headers: HeaderMap): number | undefined;
  /** Egress: writes `id` as the outgoing request's trace context. */
  setContext(headers: HeaderMap, id: TraceId): void;
}

/** `io.prx.default`: `prx-ctx-trace`, `prx-sample` and `prx-reqid`. */
export const defaultTracePropagator: TracePropagator = Object.freeze({
  kind: 'io.prx.default',
  traceId(headers: HeaderMap): TraceId | undefined {
    const value = firstHeaderValue(headers, PRX_CTX_TRACE);
    if (value === undefined) return undefined;
    delete headers[PRX_CTX_TRACE];
    return TraceId.fromHeader(value);
  },
  sampleRate: readSampleHeader,
  setContext(headers: HeaderMap, id: TraceId): void {
    headers[PRX_CTX_TRACE] = id.toHeader();
    headers[PRX_REQID] = id.traceIdLowHex;
  },
});

/** Config of `io.prx.default` (it has no parameters). */
export const defaultTracePropagatorSchema = lazySchema(() => z.strictObject({ ...kindShape('io.prx.default') }));

registerKind({
  family: 'tracePropagator',
  kind: 'io.prx.default',
  schema: defaultTracePropagatorSchema,
  create: (_cfg: z.output<typeof defaultTracePropagatorSchema>): TracePropagator => defaultTracePropagator,
});

/**
 * This process's sampling salt: mixed into every rate decision so that two processes sample
 * different subsets of trace ids, while all hops of one process decide alike.
 */
export const processSamplerSalt: bigint = randomSpanId();

/** Options of {@link serverSpan} and {@link clientSpan}. */
export interface SpanOptions {
  /** Asked for a decision when the span has none yet. */
  readonly tracer?: Tracer | undefined;
  /** Sample rate applied when the request sends no `prx-sample`. */
  readonly defaultSampleRate?: number | undefined;
  /** Sampling salt; {@link processSamplerSalt} by default. */
  readonly salt?: bigint | undefined;
}

/**
 * Ingress: the span of this hop's server side. A child of the caller's span when it sent one
 * (same trace, the caller's span as parent), else a new root. An undecided span asks the tracer;
 * a request sample rate (or the default rate) then decides: sampled iff
 * `|traceId ^ salt| mod 10000 < rate × 10000`.
 */
export function serverSpan(propagator: TracePropagator, headers: HeaderMap, opts?: SpanOptions): TraceId {
  const incoming = propagator.traceId(headers);
  const rate = propagator.sampleRate(headers) ?? opts?.defaultSampleRate;
  let id = incoming === undefined ? TraceId.root() : incoming.nextChild();
  if (id.sampled === undefined && opts?.tracer !== undefined) {
    const decision = opts.tracer.sampleTrace(id);
    if (decision !== undefined) id = id.withSampled(decision);
  }
  if (rate !== undefined) id = id.withSampled(sampleByRate(id.traceId, rate, opts?.salt ?? processSamplerSalt));
  return id;
}

/**
 * Egress: the span of one outgoing attempt, a child of the server span, written into the request
 * headers by the propagator.
 */
export function clientSpan(propagator: TracePropagator, headers: HeaderMap, server: TraceId, opts?: SpanOptions): TraceId {
  let id = server.nextChild();
  if (id.sampled === undefined && opts?.tracer !== undefined) {
    const decision = opts.tracer.sampleTrace(id);
    if (decision !== undefined) id = id.withSampled(decision);
  }
  propagator.setContext(headers, id);
  return id;
}

/** The router's `tracePropagator` kind, built from its config. */
export function propagatorFromConfig(cfg: KindConfig): TracePropagator {
  const def = lookupKind('tracePropagator', cfg.kind);
  if (def === undefined) throw new Error(`trace propagator kind ${cfg.kind} is not registered`);
  return (def.create as (c: unknown, x: unknown) => TracePropagator)(cfg, undefined);
}
