/**
 * HTTP and HTTP/2 response classifiers (family `responseClassifier`), each kind with the prefix
 * `io.prx.http.` and `io.prx.h2.` and the same status semantics:
 *
 * | suffix                 | failures                  | retryable failures (method set)         |
 * |------------------------|---------------------------|-----------------------------------------|
 * | nonRetryable5XX        | 5XX responses, exceptions | none                                    |
 * | retryableRead5XX       | 5XX responses, exceptions | GET HEAD OPTIONS TRACE                  |
 * | retryableIdempotent5XX | 5XX responses, exceptions | the read methods, PUT, DELETE           |
 * | retryableAll5XX        | 5XX responses, exceptions | the idempotent methods, POST, PATCH     |
 * | allSuccessful          | exceptions                | none                                    |
 *
 * A failure is retryable when its method is in the kind's set and it is a 5XX response or a
 * retryable exception (timeout, write, connection closed, framing: `isRetryableError`).
 *
 * ```yaml
 * service:
 *   responseClassifier:
 *     kind: io.prx.http.retryableRead5XX
 * ```
 */
import { z } from 'zod';
import { BugError, PrxError } from '../../core/errors.js';
import { type KindConfig, addIssue, kindShape, kindSlot, kindsOf, lookupKind, registerKind, validate, lazySchema } from '../../config/index.js';
import { isRetryableFailure, type ResponseClass } from '../../service/classifier.js';

/** One finished request attempt, as classifiers see it. */
export interface ClassifiedResult {
  readonly method: string;
  /** The response status; absent when the attempt failed before a response (then `error` is set). */
  readonly status?: number;
  /** Set when the attempt failed; it then classifies as an exception whatever `status` says. */
  readonly error?: Error;
  /** response header prx-retryable: true */
  readonly retryableHeader?: boolean;
  /** request body was chunked (streamed) */
  readonly chunked?: boolean;
}

export interface ResponseClassifier {
  classify(r: ClassifiedResult): ResponseClass;
}

/**
 * Linkerd's wrappers around every configured HTTP classifier, applied in this order:
 * 1. a `failure` whose *response* carried `prx-retryable: true` becomes `retryableFailure` (the
 *    next proxy knows the request never reached the service, so retrying is safe);
 * 2. a chunked (streamed) request is never `retryableFailure` (it becomes `failure`): its body is
 *    gone once sent and cannot be replayed.
 */
export function withRetryableRules(c: ResponseClassifier): ResponseClassifier {
  return new RetryableRules(c);
}

class RetryableRules implements ResponseClassifier {
  readonly #inner: ResponseClassifier;
  constructor(inner: ResponseClassifier) {
    this.#inner = inner;
  }

  classify(r: ClassifiedResult): ResponseClass {
    let rc = this.#inner.classify(r);
    if (rc === 'failure' && r.error === undefined && r.retryableHeader === true) rc = 'retryableFailure';
    if (rc === 'retryableFailure' && r.chunked === true) rc = 'failure';
    return rc;
  }
}


/**
 * HTTP's transport codes of failures Linkerd's retryable classifiers may retry, beside the router
 * core's flagged failures and Node's socket codes (`isRetryableFailure`): undici's and the lean h1
 * client's timeouts, closed connections and framing errors (llhttp's `HPE_…` by prefix), and the
 * proxy's own retryable answers. Deliberately absent: aborts (`UND_ERR_ABORTED`: the caller gave
 * up), `UND_ERR_DESTROYED` (the client is shutting down), and size limits, which a retry would hit again.
 */
export const HTTP_RETRYABLE_ERROR_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'PRX_ERR_UPSTREAM_CONNECT_TIMEOUT',
  'PRX_ERR_UPSTREAM_IDLE_TIMEOUT',
  // Never written (Finagle WriteException and failures flagged Retryable).
  'PRX_ERR_WRITE_FAILED',
  'PRX_ERR_MAX_CONCURRENT_REQUESTS',
  // Connection closed under the request (Finagle ChannelClosedException).
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'PRX_ERR_UPSTREAM_CLOSED',
  'PRX_ERR_UPSTREAM_RESET',
  // Malformed responses (Linkerd's FramingException).
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'PRX_ERR_CONFLICTING_CONTENT_LENGTH',
  'PRX_ERR_UPSTREAM_PROTOCOL',
  'PRX_ERR_UPSTREAM_CONTENT_LENGTH',
]);

/**
 * undici's HTTPParserError (a malformed response) usually has no code, because undici looks
 * llhttp's error number up in a name-to-number table: it is recognised by its `name`.
 */
function isHttpRetryable(e: object): boolean {
  const { code, name } = e as { code?: unknown; name?: unknown };
  return (typeof code === 'string' && (HTTP_RETRYABLE_ERROR_CODES.has(code) || code.startsWith('HPE_'))) || name === 'HTTPParserError';
}

/** True when `err` (or a cause) is a timeout, write, connection-closed or framing failure a retry may follow. */
export function isRetryableError(err: unknown): boolean {
  return isRetryableFailure(err, isHttpRetryable);
}

/** The protocols with HTTP status classifiers. */
export type ClassifierProtocol = 'http' | 'h2';

const READ_METHODS = ['GET', 'HEAD', 'OPTIONS', 'TRACE'] as const;
const IDEMPOTENT_METHODS = [...READ_METHODS, 'PUT', 'DELETE'] as const;
const ALL_METHODS = [...IDEMPOTENT_METHODS, 'POST', 'PATCH'] as const;

function isServerError(status: number | undefined): boolean {
  return status !== undefined && status >= 500 && status <= 599;
}

/** 5XX responses and every exception are failures, none retryable (Finagle's ServerErrorsAsFailures). */
class NonRetryable5XX implements ResponseClassifier {
  classify(r: ClassifiedResult): ResponseClass {
    return r.error !== undefined || isServerError(r.status) ? 'failure' : 'success';
  }
}

/** Like {@link NonRetryable5XX}, but failures of requests with a method in `methods` are retryable. */
class Retryable5XX implements ResponseClassifier {
  readonly #methods: ReadonlySet<string>;
  constructor(methods: readonly string[]) {
    this.#methods = new Set(methods);
  }

  classify(r: ClassifiedResult): ResponseClass {
    if (r.error !== undefined) {
      return this.#methods.has(r.method) && isRetryableError(r.error) ? 'retryableFailure' : 'failure';
    }
    if (!isServerError(r.status)) return 'success';
    return this.#methods.has(r.method) ? 'retryableFailure' : 'failure';
  }
}

/** Every response succeeds whatever its status; exceptions are (non-retryable) failures. */
class AllSuccessful implements ResponseClassifier {
  classify(r: ClassifiedResult): ResponseClass {
    return r.error === undefined ? 'success' : 'failure';
  }
}

// Classifiers are stateless, so each kind shares one instance.
const CLASSIFIERS: Readonly<Record<string, ResponseClassifier>> = {
  nonRetryable5XX: new NonRetryable5XX(),
  retryableRead5XX: new Retryable5XX(READ_METHODS),
  retryableIdempotent5XX: new Retryable5XX(IDEMPOTENT_METHODS),
  retryableAll5XX: new Retryable5XX(ALL_METHODS),
  allSuccessful: new AllSuccessful(),
};

/** The kinds this module registers, per protocol. */
export const HTTP_CLASSIFIER_KINDS: readonly string[] = Object.keys(CLASSIFIERS).flatMap((s) => [`io.prx.http.${s}`, `io.prx.h2.${s}`]);

for (const [suffix, classifier] of Object.entries(CLASSIFIERS)) {
  for (const protocol of ['http', 'h2'] as const) {
    const kind = `io.prx.${protocol}.${suffix}`;
    // None of these kinds has parameters.
    const schema = lazySchema(() => z.strictObject({ ...kindShape(kind) }));
    registerKind({ family: 'responseClassifier', kind, schema, create: (): ResponseClassifier => classifier });
  }
}

/** A configured classifier kind made for the other protocol (`io.prx.h2.…` on an http router). */
export class ClassifierProtocolMismatchError extends PrxError {
  constructor(kind: string, protocol: ClassifierProtocol) {
    super('PRX_ERR_CLASSIFIER_PROTOCOL', `response classifier ${JSON.stringify(kind)} cannot classify ${protocol} responses (use io.prx.${protocol}.* kinds)`);
  }
}

const classifierSlot = lazySchema(() => kindSlot('responseClassifier'));
const OTHER: Readonly<Record<ClassifierProtocol, ClassifierProtocol>> = { http: 'h2', h2: 'http' };
const OTHER_PREFIX: Readonly<Record<ClassifierProtocol, string>> = { http: 'io.prx.h2.', h2: 'io.prx.http.' };

/**
 * A refinement of a validated `responseClassifier` object refusing the other protocol's kinds
 * (`io.prx.h2.*`, gRPC ones included, on an http router; `io.prx.http.*` on an h2 one) at its `kind`
 * key, listing the kinds that fit. Without it such a config passes and fails every request.
 */
export function classifierFamilyCheck(protocol: ClassifierProtocol): (cfg: KindConfig, ctx: z.core.$RefinementCtx<KindConfig>) => void {
  const other = OTHER[protocol];
  const otherPrefix = OTHER_PREFIX[protocol];
  return (cfg, ctx) => {
    if (!cfg.kind.startsWith(otherPrefix)) return;
    const own = kindsOf('responseClassifier').filter((k) => k.startsWith(`io.prx.${protocol}.`));
    addIssue(ctx, ['kind'], `an ${other} response classifier cannot classify ${protocol} responses (${protocol} kinds: ${own.join(', ')})`, {
      value: cfg.kind,
    });
  };
}

/**
 * A router's `responseClassifier` slot for `protocol`: any registered kind but the other protocol's
 * ({@link classifierFamilyCheck}). A router schema overrides the common slot with it:
 * `servicePolicy({ responseClassifier: responseClassifierSlot('h2').optional(), ... })`.
 */
export function responseClassifierSlot(protocol: ClassifierProtocol): z.ZodType<KindConfig> {
  return kindSlot('responseClassifier').superRefine(classifierFamilyCheck(protocol));
}

// Built classifiers per config object: services resolved for many names share their policy's
// config object, and classifiers are stateless, so each config is validated and built once.
const built: Readonly<Record<ClassifierProtocol, WeakMap<object, ResponseClassifier>>> = { http: new WeakMap(), h2: new WeakMap() };
const defaults: Partial<Record<ClassifierProtocol, ResponseClassifier>> = {};

/**
 * The classifier of a service's `responseClassifier` config (default `io.prx.<protocol>.nonRetryable5XX`),
 * wrapped with {@link withRetryableRules}. The config is validated by its kind's schema (defaults
 * filled, unknown kinds listing the known ones: a `ConfigError`); a kind of the other protocol's
 * family throws {@link ClassifierProtocolMismatchError}. Results are cached per config object.
 */
export function classifierFromConfig(cfg: KindConfig | undefined, protocol: ClassifierProtocol): ResponseClassifier {
  if (cfg === undefined) return (defaults[protocol] ??= build({ kind: `io.prx.${protocol}.nonRetryable5XX` }, protocol));
  let classifier = built[protocol].get(cfg);
  if (classifier === undefined) {
    classifier = build(cfg, protocol);
    built[protocol].set(cfg, classifier);
  }
  return classifier;
}

function build(cfg: KindConfig, protocol: ClassifierProtocol): ResponseClassifier {
  const valid = validate(classifierSlot, cfg);
  if (valid.kind.startsWith(OTHER_PREFIX[protocol])) throw new ClassifierProtocolMismatchError(valid.kind, protocol);
  const def = lookupKind('responseClassifier', valid.kind);
  if (def === undefined) throw new BugError(`validated classifier kind ${valid.kind} is not registered`);
  // Classifier kinds need no context.
  return withRetryableRules(def.create(valid, undefined as never) as ResponseClassifier);
}
