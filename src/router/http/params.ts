import { readFileSync } from 'node:fs';
import { PrxError } from '../../core/errors.js';
import type { KindConfig } from '../../config/index.js';
import { clientParamDefaults, serviceParamDefaults, type BackoffConfig, type ClientPolicyConfig, type ServicePolicyConfig } from '../../config/index.js';
import { readPath } from '../../naming/index.js';
import { balancerFromConfig } from '../../service/balancer/index.js';
import { accrualFromConfig } from '../../service/policy/accrual-kinds.js';
import { backoffFromConfig } from '../../service/policy/index.js';
import { PolicyResolver } from '../../service/policy/params.js';
import { classifierFromConfig } from '../../protocol/http/classifiers.js';
import type { ResponseClassifier } from '../../service/classifier.js';
import type { ServiceParams } from '../core/path-service.js';
import type { ResolvedClient as CoreResolvedClient, RouterParams } from '../core/routing.js';
import type { EndpointOptions, EndpointTls } from '../../protocol/http/client-transport.js';
import { PathMatcher } from '../../naming/path-matcher.js';
import type { ResponseBodyLimits } from '../../protocol/http/upstream.js';

const INT32_MAX = 2147483647;
/** Keep-alive when the config says "forever": undici still honours the server's own timeout hint. */
const FOREVER_KEEPALIVE_MS = 600_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** `responseIdleTimeoutMs` when not configured: Envoy's stream idle time; long polls fit under it. */
export const RESPONSE_IDLE_TIMEOUT_MS = 300_000;

/** Client parameters a router reads per client id besides what the connection pool needs. */
export interface ResolvedClient extends CoreResolvedClient<EndpointOptions> {
  readonly forwardClientCert: boolean;
}

interface RawClientParams {
  hostConnectionPool: { minSize: number; maxSize: number; idleTimeMs?: number; maxWaiters: number };
  tls?: KindConfig | { commonName?: string; caCertPath?: string; disableValidation: boolean };
  loadBalancer: KindConfig;
  failFast: boolean;
  requeueBudget: { minRetriesPerSec: number; percentCanRetry: number; ttlSecs: number };
  failureAccrual: KindConfig;
  requestAttemptTimeoutMs?: number;
  clientSession: { idleTimeMs?: number; lifeTimeMs?: number };
  forwardClientCert: boolean;
  responseIdleTimeoutMs?: number;
}

interface RawServiceParams {
  retries: { budget: { minRetriesPerSec: number; percentCanRetry: number; ttlSecs: number }; backoff?: BackoffConfig };
  totalTimeoutMs?: number;
  responseClassifier?: KindConfig;
}

/** Limits of the http router that shape every client. */
export interface ClientLimits {
  readonly maxHeaderBytes: number;
  /** `maxResponseKB`, `streamingEnabled` and `maxChunkKB` as every exchange applies them. */
  readonly responseBody: ResponseBodyLimits;
}

/**
 * Resolves the router's `client` and `service` policies per name (static configs matched by
 * prefix, later ones winning) into ready-to-use parameters. Results are cached per name: the
 * caches above bound how many names there are.
 */
export class HttpParams implements RouterParams<EndpointOptions, ResponseClassifier, ResolvedClient> {
  readonly #clients: PolicyResolver<RawClientParams>;
  readonly #services: PolicyResolver<RawServiceParams>;
  readonly #limits: ClientLimits;

  constructor(client: ClientPolicyConfig, service: ServicePolicyConfig, limits: ClientLimits) {
    this.#clients = new PolicyResolver(client, clientParamDefaults);
    this.#services = new PolicyResolver(service, serviceParamDefaults);
    this.#limits = limits;
  }

  client(id: string): ResolvedClient {
    const { params: p, vars } = this.#clients.resolve(readPath(id));
    const pool = p.hostConnectionPool;
    const session = p.clientSession;
    // Two different limits (Finagle's pool idle time spares minSize connections; its session idle
    // time, below the pool, closes any connection): the h1 pool gets each; undici, with no minSize,
    // only ever applies the shorter one.
    const sessionIdle = session.idleTimeMs ?? null;
    const anyIdle = sessionIdle === null ? pool.idleTimeMs : Math.min(sessionIdle, pool.idleTimeMs ?? Infinity);
    return {
      client: {
        transport: {
          maxConnections: pool.maxSize >= INT32_MAX ? null : pool.maxSize,
          maxWaiters: pool.maxWaiters,
          minConnections: pool.minSize,
          keepAliveTimeoutMs: pool.idleTimeMs ?? FOREVER_KEEPALIVE_MS,
          keepAliveMaxTimeoutMs: anyIdle ?? FOREVER_KEEPALIVE_MS,
          sessionIdleTimeMs: sessionIdle,
          lifeTimeMs: session.lifeTimeMs ?? null,
          maxHeaderBytes: this.#limits.maxHeaderBytes,
          responseBody: this.#limits.responseBody,
          connectTimeoutMs: CONNECT_TIMEOUT_MS,
          responseIdleTimeoutMs: p.responseIdleTimeoutMs ?? RESPONSE_IDLE_TIMEOUT_MS,
          tls: clientTls(p.tls, vars, id),
        },
        accrual: accrualFromConfig(p.failureAccrual),
        balancer: balancerFromConfig(p.loadBalancer),
        failFast: p.failFast,
        requeueBudget: p.requeueBudget,
      },
      attemptTimeoutMs: p.requestAttemptTimeoutMs,
      forwardClientCert: p.forwardClientCert,
    };
  }

  service(dst: string): ServiceParams<ResponseClassifier> {
    const { params: p } = this.#services.resolve(readPath(dst));
    return {
      classifier: classifierFromConfig(p.responseClassifier, 'http'),
      budget: p.retries.budget,
      backoff: p.retries.backoff === undefined ? undefined : backoffFromConfig(p.retries.backoff),
      totalTimeoutMs: p.totalTimeoutMs,
    };
  }
}

/** Client TLS for one client: plain (commonName, CA, or no validation) or a `clientTls` kind. */
function clientTls(cfg: RawClientParams['tls'], vars: Readonly<Record<string, string>>, id: string): EndpointTls | undefined {
  if (cfg === undefined) return undefined;
  if ('kind' in cfg) {
    const k = cfg as KindConfig & { commonName?: string; caCertPath?: string };
    if (k.kind === 'io.prx.noValidation') return { servername: undefined, ca: undefined, rejectUnauthorized: false };
    if (k.kind === 'io.prx.boundPath') return boundPathTls(cfg as KindConfig & BoundPathTlsConfig, id);
    return { servername: k.commonName, ca: readCa(k.caCertPath), rejectUnauthorized: true };
  }
  const plain = cfg;
  return {
    servername: plain.commonName === undefined ? undefined : PathMatcher.substitute(plain.commonName, vars),
    ca: readCa(plain.caCertPath),
    rejectUnauthorized: !plain.disableValidation,
  };
}

interface BoundPathTlsConfig {
  readonly caCertPath?: string;
  readonly names: readonly { readonly prefix: string; readonly commonNamePattern: string }[];
  readonly strict: boolean;
}

/**
 * `io.prx.boundPath`: the first `names` prefix matching the bound id gives the expected server
 * name. With none matching, Linkerd's `strict` (the default) refuses to build the client rather
 * than guess a name; `strict: false` talks plaintext to that id.
 */
function boundPathTls(cfg: BoundPathTlsConfig, id: string): EndpointTls | undefined {
  const path = readPath(id);
  for (const n of cfg.names) {
    const m = PathMatcher.parse(n.prefix).match(path);
    if (m !== undefined) {
      return { servername: PathMatcher.substitute(n.commonNamePattern, m), ca: readCa(cfg.caCertPath), rejectUnauthorized: true };
    }
  }
  if (cfg.strict) throw new UnmatchedBoundPathError(id);
  return undefined;
}

/** A strict `io.prx.boundPath` client TLS has no `names` prefix matching the client's bound id. */
export class UnmatchedBoundPathError extends PrxError {
  readonly id: string;
  constructor(id: string) {
    super('PRX_ERR_CLIENT_TLS_NO_NAME', `io.prx.boundPath: no names prefix matches ${id} (strict)`);
    this.id = id;
  }
}

const caCache = new Map<string, Buffer>();

function readCa(path: string | undefined): Buffer | undefined {
  if (path === undefined) return undefined;
  let ca = caCache.get(path);
  if (ca === undefined) {
    ca = readFileSync(path);
    caCache.set(path, ca);
  }
  return ca;
}
