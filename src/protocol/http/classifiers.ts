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
import { type KindConfig, kindShape, kindSlot, lookupKind, registerKind, validate } from '../../config/index.js';
import {
  type ClassifiedResult,
  type ResponseClass,
  type ResponseClassifier,
  isRetryableError,
  withRetryableRules,
} from '../../service/classifier.js';

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
    const schema = z.strictObject({ ...kindShape(kind) });
    registerKind({ family: 'responseClassifier', kind, schema, create: (): ResponseClassifier => classifier });
  }
}

/** A configured classifier kind made for the other protocol (`io.prx.h2.…` on an http router). */
export class ClassifierProtocolMismatchError extends PrxError {
  constructor(kind: string, protocol: ClassifierProtocol) {
    super('PRX_ERR_CLASSIFIER_PROTOCOL', `response classifier ${JSON.stringify(kind)} cannot classify ${protocol} responses (use io.prx.${protocol}.* kinds)`);
  }
}

const classifierSlot = kindSlot('responseClassifier');
const OTHER_PREFIX: Readonly<Record<ClassifierProtocol, string>> = { http: 'io.prx.h2.', h2: 'io.prx.http.' };

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
