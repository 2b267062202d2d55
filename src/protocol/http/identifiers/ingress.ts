/**
 * `io.prx.ingress`: the proxy as an orchestrator (Kubernetes) ingress controller. It watches the
 * Ingress resources (networking.k8s.io/v1) of its class and names each request by the rule that
 * matches its host and path: `/<dstPrefix>/<namespace>/<port>/<service>` (the backend's port name,
 * or its number), which a dtab sends to the `io.prx.orch` namer.
 *
 * ```yaml
 * identifier:
 *   kind: io.prx.ingress
 *   namespace: web                 # default: every namespace
 *   ingressClassAnnotation: prx    # the class served (annotation or spec.ingressClassName)
 *   ignoreDefaultBackends: false
 *   host: 127.0.0.1                # the API (kubectl proxy); absent: in-cluster, else localhost
 *   port: 8001
 * dtab: /svc => /#/io.prx.orch;
 * ```
 *
 * Rules and their precedence are in `IngressTable`. The list is watched, so rule changes apply to
 * the next request. Until the first list arrives, and when no rule matches, the request is
 * unidentified (`no ingress rule matches`), answered like any unknown destination.
 */
import { z } from 'zod';
import { errorMessage } from '../../../core/errors.js';
import type { Logger } from '../../../core/log.js';
import { kindShape, nonEmptyString, port as portNumber, shortName, lazySchema } from '../../../config/index.js';
import type { Path } from '../../../naming/index.js';
import type { Backoff } from '../../../service/policy/index.js';
import {
  DEFAULT_ORCH_API_PORT, INGRESSES, Informer, type IngressObject, OrchApiClient, type OrchApiEnvironment, type OrchApiError, OrchInClusterError,
} from '../../orch/index.js';
import { IngressTable } from './ingress-rules.js';
import { type HttpIdentifier, type Identification, type IdentifyRequest, defineIdentifier, firstHeader, pathOf, unidentified } from './types.js';

/** prx's class: Linkerd 1's default was `linkerd`; prx's vendor segment is `prx`. */
export const DEFAULT_INGRESS_CLASS = 'prx';

export const ingressIdentifierSchema = lazySchema(() => z.strictObject({
  ...kindShape('io.prx.ingress'),
  namespace: shortName.optional(),
  ingressClassAnnotation: nonEmptyString.default(DEFAULT_INGRESS_CLASS),
  ignoreDefaultBackends: z.boolean().default(false),
  host: nonEmptyString.optional(),
  port: portNumber.default(DEFAULT_ORCH_API_PORT),
}));

export type IngressIdentifierConfig = z.output<typeof ingressIdentifierSchema>;

/** Tuning outside the config (tests use it). */
export interface IngressIdentifierOptions {
  readonly backoff?: Backoff | undefined;
  readonly environment?: OrchApiEnvironment;
  readonly log?: Logger | undefined;
  /** Headers naming the host, first present wins: `host` for HTTP/1.1; `:authority`, then `host` for h2. */
  readonly hostHeaders?: readonly string[];
}

const NO_RULE = unidentified('no ingress rule matches');

/** What the identifier shows of itself (tests, logs). */
export interface IngressIdentifierState {
  readonly api: string;
  readonly namespace: string | null;
  readonly ingressClass: string;
  readonly synced: boolean;
  readonly ingresses: readonly string[];
  readonly rules: ReturnType<IngressTable['rules']>;
  readonly defaultBackend: string | null;
  readonly lastError: string | null;
}

export class IngressIdentifier implements HttpIdentifier {
  readonly #client: OrchApiClient;
  readonly #informer: Informer<IngressObject>;
  readonly #cfg: IngressIdentifierConfig;
  readonly #hostHeaders: readonly string[];
  readonly #log: Logger | undefined;
  #table: IngressTable | undefined;
  #loggedError: string | undefined;

  constructor(cfg: IngressIdentifierConfig, dstPrefix: Path, opts: IngressIdentifierOptions = {}) {
    this.#cfg = cfg;
    this.#hostHeaders = opts.hostHeaders ?? ['host'];
    this.#log = opts.log;
    this.#client = apiClient(cfg, opts.environment);
    const tableOpts = { ingressClass: cfg.ingressClassAnnotation, ignoreDefaultBackends: cfg.ignoreDefaultBackends, dstPrefix };
    this.#informer = new Informer<IngressObject>(
      this.#client,
      INGRESSES,
      { namespace: cfg.namespace, backoff: opts.backoff },
      (objects) => {
        this.#table = new IngressTable(objects.values(), tableOpts);
        if (this.#loggedError !== undefined) this.#log?.info({ api: this.#client.origin }, 'ingress resources are loaded again');
        this.#loggedError = undefined;
      },
      (e) => this.#failed(e),
    );
  }

  identify(req: IdentifyRequest): Identification {
    const table = this.#table;
    if (table === undefined) return this.#notLoaded();
    let host: string | undefined;
    for (const h of this.#hostHeaders) {
      host = firstHeader(req.headers, h);
      if (host !== undefined) break;
    }
    const target = table.match(host, pathOf(req.url));
    return target === undefined ? NO_RULE : { kind: 'identified', dst: target.dst };
  }

  state(): IngressIdentifierState {
    const table = this.#table;
    const error = this.#informer.state.error;
    return {
      api: this.#client.origin,
      namespace: this.#cfg.namespace ?? null,
      ingressClass: this.#cfg.ingressClassAnnotation,
      synced: table !== undefined,
      ingresses: table?.served ?? [],
      rules: table?.rules() ?? [],
      defaultBackend: table?.defaultBackend?.dst.show ?? null,
      lastError: error === undefined ? null : error.message,
    };
  }

  close(): void {
    this.#informer.close();
    void this.#client.close();
  }

  #notLoaded(): Identification {
    const error = this.#informer.state.error;
    return unidentified(`ingress resources are not loaded yet from ${this.#client.origin}${error === undefined ? '' : `: ${errorMessage(error)}`}`);
  }

  /** Logged once per distinct failure: the informer retries with backoff and keeps the last rules. */
  #failed(e: OrchApiError): void {
    if (e.message === this.#loggedError) return;
    this.#loggedError = e.message;
    this.#log?.warn({ api: this.#client.origin }, `ingress resources: ${e.message}${this.#table === undefined ? '' : '; keeping the last rules'}`);
  }
}

/** The client, made at start-up so that a half-configured pod stops prx there, naming this kind. */
function apiClient(cfg: IngressIdentifierConfig, environment: OrchApiEnvironment | undefined): OrchApiClient {
  try {
    return OrchApiClient.create({ host: cfg.host, port: cfg.port }, environment);
  } catch (e) {
    if (e instanceof OrchInClusterError) throw new OrchInClusterError(`io.prx.ingress: ${e.message}`);
    throw e;
  }
}

defineIdentifier({
  kind: 'io.prx.ingress',
  schema: ingressIdentifierSchema,
  create: (cfg, ctx) => new IngressIdentifier(cfg, ctx.dstPrefix, { log: ctx.log }),
});
