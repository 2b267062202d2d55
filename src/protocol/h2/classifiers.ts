/**
 * HTTP/2 response classifiers (family `responseClassifier`, kinds `io.prx.h2.*`). Two sorts:
 *
 * - the HTTP status kinds `io.prx.h2.{nonRetryable5XX, retryableRead5XX, retryableIdempotent5XX,
 *   retryableAll5XX, allSuccessful}`, registered with their `io.prx.http.*` twins in
 *   protocol/http/classifiers.ts and adapted here: they judge the response head, so they do not
 *   wait for the end of the stream (`needsEnd` false);
 * - the gRPC kinds `io.prx.h2.grpc.*`, which read `grpc-status`: from the trailers, so they judge a
 *   response once its stream has ended (`needsEnd` true), or from the head of a trailers-only one.
 *
 * | gRPC kind              | retryable failures                                             |
 * |------------------------|----------------------------------------------------------------|
 * | grpc.default           | UNAVAILABLE (14)                                               |
 * | grpc.compliant         | UNAVAILABLE, a REFUSED_STREAM reset, HTTP 429 502 503 504      |
 * | grpc.alwaysRetryable   | every status not in `successStatusCodes`                       |
 * | grpc.neverRetryable    | none                                                           |
 * | grpc.retryableStatusCodes | the statuses in `retryableStatusCodes` (required)           |
 *
 * Every gRPC kind takes `successStatusCodes` (default `[0]`): the statuses that are successes.
 * Linkerd's rules, in order: a failed attempt (an exception, a reset) is a failure, retryable only
 * for `compliant` and a REFUSED_STREAM reset (the peer did not process the stream, RFC 9113 §8.7);
 * a known `grpc-status` decides; a `:status` other than 200 without one is a failure (gRPC needs
 * 200), retryable only for `compliant` and 429 502 503 504 (the statuses gRPC reads as
 * UNAVAILABLE); a stream that ended without `grpc-status` is a failure, as it is for the gRPC client.
 * A stream still open with nothing known yet is not a failure seen so far: `success`, never retried.
 *
 * ```yaml
 * service:
 *   responseClassifier:
 *     kind: io.prx.h2.grpc.retryableStatusCodes
 *     retryableStatusCodes: [4, 14]
 * ```
 */
import { z } from 'zod';
import { BugError } from '../../core/errors.js';
import { type KindConfig, intInRange, kindShape, kindSlot, lookupKind, registerKind, validate, lazySchema } from '../../config/index.js';
import type { ResponseClass } from '../../service/classifier.js';
import { ClassifierProtocolMismatchError, type ResponseClassifier, withRetryableRules } from '../http/classifiers.js';
import { H2Code, StreamResetError } from './errors.js';
import { GrpcStatus, MAX_GRPC_STATUS } from './grpc.js';

/** One request attempt's response, as h2 classifiers see it. */
export interface H2Result {
  readonly method: string;
  /** The response `:status`; absent when the attempt failed before a response (`error` is set). */
  readonly status?: number;
  /** From the trailers, or from the head of a trailers-only response; absent when not known. */
  readonly grpcStatus?: number | undefined;
  /** The response stream had ended when classified. */
  readonly ended: boolean;
  /** A failed attempt; an upstream reset is a {@link StreamResetError} with its `h2Code`. */
  readonly error?: Error;
  /** The response carried `prx-retryable: true`. */
  readonly retryableHeader?: boolean;
}

export interface H2Classifier {
  /** Whether the classifier needs the end of the stream (the trailers) to judge a response. */
  readonly needsEnd: boolean;
  classify(r: H2Result): ResponseClass;
}

/** An HTTP status classifier judging h2 response heads (an H2Result is a ClassifiedResult). */
class HeadClassifier implements H2Classifier {
  readonly needsEnd = false;
  readonly #inner: ResponseClassifier;
  constructor(inner: ResponseClassifier) {
    this.#inner = inner;
  }

  classify(r: H2Result): ResponseClass {
    return this.#inner.classify(r);
  }
}

/** What a gRPC kind retries besides its gRPC statuses (only `compliant` retries more). */
interface GrpcRules {
  /** gRPC statuses that are retryable failures; `all`: every one that is not a success. */
  readonly retryable: ReadonlySet<number> | 'all';
  /** REFUSED_STREAM resets and HTTP 429 502 503 504 are retryable. */
  readonly compliant: boolean;
  /** A failure whose response carried `prx-retryable: true` becomes retryable (not for neverRetryable). */
  readonly retryableHeader: boolean;
}

const COMPLIANT_HTTP_RETRYABLE: ReadonlySet<number> = new Set([429, 502, 503, 504]);

// How far to follow `cause` to the reset under a wrapper.
const MAX_CAUSE_DEPTH = 4;

/** True when `err` (or a cause) is the upstream refusing the stream: it was not processed. */
export function isRefusedStream(err: unknown): boolean {
  let e = err;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && typeof e === 'object' && e !== null; depth++) {
    if (e instanceof StreamResetError) return e.by === 'upstream' && e.h2Code === H2Code.REFUSED_STREAM;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

class GrpcClassifier implements H2Classifier {
  readonly needsEnd = true;
  readonly #success: ReadonlySet<number>;
  readonly #rules: GrpcRules;
  constructor(success: readonly number[], rules: GrpcRules) {
    this.#success = new Set(success);
    this.#rules = rules;
  }

  classify(r: H2Result): ResponseClass {
    const rc = this.#judge(r);
    return rc === 'failure' && r.error === undefined && r.retryableHeader === true && this.#rules.retryableHeader ? 'retryableFailure' : rc;
  }

  #judge(r: H2Result): ResponseClass {
    const rules = this.#rules;
    if (r.error !== undefined) return rules.compliant && isRefusedStream(r.error) ? 'retryableFailure' : 'failure';
    const g = r.grpcStatus;
    if (g !== undefined) {
      if (this.#success.has(g)) return 'success';
      return rules.retryable === 'all' || rules.retryable.has(g) ? 'retryableFailure' : 'failure';
    }
    const s = r.status;
    if (s !== undefined && s !== 200) return rules.compliant && COMPLIANT_HTTP_RETRYABLE.has(s) ? 'retryableFailure' : 'failure';
    return r.ended ? 'failure' : 'success';
  }
}

const grpcCode = lazySchema(() => intInRange(0, MAX_GRPC_STATUS));

/**
 * Keys of every gRPC kind. Codes are the canonical 0-16: gRPC defines no others (clients read any
 * other as UNKNOWN), and the range catches an HTTP status written by mistake (`[503]`), which would
 * otherwise never match. An empty success list would make every call a failure: refused.
 */
function grpcShape<K extends string>(kind: K) {
  return { ...kindShape(kind), successStatusCodes: z.array(grpcCode).min(1).default([GrpcStatus.OK]) };
}

const UNAVAILABLE_ONLY: ReadonlySet<number> = new Set([GrpcStatus.UNAVAILABLE]);
const NONE: ReadonlySet<number> = new Set();

const GRPC_KINDS: Readonly<Record<string, GrpcRules>> = {
  default: { retryable: UNAVAILABLE_ONLY, compliant: false, retryableHeader: true },
  compliant: { retryable: UNAVAILABLE_ONLY, compliant: true, retryableHeader: true },
  alwaysRetryable: { retryable: 'all', compliant: false, retryableHeader: true },
  neverRetryable: { retryable: NONE, compliant: false, retryableHeader: false },
};

/** The gRPC kinds this module registers. */
export const GRPC_CLASSIFIER_KINDS: readonly string[] = [...Object.keys(GRPC_KINDS), 'retryableStatusCodes'].map((s) => `io.prx.h2.grpc.${s}`);

for (const [suffix, rules] of Object.entries(GRPC_KINDS)) {
  const kind = `io.prx.h2.grpc.${suffix}`;
  registerKind({
    family: 'responseClassifier',
    kind,
    schema: lazySchema(() => z.strictObject(grpcShape(kind))),
    create: (cfg): H2Classifier => new GrpcClassifier(cfg.successStatusCodes, rules),
  });
}

{
  const kind = 'io.prx.h2.grpc.retryableStatusCodes';
  registerKind({
    family: 'responseClassifier',
    kind,
    schema: lazySchema(() => z.strictObject({ ...grpcShape(kind), retryableStatusCodes: z.array(grpcCode) })),
    create: (cfg): H2Classifier =>
      new GrpcClassifier(cfg.successStatusCodes, { retryable: new Set(cfg.retryableStatusCodes), compliant: false, retryableHeader: true }),
  });
}

const classifierSlot = lazySchema(() => kindSlot('responseClassifier'));
// Classifiers are stateless: each config object (shared by every name its policy covers) is built once.
const built = new WeakMap<object, H2Classifier>();
let defaultClassifier: H2Classifier | undefined;

function isH2Classifier(c: unknown): c is H2Classifier {
  return typeof (c as { needsEnd?: unknown }).needsEnd === 'boolean';
}

/**
 * The h2 classifier of a service's `responseClassifier` config (default `io.prx.h2.nonRetryable5XX`).
 * The config is validated by its kind's schema (a `ConfigError` otherwise); an `io.prx.http.*` kind
 * throws {@link ClassifierProtocolMismatchError}. HTTP status kinds get Linkerd's `prx-retryable`
 * rule (withRetryableRules). Results are cached per config object.
 */
export function h2ClassifierFromConfig(cfg: KindConfig | undefined): H2Classifier {
  if (cfg === undefined) return (defaultClassifier ??= build({ kind: 'io.prx.h2.nonRetryable5XX' }));
  let classifier = built.get(cfg);
  if (classifier === undefined) {
    classifier = build(cfg);
    built.set(cfg, classifier);
  }
  return classifier;
}

function build(cfg: KindConfig): H2Classifier {
  const valid = validate(classifierSlot, cfg);
  if (valid.kind.startsWith('io.prx.http.')) throw new ClassifierProtocolMismatchError(valid.kind, 'h2');
  const def = lookupKind('responseClassifier', valid.kind);
  if (def === undefined) throw new BugError(`validated classifier kind ${valid.kind} is not registered`);
  // Classifier kinds need no context.
  const made = def.create(valid, undefined as never);
  return isH2Classifier(made) ? made : new HeadClassifier(withRetryableRules(made as ResponseClassifier));
}
